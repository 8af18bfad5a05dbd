"""The playground's web server: starlette under uvicorn in the host's task group, on loopback
only, every request checked for the per-launch token (403 without).

The page is an MCP client of the host like any other: it POSTs its JSON-RPC messages to
/rpc, which feeds them to its own session (a Router made by Host.connect, so tool-list
control, logs and client requests stay that session's), and reads everything back from
/events, a server-sent event stream of the journal: its session's messages, the observed
sessions' messages (read-only), tool-list reloads with their diff, load errors and crashes.
One page session lives as long as the host, so a reloaded page picks up where it was.

The page is also an MCP Apps host: a tool's app runs in a frame of the sandbox proxy, which
is served on a second loopback port (another origin: see sandbox.py)."""

from __future__ import annotations

import contextlib
import errno
import hmac
import secrets
from collections.abc import AsyncIterator, Iterator
from importlib import resources
from typing import Any

import anyio
import anyio.abc
import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from protomcp_host.app import Host
from protomcp_host.calls.router import Router
from protomcp_host.playground.journal import Journal, message
from protomcp_host.playground.sandbox import Sandbox
from protomcp_host.transports.http.server import bind

LOOPBACK = "127.0.0.1"
MAX_MESSAGE = 4 * 1024 * 1024  # bytes in one message from the page
KEEPALIVE = 15.0  # seconds between SSE comments on a quiet stream
STATIC = {"app.js": "text/javascript", "app.css": "text/css"}


class Playground:
    """The page's session, the journal, and the token."""

    def __init__(self, host: Host, token: str | None = None) -> None:
        self.host = host
        self.token = token or secrets.token_urlsafe(24)
        self.journal = Journal()
        self.port = 0
        self.sandbox = Sandbox()
        self.router: Router = host.connect(self._page_out, observed=False)
        host.watchers.append(self._host_event)
        host.connections.add_wire_tap(self._client_message)

    # -- what goes into the journal --------------------------------------------------------
    def _page_out(self, data: bytes, related: bytes | None) -> None:
        self.journal.add("page", dir="out", msg=message(data, 16 << 20), related=_fragment(related))

    def _client_message(self, session: int, direction: str, data: bytes, related: bytes | None) -> None:
        self.journal.add(
            "client", session=session, dir=direction, msg=message(data), related=_fragment(related)
        )

    def _host_event(self, kind: str, data: dict[str, Any]) -> None:
        self.journal.add(kind, **data)

    def page_in(self, body: bytes) -> None:
        """One message (or batch) from the page, fed to its session."""
        self.journal.add("page", dir="in", msg=orjson.Fragment(body))
        self.router.feed(body)

    # -- the web app -----------------------------------------------------------------------
    def app(self) -> ASGIApp:
        """The page's app on the playground port, the sandbox proxy's on the sandbox port."""
        return ByPort({self.port: self._page_app(), self.sandbox.port: self.sandbox.app()})

    def _page_app(self) -> ASGIApp:
        routes = [
            Route("/", self._index),
            Route("/static/{name}", self._static),
            Route("/rpc", self._rpc, methods=["POST"]),
            Route("/events", self._events),
        ]
        return TokenGuard(Starlette(routes=routes), self)

    async def _index(self, request: Request) -> Response:
        page = _read("index.html").decode().replace("{{TOKEN}}", self.token)
        page = page.replace("{{SANDBOX}}", self.sandbox.origin())
        return Response(page, media_type="text/html", headers=NO_STORE)

    async def _static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response("not found", status_code=404)
        return Response(_read(name), media_type=STATIC[name], headers=NO_STORE)

    async def _rpc(self, request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_MESSAGE:
            return Response("message too large", status_code=413)
        try:
            orjson.loads(body)
        except orjson.JSONDecodeError:
            return Response("not JSON", status_code=400)
        self.page_in(body)
        return Response(status_code=202)

    async def _events(self, request: Request) -> Response:
        last = request.headers.get("last-event-id") or request.query_params.get("since") or "0"
        try:
            since = int(last)
        except ValueError:
            since = 0
        return StreamingResponse(
            self._stream(since),
            media_type="text/event-stream",
            headers={**NO_STORE, "X-Accel-Buffering": "no"},
        )

    async def _stream(self, since: int) -> AsyncIterator[bytes]:
        """The journal after `since`, then live. The first event says where the session is, so
        a (re)loaded page knows whether to initialize."""
        session = self.router.session
        hello = {
            "kind": "hello",
            "initialized": session.version is not None,
            "files": self._files(),
            "seq": self.journal.seq,  # the page replays up to here before it asks the person anything
        }
        yield b"event: hello\ndata: " + orjson.dumps(hello) + b"\n\n"
        seq = since
        while not self.journal.closed:
            for number, record in self.journal.since(seq):
                yield b"id: %d\ndata: " % number + record + b"\n\n"
                seq = number  # records added while this one was sent come next time round
            with anyio.move_on_after(KEEPALIVE):
                await self.journal.wait(seq)
                continue
            yield b": keep-alive\n\n"

    def _files(self) -> list[str]:
        return list(self.host.supervisors)

    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/?token={self.token}"


NO_STORE = {"Cache-Control": "no-store"}


class ByPort:
    """One uvicorn serving two sockets: each request goes to the app of the port it came in on."""

    def __init__(self, apps: dict[int, ASGIApp]) -> None:
        self.apps = apps

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server")
        app = self.apps.get(server[1]) if server else None
        if app is None:
            await Response("not found", 404)(scope, receive, send)
            return
        await app(scope, receive, send)


class TokenGuard:
    """Every request must carry the token (query `token` or header X-Playground-Token) and
    name this server in its Host header (no DNS rebinding); otherwise 403."""

    def __init__(self, app: ASGIApp, playground: Playground) -> None:
        self.app = app
        self.playground = playground

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._allowed(Request(scope)):
            await Response("forbidden: open the URL protomcp printed (it has the token)", 403)(
                scope, receive, send
            )
            return
        await self.app(scope, receive, send)

    def _allowed(self, request: Request) -> bool:
        port = self.playground.port
        if request.headers.get("host") not in (f"{LOOPBACK}:{port}", f"localhost:{port}"):
            return False
        given = request.query_params.get("token") or request.headers.get("x-playground-token") or ""
        return hmac.compare_digest(given.encode(), self.playground.token.encode())


def _read(name: str) -> bytes:
    return resources.files("protomcp_host.playground").joinpath("static", name).read_bytes()


def _fragment(related: bytes | None) -> Any:
    return None if related is None else orjson.Fragment(related)


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: the host decides when to stop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve_playground(
    host: Host,
    shutdown: anyio.Event,
    port: int,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the playground on loopback `port` (0: any free port) until `shutdown`; the page's
    URL, with its token, goes to the host's stderr (and to `protomcp logs`) once it listens.
    An `app.serve` companion.

    A port already taken (a sibling copy of this server, with the same --ui-port if any: Claude
    Desktop starts a second one to probe its protocol era, a Cowork session its own; or another
    dev host) falls back to a free port, said on stderr."""
    try:
        sock = bind(LOOPBACK, port)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE or port == 0:
            raise  # reaches serve(), which says so
        sock = bind(LOOPBACK, 0)
        host.stderr(
            f"protomcp playground: port {port} is in use (another protomcp dev --ui?); "
            f"using port {sock.getsockname()[1]} instead"
        )
    playground = Playground(host)
    playground.port = sock.getsockname()[1]
    sandbox_sock = bind(LOOPBACK, 0)  # the apps' origin: any free port
    playground.sandbox.playground_port = playground.port
    playground.sandbox.port = sandbox_sock.getsockname()[1]
    config = uvicorn.Config(
        playground.app(), lifespan="off", log_config=None, log_level="warning", access_log=False
    )
    server = _Server(config)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock, sandbox_sock])
            host.tell("playground", {"url": playground.url()})  # (first: once it is said, it is known)
            host.stderr(f"protomcp playground: {playground.url()}")
            task_status.started()
            await shutdown.wait()
            playground.journal.close()  # event streams end, so uvicorn can stop
            server.should_exit = True
    finally:
        playground.router.cancel_all()
        host.disconnect(playground.router)
        host.watchers.remove(playground._host_event)
        host.connections.wire_tap = None
        sock.close()
        sandbox_sock.close()
