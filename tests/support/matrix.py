"""The combination matrix's client side: official-SDK sessions whose transport is tapped, so a
test sees every JSON-RPC message each session sent and received (to count answers per request
id and to look for another session's traces), over stdio or Streamable HTTP with OAuth."""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import secrets
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import orjson
from mcp import ClientSession, types
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCNotification, JSONRPCRequest

from tests.support.hosts import HOST, TOOLS
from tests.support.http import HttpHost

MATRIX_TOOLS = TOOLS / "matrix" / "tools.py"
MATRIX_MW = TOOLS / "matrix" / "mw.py"
ISSUER = "https://issuer.matrix.test"
AUDIENCE = "https://matrix.test/mcp"
SUBJECTS = ("alice", "bob")
MODERN = "2026-07-28"
WAIT = 15.0  # seconds any single expected event may take (never a pause: a bound on a wait)

Message = dict[str, Any]


def is_answer(message: Message) -> bool:
    return "method" not in message and ("result" in message or "error" in message)


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


class Peer:
    """One client session: the official ClientSession plus a record of its traffic."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.session: ClientSession = None  # type: ignore[assignment]  # set once connected
        self.received: list[Message] = []
        self.sent: list[Message] = []
        self.markers: list[str] = []  # strings only this session's traffic may contain
        self.asked: Counter[str] = Counter()  # server->client requests its callbacks answered
        self._grew = anyio.Event()
        self._raw_ids = itertools.count(1)
        self._transport_write: Any = None
        self._flushes = itertools.count(1)

    # -- the tap -----------------------------------------------------------------------------
    def record_in(self, item: SessionMessage | Exception) -> bool:
        """Record a message from the server; False when it answers a raw request (not passed on)."""
        if isinstance(item, Exception):
            message: Message = {"transport_exception": repr(item)}
        else:
            message = item.message.model_dump(by_alias=True, mode="json", exclude_none=True)
        self.received.append(message)
        self._grew.set()
        self._grew = anyio.Event()
        return not (isinstance(message.get("id"), str) and message["id"].startswith("raw-"))

    def record_out(self, item: SessionMessage) -> None:
        self.sent.append(item.message.model_dump(by_alias=True, mode="json", exclude_none=True))

    # -- waiting -----------------------------------------------------------------------------
    async def wait_for(self, want: Callable[[Message], bool], what: str, timeout: float = WAIT) -> Message:
        """The first received message (so far or later) for which want(message) is true."""
        seen = 0
        try:
            with anyio.fail_after(timeout):
                while True:
                    for message in self.received[seen:]:
                        if want(message):
                            return message
                    seen = len(self.received)
                    await self._grew.wait()
        except TimeoutError:
            raise AssertionError(
                f"session {self.label}: no {what} within {timeout:g}s; got:\n{self.dump()}"
            ) from None

    async def wait_log(self, text: str) -> Message:
        return await self.wait_for(
            lambda m: m.get("method") == "notifications/message" and text in _json(m["params"].get("data")),
            f"log message containing {text!r}",
        )

    def notifications(self, method: str) -> list[Message]:
        return [m for m in self.received if m.get("method") == method]

    def dump(self, limit: int = 4000) -> str:
        requests, answers, cancelled = self.answer_counts()
        methods = {m["id"]: m["method"] for m in self.sent if "method" in m and "id" in m}
        unanswered = [f"{i} {methods[i]}" for i in requests if not answers[i] and i not in cancelled]
        lines = [_json(m)[:300] for m in self.received]
        return f"requests without an answer: {unanswered}\nreceived:\n" + "\n".join(lines)[-limit:]

    # -- requests ----------------------------------------------------------------------------
    def tag(self, scenario: str) -> str:
        """A marker for this session's arguments: another session must never see it."""
        tag = f"{scenario}-{self.label}-{secrets.token_hex(4)}"
        self.markers.append(tag)
        return tag

    async def call(self, name: str, arguments: dict[str, Any], **options: Any) -> types.CallToolResult:
        try:
            with anyio.fail_after(WAIT):
                if self.session.protocol_version != MODERN:
                    return await self.session.call_tool(name, arguments, **options)
                return await self._driven_call(name, arguments, **options)
        except TimeoutError:
            raise AssertionError(
                f"session {self.label}: tools/call {name} got no answer within {WAIT:g}s; got:\n{self.dump()}"
            ) from None

    async def _driven_call(
        self, name: str, arguments: dict[str, Any], **options: Any
    ) -> types.CallToolResult:
        """A 2026-07-28 call: the session's callbacks answer each input-required round and the call
        is sent again with the answers, as the official `Client.call_tool` does (a ClientSession
        alone hands the InputRequiredResult back)."""
        from mcp.client._input_required import run_input_required_driver
        from mcp.client.session import ClientRequestContext

        session = self.session

        async def retry(responses: Any, state: str | None) -> Any:
            return await session.call_tool(
                name,
                arguments,
                input_responses=responses,
                request_state=state,
                allow_input_required=True,
                **options,
            )

        async def dispatch(key: str, request: Any) -> Any:
            meta = request.params.meta if request.params else None
            return await session.dispatch_input_request(
                ClientRequestContext(session=session, request_id=key, meta=meta), request
            )

        first = await retry(None, None)
        if not isinstance(first, types.InputRequiredResult):
            return first
        return await run_input_required_driver(first, dispatch=dispatch, retry=retry)

    async def text(self, name: str, arguments: dict[str, Any], **options: Any) -> str:
        result = await self.call(name, arguments, **options)
        assert not result.is_error, (self.label, name, text_of(result))
        return text_of(result)

    async def tool_names(self) -> set[str]:
        with anyio.fail_after(WAIT):
            return {t.name for t in (await self.session.list_tools()).tools}

    async def raw_request(self, method: str, params: dict[str, Any]) -> Message:
        """A JSON-RPC request the official client cannot express, sent on this session's transport
        (so over HTTP with its session id and token); returns the raw response."""
        request_id = f"raw-{next(self._raw_ids)}"
        message = SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method, params=params))
        self.record_out(message)
        await self._transport_write.send(message)
        return await self.wait_for(
            lambda m: m.get("id") == request_id and is_answer(m), f"answer to {method}"
        )

    async def raw_notify(self, method: str, params: dict[str, Any]) -> None:
        message = SessionMessage(JSONRPCNotification(jsonrpc="2.0", method=method, params=params))
        self.record_out(message)
        await self._transport_write.send(message)

    async def flush(self) -> None:
        """A barrier: a resource update this session subscribed to makes a round trip through the
        tool process and comes back on the session's unrelated-message stream (over HTTP the GET
        stream, where anything broadcast to the session before it also travels)."""
        uri = f"matrix://flush/{self.label}-{next(self._flushes)}-{secrets.token_hex(3)}"
        with anyio.fail_after(WAIT):
            await self.session.subscribe_resource(uri)
        await self.text("touch", {"uri": uri})
        await self.wait_for(
            lambda m: m.get("method") == "notifications/resources/updated" and m["params"]["uri"] == uri,
            f"resources/updated for the flush {uri}",
        )

    # -- checks ------------------------------------------------------------------------------
    def answer_counts(self) -> tuple[Counter[Any], Counter[Any], set[Any]]:
        """(requests sent per id, answers received per id, ids this session cancelled)."""
        requests = Counter(m["id"] for m in self.sent if "method" in m and "id" in m)
        answers = Counter(m["id"] for m in self.received if is_answer(m))
        cancelled = {
            m["params"]["requestId"] for m in self.sent if m.get("method") == "notifications/cancelled"
        }
        return requests, answers, cancelled

    def assert_one_answer_each(self) -> None:
        requests, answers, cancelled = self.answer_counts()
        wrong = {
            request_id: answers[request_id]
            for request_id in requests.keys() | answers.keys()
            if answers[request_id] != (0 if request_id in cancelled else requests[request_id])
        }
        assert not wrong, (
            f"session {self.label}: answers per request id (expected one each, none for cancelled "
            f"{sorted(map(str, cancelled))}): {wrong}\n{self.dump()}"
        )

    def assert_no_trace_of(self, other: Peer) -> None:
        leaked = [m for m in self.received if any(marker in _json(m) for marker in other.markers)]
        assert not leaked, (
            f"session {self.label} ({SUBJECTS[0] if self.label == 'A' else SUBJECTS[1]}) received "
            f"messages of session {other.label}: " + "\n".join(_json(m)[:400] for m in leaked[:10])
        )


def _json(value: Any) -> str:
    return orjson.dumps(value, default=repr).decode()


@dataclass
class World:
    """The sessions of one scenario: one over stdio, two of different subjects over HTTP."""

    transport: str
    peers: list[Peer]
    host_stderr: Callable[[], str]
    files: list[Path] = field(default_factory=list)
    modern: bool = False  # 2026-07-28 era: each request answered on its own, no session stream

    @property
    def a(self) -> Peer:
        return self.peers[0]

    @property
    def b(self) -> Peer | None:
        return self.peers[1] if len(self.peers) > 1 else None

    async def each(self, fn: Callable[[Peer], Awaitable[Any]]) -> list[Any]:
        """Run fn for every session at once; returns their results in session order."""
        results: list[Any] = [None] * len(self.peers)

        async def one(index: int, peer: Peer) -> None:
            results[index] = await fn(peer)

        async with anyio.create_task_group() as tg:
            for index, peer in enumerate(self.peers):
                tg.start_soon(one, index, peer)
        return results

    async def finish(self) -> None:
        """After every scenario: each session can still call a tool, each request got exactly one
        answer (none if cancelled), and no session received anything of another."""
        for peer in self.peers:
            word = f"still-{peer.label}-{secrets.token_hex(3)}"
            assert await peer.text("echo", {"text": word}) == word
        if not self.modern:  # the modern era has no stream besides each request's own
            for peer in self.peers:
                await peer.flush()
        for peer in self.peers:
            peer.assert_one_answer_each()
        for peer in self.peers:
            for other in self.peers:
                if other is not peer:
                    peer.assert_no_trace_of(other)


# -- callbacks: each session answers the tool's requests with its own label ---------------------
def callbacks(peer: Peer) -> dict[str, Any]:
    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        peer.asked["sampling"] += 1
        question = params.messages[0].content.text  # type: ignore[union-attr]
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"{peer.label} saw {question}"),
            model="m",
        )

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        peer.asked["elicitation"] += 1
        return types.ElicitResult(action="accept", content={"name": f"{peer.label} for {params.message}"})

    async def roots(context: Any) -> types.ListRootsResult:
        peer.asked["roots"] += 1
        return types.ListRootsResult(roots=[types.Root(uri=f"file:///root-of-{peer.label}", name=peer.label)])

    return {"sampling_callback": sample, "elicitation_callback": elicit, "list_roots_callback": roots}


@asynccontextmanager
async def tapped_session(peer: Peer, read: Any, write: Any, modern: bool = False) -> AsyncIterator[Peer]:
    """Put the tap between a transport's streams and an official ClientSession (in the 2026-07-28
    era with `modern`: server/discover instead of initialize)."""
    to_session, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](math.inf)
    session_writes, from_session = anyio.create_memory_object_stream[SessionMessage](math.inf)
    peer._transport_write = write

    async def pump_in() -> None:
        async with to_session:
            async for item in read:
                if peer.record_in(item):
                    # once the session has closed, what still comes is recorded, not read
                    with contextlib.suppress(anyio.BrokenResourceError):
                        await to_session.send(item)

    async def pump_out() -> None:
        async for item in from_session:
            peer.record_out(item)
            await write.send(item)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump_in)
        tg.start_soon(pump_out)
        async with ClientSession(session_reads, session_writes, **callbacks(peer)) as session:
            with anyio.fail_after(WAIT):
                await (session.discover() if modern else session.initialize())
                await session.list_tools()  # the tools loaded; the client knows their schemas
            peer.session = session
            yield peer
        tg.cancel_scope.cancel()


@asynccontextmanager
async def stdio_streams(args: list[str], errlog: Path) -> AsyncIterator[tuple[Any, Any]]:
    """`protomcp <args>` as a subprocess, as the (read, write) streams of a ClientSession.

    The official `stdio_client` joins its read buffer with each chunk (quadratic: a 20 MB line
    takes minutes), so this reads lines in linear time; the session on top is still the
    official client's. On exit stdin is closed and the host gets a bounded time to exit, then
    its process group is killed: no process is left behind."""
    import signal
    import subprocess

    from mcp import types as mcp_types

    read_in, read = anyio.create_memory_object_stream[SessionMessage | Exception](math.inf)
    write, write_out = anyio.create_memory_object_stream[SessionMessage](math.inf)
    with errlog.open("ab") as log:
        process = await anyio.open_process(
            [*HOST, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, start_new_session=True
        )

    async def reader() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        async with read_in:
            try:
                async for chunk in process.stdout:
                    start = len(buffer)
                    buffer += chunk
                    while (end := buffer.find(b"\n", start)) >= 0:
                        line = bytes(buffer[:end])
                        del buffer[: end + 1]
                        start = 0
                        try:
                            item: SessionMessage | Exception = SessionMessage(
                                mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                            )
                        except ValueError as exc:
                            item = exc
                        await read_in.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass

    async def writer() -> None:
        assert process.stdin is not None
        async with write_out:
            async for message in write_out:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                try:
                    await process.stdin.send(data.encode())
                except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    return

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            yield read, write
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            if process.stdin is not None:
                await process.stdin.aclose()
            with anyio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                os.killpg(process.pid, signal.SIGKILL)
                await process.wait()


@asynccontextmanager
async def stdio_peer(label: str, args: list[str], errlog: Path, modern: bool = False) -> AsyncIterator[Peer]:
    async with (
        stdio_streams(args, errlog) as (read, write),
        tapped_session(Peer(label), read, write, modern) as peer,
    ):
        yield peer


@asynccontextmanager
async def http_peer(label: str, url: str, token: str, modern: bool = False) -> AsyncIterator[Peer]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=60) as client,
        streamable_http_client(url, http_client=client, max_sse_event_size=64 * 1024 * 1024) as (read, write),
        tapped_session(Peer(label), read, write, modern) as peer,
    ):
        yield peer


# -- hosts ------------------------------------------------------------------------------------
class Auth:
    """An RSA key, its JWKS file, and access tokens for two subjects."""

    def __init__(self, folder: Path) -> None:
        import jwt
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = orjson.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        public.update({"kid": "m1", "alg": "RS256", "use": "sig"})
        self.jwks = folder / "jwks.json"
        self.jwks.write_bytes(orjson.dumps({"keys": [public]}))

    def token(self, subject: str) -> str:
        import jwt

        now = int(time.time())
        claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "iat": now, "exp": now + 3600}
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "m1"})

    def options(self) -> list[str]:
        return ["--oauth-jwks", str(self.jwks), "--oauth-issuer", ISSUER, "--oauth-audience", AUDIENCE]


def files_for(middleware: str) -> list[str]:
    return [str(MATRIX_TOOLS), *([str(MATRIX_MW)] if middleware == "mw" else [])]


class HttpHosts:
    """HTTP hosts shared by the scenarios of a module, one per (middleware, flavour)."""

    def __init__(self, auth: Auth) -> None:
        self.auth = auth
        self.hosts: dict[tuple[str, str], HttpHost] = {}

    def get(self, middleware: str, flavour: str = "main", *options: str) -> HttpHost:
        key = (middleware, flavour)
        if key not in self.hosts:
            self.hosts[key] = HttpHost("run", *files_for(middleware), *options, *self.auth.options())
        return self.hosts[key]

    def close(self) -> None:
        for host in self.hosts.values():
            host.terminate()


def leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


@asynccontextmanager
async def plain_errors() -> AsyncIterator[None]:
    """Task groups wrap a failed assertion in exception groups: raise the one error itself."""
    try:
        yield
    except BaseExceptionGroup as group:
        found = leaves(group)
        if len(found) == 1:
            raise found[0] from None
        raise


@asynccontextmanager
async def open_world(
    transport: str,
    args: list[str],
    tmp_path: Path,
    http: HttpHost | None = None,
    auth: Auth | None = None,
    modern: bool = False,
) -> AsyncIterator[World]:
    """The scenario's sessions: `args` is the stdio host's command line (`run FILE...`); over HTTP
    two sessions of two subjects on the given host."""
    if transport == "stdio":
        errlog = tmp_path / f"host-stderr-{secrets.token_hex(3)}.log"
        async with plain_errors(), stdio_peer("A", args, errlog, modern) as a:
            world = World(transport, [a], lambda: errlog.read_text(errors="replace"), modern=modern)
            yield world
        return
    assert http is not None and auth is not None
    async with (
        plain_errors(),
        http_peer("A", http.url, auth.token(SUBJECTS[0]), modern) as a,
        http_peer("B", http.url, auth.token(SUBJECTS[1]), modern) as b,
    ):
        yield World(transport, [a, b], lambda: "\n".join(http.stderr), modern=modern)


@asynccontextmanager
async def own_http_host(*args: str, auth: Auth) -> AsyncIterator[HttpHost]:
    host = HttpHost(*args, *auth.options())
    try:
        yield host
    finally:
        host.terminate()


def iter_combinations() -> Iterator[tuple[str, str]]:
    for transport in ("stdio", "http"):
        for middleware in ("plain", "mw"):
            yield transport, middleware
