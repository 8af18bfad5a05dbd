"""Runs the HTTP transports under uvicorn inside the host's task group, and shuts them down
gracefully, losing nothing a client behind a balancer can see:

- new connections are refused at once (a balancer tries another host: nothing was sent); the
  ones the kernel had already completed but not handed over yet are taken first and served
  (closing the listening socket would reset them, with a request perhaps written on them);
- a request on a connection already open is served, and every response from then on closes
  its connection (`Connection: close`); a kept-alive connection, and one whose response had
  begun, is left for the peer to close (closing it here could cross a request the balancer is
  sending on it, which it may not repeat elsewhere: a POST);
- in-flight calls and running task calls finish; standalone streams end;
- all bounded by --drain-timeout, after which what still runs is answered with an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import anyio
import uvicorn
from starlette.routing import BaseRoute, Route, Router, WebSocketRoute

from protomcp_host.processes.launch import StartupError
from protomcp_host.transports.http.affinity import Affinity
from protomcp_host.transports.http.asgi import ASGIApp, Receive, Scope, Send
from protomcp_host.transports.http.batching import http_protocol
from protomcp_host.transports.http.connections import ConnectionLimits, bounded, fit_to_fd_limit
from protomcp_host.transports.http.guard import Authenticator, Guard, is_loopback
from protomcp_host.transports.http.health import LIVE_PATH, READY_PATH, Health
from protomcp_host.transports.http.oauth import OAuthResource
from protomcp_host.transports.http.protomcp_ws import PROTO_MCP_PATH, ProtoMcpEndpoint
from protomcp_host.transports.http.streamable import HttpOptions, StreamableHTTP
from protomcp_host.transports.ports import Sessions
from protomcp_host.transports.waiting import cancel_when_set

if TYPE_CHECKING:
    from protomcp_host.telemetry.prometheus import PrometheusMetrics


@dataclass
class HttpSettings:
    transport: str = "http"  # "http" (Streamable HTTP) or "sse" (the 2024-11-05 HTTP+SSE transport)
    host: str = "127.0.0.1"
    port: int = 8000
    path: str = "/mcp"
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()
    auth: Authenticator | None = None
    options: HttpOptions = field(default_factory=HttpOptions)
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    websockets: dict[str, ASGIApp] = field(default_factory=dict)  # path -> app (the peers' /bridge)
    path_auth: dict[str, Authenticator | None] = field(default_factory=dict)  # a path's own check, not auth
    public_endpoints: dict[str, ASGIApp] = field(default_factory=dict)  # path -> app served without auth
    any_origin_paths: set[str] = field(default_factory=set)  # paths any web page may call (guard.py)
    # Waited for on shutdown (within the drain timeout) before the server stops, which closes
    # every WebSocket: the peers' calls in flight over /bridge.
    before_exit: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    workers: int = 1  # --workers: host processes on this port (workers.py)
    sock: socket.socket | None = None  # a listening socket to serve instead of binding (a worker's)
    affinity: Affinity | None = None  # a worker's: where the other workers' sessions are served
    metrics: PrometheusMetrics | None = None  # GET /metrics (None: not served)
    metrics_token: str | None = None  # --metrics-token-env's value: lets scrapers other than loopback in


LISTEN_QUEUE = 2048  # connections the kernel holds until they are accepted
DRAIN_POLL = 0.05  # seconds between two looks at the connections a drain waits for
ACCEPT_BATCH = 16  # connections accepted per loop iteration (asyncio takes it from the backlog)


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling (the host decides when to stop), accepting a few
    connections per loop iteration: asyncio accepts as many as the backlog says before any of
    them is seen by the protocol, so a flood would use up the open files before the connection
    cap (connections.py) could close one."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)  # listens with config.backlog = ACCEPT_BATCH
        for sock in sockets or ():
            sock.listen(LISTEN_QUEUE)  # the kernel's queue stays long; asyncio's batch stays short


class _Endpoint:
    """An ASGI callable starlette mounts as is (it would wrap a bare method as a request handler)."""

    def __init__(self, handler: ASGIApp) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.handler(scope, receive, send)


class _ClosingWhenDraining:
    """While the host drains, each response closes its connection after it (`Connection:
    close`): the client's next request opens a new one, which is refused, and goes elsewhere."""

    def __init__(self, app: ASGIApp, owner: Any) -> None:
        self.app = app
        self.owner = owner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.owner.draining:
            send = _closing(send)
        await self.app(scope, receive, send)


def _closing(send: Send) -> Send:
    async def send_closing(message: Any) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", ()), (b"connection", b"close")]
        await send(message)

    return send_closing


async def _stop_accepting(
    server: uvicorn.Server, http: type[Any], sockets: list[socket.socket]
) -> list[socket.socket]:
    """Refuse new connections, losing none already made; a connection serving a request closes
    once it is answered.

    A connection is dropped with a reset, and a balancer that had written a request on it (a POST)
    answers its client 502 instead of trying another host, if it is still in the listening
    socket's queue when that closes (asyncio accepts a few per loop iteration: under load dozens
    wait), or accepted by asyncio but not yet given its transport (that fails once the server is
    closed). So: asyncio stops accepting, the connections it accepted get their transports, the
    ones still queued are taken here, and the sockets close, in that order (the last two in one
    step). Returns those taken here, for `_serve_queued`."""
    listeners = list(getattr(server, "servers", ()))
    if not listeners:  # (uvicorn did not start: nothing was accepted, the sockets close at the end)
        return []
    loop = asyncio.get_running_loop()
    for listener in listeners:
        for sock in listener.sockets:
            loop.remove_reader(sock.fileno())
    await asyncio.sleep(0)  # (the transports of the connections asyncio accepted are made first)
    queued = [connection for sock in sockets for connection in _accept_queued(sock)]
    for listener in listeners:
        listener.close()  # (closes the sockets: new connections are refused from here on)
    for connection in _http_connections(server, http):
        cycle = connection.cycle
        if cycle is not None and not cycle.response_complete and not cycle.response_started:
            connection.shutdown()  # (uvicorn: its answer says `Connection: close`, then it closes)
    # A connection whose answer has begun is left open after it, like an idle one: closing it
    # unannounced could cross the next request the balancer sends on it (a POST is not repeated).
    return queued


async def _serve_queued(server: uvicorn.Server, http: type[Any], queued: list[socket.socket]) -> None:
    """Serve connections accepted by `_stop_accepting` with the server's HTTP protocol `http`, as
    uvicorn serves the ones it accepts."""
    loop = asyncio.get_running_loop()

    def protocol() -> asyncio.Protocol:
        made: asyncio.Protocol = http(
            config=server.config, server_state=server.server_state, app_state=server.lifespan.state
        )
        return made

    for connection in queued:
        try:
            await loop.connect_accepted_socket(protocol, connection)
        except OSError:  # (the peer went away meanwhile)
            connection.close()


def _accept_queued(sock: socket.socket) -> list[socket.socket]:
    """The connections waiting in a listening socket's queue, accepted without waiting."""
    taken: list[socket.socket] = []
    try:
        sock.setblocking(False)  # (asyncio made it so; said again, since accept() must not wait)
    except OSError:  # (closed already)
        return taken
    while len(taken) < LISTEN_QUEUE:
        try:
            connection, _ = sock.accept()
        except (BlockingIOError, InterruptedError):
            break
        except OSError:  # (closed already, or out of descriptors: what is left is refused)
            break
        connection.setblocking(False)
        taken.append(connection)
    return taken


def _http_connections(server: uvicorn.Server, http: type[Any]) -> list[Any]:
    """The open HTTP connections (`http`: their protocol; not the WebSockets, no longer HTTP)."""
    return [c for c in server.server_state.connections if isinstance(c, http)]


async def _drained(server: uvicorn.Server, http: type[Any], owner: Any, host: Sessions) -> None:
    """Until nothing is left to finish: no kept-alive connection a request may still arrive on
    (the peer closes it: a balancer's idle timeout is set shorter than --keep-alive-timeout, and
    a request that comes on it instead is served), no call and no task call running."""
    while True:
        await owner.wait_idle()
        await host.wait_tasks()
        # (a call that ended meanwhile leaves its connection kept alive when its answer had
        # begun before the drain: that one, too, is the peer's to close)
        kept = any(connection.idle() for connection in _http_connections(server, http))
        if not kept and not owner.calls_running() and not host.tasks_running():
            return
        await anyio.sleep(DRAIN_POLL)


def bind(host: str, port: int) -> socket.socket:
    """The listening socket. Its protocol is named (IPPROTO_TCP) so that asyncio turns Nagle off on
    accepted connections (it only does for sockets that say they are TCP): otherwise a response
    written in two pieces waits for the client's delayed ACK, ~40 ms per request."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(LISTEN_QUEUE)
    except OSError:
        sock.close()
        raise
    return sock


def listen(settings: HttpSettings) -> socket.socket:
    """Bind the settings' address; a StartupError says why not."""
    try:
        return bind(settings.host, settings.port)
    except OSError as exc:
        raise StartupError(
            f"cannot listen on {settings.host}:{settings.port}: {exc.strerror or exc}"
        ) from None


def endpoint_path(settings: HttpSettings) -> str:
    """Where clients connect: --path, or /sse for the HTTP+SSE transport."""
    return settings.path if settings.transport == "http" else "/sse"


def url_of(settings: HttpSettings, port: int) -> str:
    host = settings.host
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}{endpoint_path(settings)}"


def build_app(host: Sessions, settings: HttpSettings) -> tuple[Any, Any]:
    """The ASGI app and the object that owns its sessions (drain / wait_idle / close_all)."""
    if settings.transport == "sse":
        from protomcp_host.transports.http.sse import SseTransport

        sse = SseTransport(host, settings.options, messages_path="/messages")
        routes: list[BaseRoute] = [
            Route("/sse", endpoint=_Endpoint(sse.stream), methods=["GET"]),
            Route("/messages", endpoint=_Endpoint(sse.message), methods=["POST"]),
        ]
        owner: Any = sse
    else:
        mcp = StreamableHTTP(host, settings.options, settings.affinity)
        routes = [
            Route(settings.path, endpoint=mcp, methods=["GET", "POST", "DELETE"]),
            WebSocketRoute(PROTO_MCP_PATH, endpoint=_Endpoint(ProtoMcpEndpoint(host))),
        ]
        owner = mcp
    routes += [WebSocketRoute(path, endpoint=_Endpoint(app)) for path, app in settings.websockets.items()]
    health = Health(host)
    routes += [
        Route(READY_PATH, endpoint=_Endpoint(health.ready), methods=["GET"]),
        Route(LIVE_PATH, endpoint=_Endpoint(health.live), methods=["GET"]),
    ]
    public: list[str] = [READY_PATH, LIVE_PATH]  # balancers probe without credentials
    if settings.metrics is not None:  # (its own access rule: metrics_endpoint.py)
        from protomcp_host.transports.http.metrics_endpoint import METRICS_PATH, MetricsEndpoint

        scrape = MetricsEndpoint(host, settings.metrics, settings.metrics_token)
        routes.append(Route(METRICS_PATH, endpoint=_Endpoint(scrape), methods=["GET"]))
        public.append(METRICS_PATH)
    # (the authorization server's endpoints, --oauth-provider: a client without a token gets one there)
    routes += [Route(path, endpoint=_Endpoint(app)) for path, app in settings.public_endpoints.items()]
    public += list(settings.public_endpoints)
    if isinstance(settings.auth, OAuthResource):
        metadata = settings.auth.metadata_paths(endpoint_path(settings))  # the challenge names one
        public += metadata
        routes += [
            Route(path, endpoint=_Endpoint(settings.auth.metadata), methods=["GET"]) for path in metadata
        ]
    app = Guard(
        Router(routes),
        bind=settings.host,
        allow_hosts=settings.allow_hosts,
        allow_origins=settings.allow_origins,
        auth=settings.auth,
        max_body=settings.options.max_body,
        public_paths=public,
        path_auth=settings.path_auth,
        any_origin_paths=settings.any_origin_paths,
    )
    return _ClosingWhenDraining(app, owner), owner


async def serve_http(
    host: Sessions,
    settings: HttpSettings,
    shutdown: anyio.Event,
    drain_timeout: float,
    announce: Callable[[str], None],
) -> None:
    """Serve until `shutdown` is set, then shut down gracefully within `drain_timeout`."""
    app, owner = build_app(host, settings)
    sock = settings.sock or listen(settings)
    sockets = [sock]
    if settings.affinity is not None:  # the other workers pass this one its sessions' requests here
        sockets.append(settings.affinity.listen())
    limits = _fit_limits(host, settings.limits)
    http = bounded(http_protocol(), limits, host.stderr)
    server = _Server(_uvicorn_config(app, http, limits, drain_timeout))
    url = url_of(settings, sock.getsockname()[1])
    if isinstance(settings.auth, OAuthResource):
        settings.auth.start(url, host.stderr)
    announce(url)
    if not is_loopback(settings.host) and settings.auth is None:
        host.stderr(
            f"protomcp: warning: listening on {settings.host} without authentication; anyone who can "
            "reach this port can call your tools (use --auth-token-env or --oauth-jwks)"
        )
    stopped = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_serve_until_stopped, server, sockets, stopped)
        tg.start_soon(owner.expire_idle)
        with anyio.CancelScope() as waiting:
            tg.start_soon(cancel_when_set, stopped, waiting)  # (the server stopped on its own)
            await shutdown.wait()
        await _shut_down(server, sockets, http, owner, host, settings.before_exit, drain_timeout)
        server.should_exit = True
        with anyio.move_on_after(drain_timeout + 2):
            await stopped.wait()
        tg.cancel_scope.cancel()
    for listening in sockets:
        listening.close()


def _fit_limits(host: Sessions, limits: ConnectionLimits) -> ConnectionLimits:
    """`limits` with the connection cap lowered to what the limit on open files allows."""
    cap = fit_to_fd_limit(limits.max_connections)
    if cap >= limits.max_connections:
        return limits
    host.stderr(
        f"protomcp: warning: --max-connections {limits.max_connections} exceeds what the limit on "
        f"open files allows (ulimit -n); serving at most {cap} connections"
    )
    return replace(limits, max_connections=cap)


def _uvicorn_config(
    app: Any, http: type[Any], limits: ConnectionLimits, drain_timeout: float
) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        lifespan="off",
        log_config=None,
        log_level="warning",
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=max(1, int(drain_timeout) + 1),
        # (typed int, but uvicorn only hands it to loop.call_later: a float works)
        timeout_keep_alive=limits.keep_alive_timeout,  # type: ignore[arg-type]
        backlog=ACCEPT_BATCH,
        http=http,
    )


async def _serve_until_stopped(
    server: uvicorn.Server, sockets: list[socket.socket], stopped: anyio.Event
) -> None:
    try:
        await server.serve(sockets=sockets)
    finally:
        stopped.set()


async def _shut_down(
    server: uvicorn.Server,
    sockets: list[socket.socket],
    http: type[Any],
    owner: Any,
    host: Sessions,
    before_exit: list[Callable[[], Awaitable[None]]],
    drain_timeout: float,
) -> None:
    """Refuse new connections, let what runs finish (bounded by `drain_timeout`), then answer
    what is left with an error and end the sessions."""
    queued = await _stop_accepting(server, http, sockets)
    owner.drain()  # (first: what the queued connections ask is answered as the host drains)
    await _serve_queued(server, http, queued)
    deadline = anyio.current_time() + drain_timeout
    with anyio.CancelScope(deadline=deadline):  # (the peers' calls: their links stay open)
        for wait in before_exit:
            await wait()
    kept = sum(connection.idle() for connection in _http_connections(server, http))
    if kept or host.tasks_running() or owner.calls_running():
        host.stderr(
            f"protomcp: draining: new connections are refused; waiting up to {drain_timeout:g}s "
            f"for {owner.calls_running()} call(s) in flight, {host.tasks_running()} running "
            f"task(s) and {kept} kept-alive connection(s)"
        )
    with anyio.CancelScope(deadline=deadline):
        await _drained(server, http, owner, host)
    if host.tasks_running():
        host.stderr(
            f"protomcp: {host.tasks_running()} task(s) did not finish within the drain "
            f"({drain_timeout:g}s, --drain-timeout); they end failed"
        )
    owner.fail_all(f"the host is shutting down and the call did not finish within {drain_timeout:g}s")
    owner.close_all()  # (the error answers above still go out: streams end after their messages)
