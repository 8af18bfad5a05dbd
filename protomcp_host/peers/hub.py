"""This host as an agent of a swarm: its links to peers, over WebSocket.

`PeerHub` owns the links: those it dials (`--peer ws://HOST:PORT/bridge`, reconnected with
backoff) and those peers dial to its `/bridge` endpoint. A link starts with the handshake
(capabilities both ways, `accepted`); then each side may call the other's tools:

- a peer's tools are served here as `PEERID_<name>` (owner `peer PEERID`, a `PeerSource`,
  which the bridge layer calls like a tool file's processes); a `request` goes out with a
  correlation id and the call's timeout, its `response` (or `error`) comes back to the call;
- a peer's `request` runs a local tool through a headless MCP session of this host (so
  middleware, validation and tool processes apply), at most `max_in_flight` at once across
  peers, the rest queued by priority (urgent, high, normal, low; FIFO within one);
- `notification`s: `tools_changed` (sent to every peer when the local tool list changes)
  updates that peer's tools; any other event is shown to this host's clients as a log message
  (logger `bridge`) and on stderr. `bridge_notify` (a tool of this host) sends one, to one
  peer or all.

A link that closes fails its calls (`INTERNAL_ERROR`, peer went away), its tools leave the
list (`list_changed`), and requests it queued here are dropped.

Who may be which agent id: the id of a `--peer` (given as `ID=URL`, or learned at its first
handshake) is that peer's alone, never claimed by a peer dialling in; a bridge token may be
limited to the ids it may claim; an inbound peer's id is bound to its token while its link is
open and `rebind_grace` seconds after (so only that token reconnects meanwhile), then free.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import anyio.abc
import orjson

from protomcp_host.peers.credentials import credential_name
from protomcp_host.peers.gate import PriorityGate
from protomcp_host.peers.local import LocalClient
from protomcp_host.peers.messages import (
    PROTOCOL_VERSION,
    AgentCapabilities,
    BaseMessage,
    ErrorCode,
    ErrorMessage,
    HandshakeRequest,
    HandshakeResponse,
    InvalidMessage,
    MCPBridgeProtocol,
    MessagePriority,
    NotificationMessage,
    RequestMessage,
    ResponseMessage,
    ToolRequest,
    ToolResponse,
    parse_message,
)
from protomcp_host.processes.events import Leg, Loaded, ProcessEvents
from protomcp_host.processes.supervisor import Backoff
from protomcp_host.transports.ports import Sessions
from protomcp_sdk.wire import envelope_pb2 as pb

AGENT_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
BRIDGE_LABEL = "bridge"  # owner of the bridge's own tools (bridge_notify, bridge_peers)
PEER_PREFIX = "peer "  # owner label of a peer's tools: "peer b"
HANDSHAKE_TIMEOUT = 10.0
TOOLS_CHANGED = "tools_changed"
MAX_QUEUED = 1024  # peer requests waiting for a slot, across links; more are refused (busy)
Make = MCPBridgeProtocol


class Conn(Protocol):
    """One WebSocket, either end: text frames in and out."""

    async def send(self, text: str) -> None: ...
    async def receive(self) -> str:
        """The next text frame; raises ConnectionError when the socket closed."""
        ...

    async def close(self, reason: str = "") -> None: ...


@dataclass(slots=True)
class BridgeSettings:
    agent_id: str
    agent_name: str = ""
    agent_role: str = ""
    peers: tuple[str, ...] = ()  # ws:// URLs to dial
    peer_ids: dict[str, str] = field(default_factory=dict)  # URL -> the agent id it must have (ID=URL)
    token: str = ""  # bearer token sent to the peers dialled
    token_env: str = ""  # the variable `token` was read from (--peer-token-env)
    credentials: dict[str, str] = field(default_factory=dict)  # /bridge: VAR -> a token peers send
    claims: dict[str, frozenset[str]] = field(default_factory=dict)  # VAR -> the only ids it may claim
    rebind_grace: float = 30.0  # seconds an inbound peer's id stays its token's after its link closed
    max_in_flight: int = 16  # peer requests run at once; the rest wait, by priority
    metadata: dict[str, Any] = field(default_factory=dict)


class Link:
    """A handshaken connection to one peer."""

    def __init__(self, conn: Conn, peer: AgentCapabilities, client: LocalClient, dialled: str) -> None:
        self.conn = conn
        self.dialled = dialled  # the --peer URL this host dialled ("": the peer dialled in)
        self.peer = peer
        self.peer_id = peer.agent_id
        self.client = client
        self.pending: dict[str, asyncio.Future[BaseMessage]] = {}  # our requests, by message_id
        self.inbound: dict[str, anyio.CancelScope] = {}  # its requests running here
        self.open = True
        self._lock = anyio.Lock()

    async def send(self, message: BaseMessage) -> None:
        async with self._lock:  # one frame at a time, whole
            await self.conn.send(message.to_json())


class PeerHub:
    def __init__(
        self,
        settings: BridgeSettings,
        sessions: Sessions,
        events: ProcessEvents,
        sources: dict[str, Any],
        *,
        call_timeout: float | None,
        on_event: Callable[[NotificationMessage], None],
        stderr: Callable[[str], None],
    ) -> None:
        self.settings = settings
        self.me = settings.agent_id
        self.sessions = sessions
        self.events = events
        self.sources = sources
        self.call_timeout = call_timeout
        self.on_event = on_event
        self.stderr = stderr
        self.links: dict[str, Link] = {}
        self.gate: PriorityGate[tuple[Link, RequestMessage]] = PriorityGate(settings.max_in_flight)
        self.connected = asyncio.Event()  # set whenever a link comes up (tests, diagnostics)
        self._tg: anyio.abc.TaskGroup | None = None
        self._peer_tools: dict[str, dict[str, str]] = {}  # peer id -> served name -> its name
        # agent id -> the --peer URL it is reserved for (given as ID=URL, or learned when dialled)
        self._reserved: dict[str, str] = {id_: url for url, id_ in settings.peer_ids.items()}
        self._claims = {credential_name(var): ids for var, ids in settings.claims.items()}
        self._bound: dict[str, str] = {}  # agent id -> the credential of the inbound peer holding it
        self._releases: dict[str, anyio.CancelScope] = {}  # ids to free once the grace is over
        self.draining = False  # the host is stopping: peers' new requests are refused
        self._settled = asyncio.Event()  # set (and replaced) whenever a request here or there ends
        sources[BRIDGE_LABEL] = BridgeTools(self)

    # -- lifecycle -------------------------------------------------------------------------
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            self.events.loaded(BRIDGE_LABEL, Loaded(BridgeTools.definitions()))
            for url in self.settings.peers:
                tg.start_soon(self._dial_forever, url)
            task_status.started()
            await anyio.sleep_forever()

    async def drain(self) -> None:
        """Refuse peers' new requests; return once theirs (running and queued) have been
        answered and this host's calls to peers are over (the caller bounds the wait)."""
        self.draining = True
        while self.gate.running or len(self.gate) or any(link.pending for link in self.links.values()):
            settled = self._settled
            await settled.wait()

    def _settle(self) -> None:
        self._settled.set()
        self._settled = asyncio.Event()

    async def stop(self, grace: float) -> None:
        for link in list(self.links.values()):
            with anyio.move_on_after(1):
                await link.conn.close("the host is stopping")
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    def capabilities(self) -> AgentCapabilities:
        tools = self.local_tools()
        return AgentCapabilities(
            agent_id=self.me,
            agent_name=self.settings.agent_name or self.me,
            agent_role=self.settings.agent_role,
            tools=[tool.name for tool in tools],
            version=PROTOCOL_VERSION,
            metadata={**self.settings.metadata, "mcp_tools": [tool.mcp for tool in tools]},
        )

    def local_tools(self) -> list[Any]:
        """The tools peers may call: this host's own (tool files, upstreams), not its peers'
        (the bridge protocol has no multi-hop routing) nor the calls layer's, and not hidden ones."""
        return [
            tool
            for tool in self.sessions.catalog.visible()
            if not (str(tool.owner).startswith(PEER_PREFIX) or tool.owner == BRIDGE_LABEL)
        ]

    def tools_changed(self) -> None:
        """The local tool list changed: tell every peer."""
        if self._tg is None or not self.links:
            return
        caps = self.capabilities()
        data = {"tools": caps.tools, "mcp_tools": caps.metadata["mcp_tools"]}
        for link in list(self.links.values()):
            message = Make.create_notification(self.me, TOOLS_CHANGED, data, receiver_id=link.peer_id)
            self._tg.start_soon(self._send_quietly, link, message)

    async def notify(
        self,
        event_type: str,
        data: dict[str, Any],
        receiver_id: str | None = None,
        priority: MessagePriority = MessagePriority.NORMAL,
    ) -> list[str]:
        """Send a notification to one peer (receiver_id) or all; returns who it went to."""
        if receiver_id is not None and receiver_id not in self.links:
            raise LookupError(
                f"no peer {receiver_id!r} is connected (connected: {', '.join(self.links) or 'none'})"
            )
        targets = [self.links[receiver_id]] if receiver_id is not None else list(self.links.values())
        message = Make.create_notification(
            self.me, event_type, data, receiver_id=receiver_id, priority=priority
        )
        for link in targets:
            await self._send_quietly(link, message)
        return [link.peer_id for link in targets]

    async def _send_quietly(self, link: Link, message: BaseMessage) -> None:
        with contextlib.suppress(Exception):  # the link's reader sees a closed socket and ends it
            await link.send(message)

    # -- links -----------------------------------------------------------------------------
    async def _dial_forever(self, url: str) -> None:
        backoff = Backoff()
        while True:
            began = time.monotonic()
            try:
                reason = await self._dial(url)
            except Exception as exc:
                reason = _describe(exc) + _refusal_text(exc)
            delay = backoff.next_delay(time.monotonic() - began)
            self.stderr(f"protomcp: bridge: {url}: {reason}; connecting again in {delay:g}s")
            await anyio.sleep(delay)

    async def _dial(self, url: str) -> str:
        from websockets.asyncio.client import connect

        headers = {"Authorization": f"Bearer {self.settings.token}"} if self.settings.token else {}
        async with connect(
            url, additional_headers=headers, open_timeout=HANDSHAKE_TIMEOUT, max_size=2**24
        ) as ws:
            conn = ClientConn(ws)
            hello = Make.create_handshake_request(self.me, self.capabilities())
            await conn.send(hello.to_json())
            with anyio.fail_after(HANDSHAKE_TIMEOUT):
                reply = parse_message(await conn.receive())
            if isinstance(reply, ErrorMessage):
                return f"refused: {reply.payload.error_code.value}: {reply.payload.error_message}"
            if not isinstance(reply, HandshakeResponse) or reply.correlation_id != hello.message_id:
                return f"the peer answered the handshake with a {reply.message_type.value} message"
            if not reply.payload.accepted:
                return f"peer {reply.payload.agent_id} did not accept the handshake"
            peer = AgentCapabilities(**reply.payload.model_dump(exclude={"accepted"}))
            problem = self._reserve(url, peer.agent_id)
            if problem:
                await conn.close(problem)
                return problem
            return await self._serve_link(conn, peer, url)

    def _reserve(self, url: str, agent_id: str) -> str:
        """The id a dialled peer answered with, reserved for its URL (a peer that dialled in
        holding it is cut off); or why it cannot have it."""
        expected = self.settings.peer_ids.get(url)
        if expected is not None and agent_id != expected:
            return f"the peer at {url} says it is {agent_id!r}, not {expected!r} (--peer {expected}={url})"
        holder = self._reserved.setdefault(agent_id, url)
        if holder != url:
            return f"agent_id {agent_id!r} is reserved for --peer {holder}"
        intruder = self.links.get(agent_id)
        if intruder is not None and not intruder.dialled:
            self.stderr(f"protomcp: bridge: peer {agent_id} dialled in under the id of --peer {url}: cut off")
            self._end_link(intruder)
            self._bound.pop(agent_id, None)  # the id is the --peer's from now on
            if self._tg is not None:
                self._tg.start_soon(
                    intruder.conn.close, f"agent_id {agent_id!r} is reserved for a configured peer"
                )
        return ""

    async def accept(self, conn: Conn, credential: str = "") -> None:
        """A peer dialled /bridge with `credential` (the name of what it authenticated with):
        its handshake, then the link."""
        try:
            with anyio.fail_after(HANDSHAKE_TIMEOUT):
                text = await conn.receive()
            hello = parse_message(text)
        except (TimeoutError, ConnectionError):
            return
        except InvalidMessage as exc:
            await conn.send(self._error(ErrorCode.INTERNAL_ERROR, str(exc), "invalid_message").to_json())
            await conn.close("invalid message")
            return
        if not isinstance(hello, HandshakeRequest):
            refusal = self._error(
                ErrorCode.UNAUTHORIZED,
                "handshake first: send a handshake_request",
                "unauthorized",
                receiver_id=hello.sender_id,
                correlation_id=hello.message_id,
            )
            await conn.send(refusal.to_json())
            await conn.close("no handshake")
            return
        peer = hello.payload
        problem = self._refusal(peer.agent_id)
        if not problem or peer.agent_id in self.links:  # say why it may not be that id at all first
            problem = self._claim_refusal(peer.agent_id, credential) or problem
        caps = self.capabilities()
        if problem:
            caps.metadata["reason"] = problem
            await conn.send(Make.create_handshake_response(self.me, hello, caps, accepted=False).to_json())
            self.stderr(f"protomcp: bridge: refused a handshake: {problem}")
            await conn.close(problem)
            return
        self._bind(peer.agent_id, credential)  # before any await: no other token takes it meanwhile
        try:
            await conn.send(Make.create_handshake_response(self.me, hello, caps, accepted=True).to_json())
            reason = await self._serve_link(conn, peer, "")
        finally:
            self._release_later(peer.agent_id, credential)
        self.stderr(f"protomcp: bridge: peer {peer.agent_id} went away ({reason})")

    def _claim_refusal(self, agent_id: str, credential: str) -> str:
        """Why a peer dialling in with `credential` may not be `agent_id` ("": it may)."""
        reserved = self._reserved_refusal(agent_id)
        if reserved:
            return reserved
        allowed = self._claims.get(credential)
        if allowed is not None and agent_id not in allowed:
            return f"{credential} may claim only agent_id {', '.join(sorted(allowed))}, not {agent_id!r}"
        holder = self._bound.get(agent_id)
        if holder is not None and holder != credential:
            grace = self.settings.rebind_grace
            return (
                f"agent_id {agent_id!r} is bound to another bridge token (while its link is open, "
                f"and {grace:g}s after it closes)"
            )
        return ""

    def _reserved_refusal(self, agent_id: str) -> str:
        reserved = self._reserved.get(agent_id)
        if reserved is None:
            return ""
        return (
            f"agent_id {agent_id!r} is reserved for the configured peer {reserved} (--peer); "
            "a peer dialling in cannot claim it"
        )

    def _bind(self, agent_id: str, credential: str) -> None:
        self._bound[agent_id] = credential
        release = self._releases.pop(agent_id, None)
        if release is not None:  # its peer is back within the grace
            release.cancel()

    def _release_later(self, agent_id: str, credential: str) -> None:
        """Free the id `rebind_grace` seconds after its inbound link closed (counted from the
        last close), unless it is back."""
        if self._bound.get(agent_id) != credential or self._tg is None:
            return
        earlier = self._releases.pop(agent_id, None)
        if earlier is not None:
            earlier.cancel()
        scope = self._releases[agent_id] = anyio.CancelScope()
        self._tg.start_soon(self._release, agent_id, credential, scope)

    async def _release(self, agent_id: str, credential: str, scope: anyio.CancelScope) -> None:
        with scope:
            await anyio.sleep(self.settings.rebind_grace)
            if self._releases.get(agent_id) is scope:
                del self._releases[agent_id]
            if agent_id in self.links or self._bound.get(agent_id) != credential:
                return
            del self._bound[agent_id]
            self.stderr(f"protomcp: bridge: agent_id {agent_id} is free again (its link closed)")

    def _refusal(self, agent_id: str) -> str:
        if not AGENT_ID.match(agent_id):
            return f"agent_id {agent_id!r} must be a letter then letters, digits, _ or - (it names tools)"
        if agent_id == self.me:
            return f"agent_id {agent_id!r} is this host's own"
        if agent_id in self.links:
            return f"peer {agent_id!r} is connected already"
        return ""

    async def _serve_link(self, conn: Conn, peer: AgentCapabilities, dialled: str) -> str:
        """A handshaken link until it closes; returns why it closed."""
        problem = self._refusal(peer.agent_id)
        if not dialled:  # a --peer's dial may have learned the id while the handshake was answered
            problem = problem or self._reserved_refusal(peer.agent_id)
        if problem:
            await conn.close(problem)
            return problem
        client = LocalClient(self.sessions, f"peer {peer.agent_id}")
        link = Link(conn, peer, client, dialled)
        self.links[link.peer_id] = link
        reason = "its connection closed"
        try:
            await client.open()
            label = PEER_PREFIX + link.peer_id
            if label not in self.sources:
                self.sources[label] = PeerSource(self, link.peer_id)
            self._offer(link.peer_id, peer.metadata.get("mcp_tools"), peer.tools)
            self.stderr(
                f"protomcp: bridge: peer {link.peer_id} connected ({peer.agent_name or link.peer_id}"
                f"{', ' + peer.agent_role if peer.agent_role else ''}; {len(peer.tools)} tools)"
            )
            self.connected.set()
            while link.open:
                try:
                    text = await conn.receive()
                except ConnectionError:
                    break
                if not link.open:  # cut off meanwhile (its id is a configured peer's)
                    break
                try:
                    message = parse_message(text)
                except InvalidMessage as exc:
                    await link.send(
                        self._error(ErrorCode.INTERNAL_ERROR, str(exc), "invalid_message", link.peer_id)
                    )
                    continue
                await self._dispatch(link, message)
        finally:
            self._end_link(link)
        return reason

    def _end_link(self, link: Link) -> None:
        if not link.open:  # ended already (a peer cut off, whose reader ends it again)
            return
        link.open = False
        if self.links.get(link.peer_id) is link:
            del self.links[link.peer_id]
        for message_id, future in list(link.pending.items()):
            if not future.done():
                future.set_result(
                    self._error(
                        ErrorCode.INTERNAL_ERROR,
                        f"peer {link.peer_id} went away before it answered",
                        "peer_gone",
                        correlation_id=message_id,
                    )
                )
        link.pending.clear()
        for scope in link.inbound.values():
            scope.cancel()
        dropped = self.gate.discard(lambda item: item[0] is link)
        del dropped  # requests of a gone peer: nobody to answer
        self._settle()
        self._offer(link.peer_id, [], [])  # its tools leave the list (list_changed)
        link.client.close()

    def _offer(self, peer_id: str, mcp_tools: Any, names: list[str]) -> None:
        """Serve a peer's tools as PEERID_<name>."""
        definitions = []
        served: dict[str, str] = {}
        described = {t.get("name"): t for t in mcp_tools or [] if isinstance(t, dict)}
        for name in names:
            tool = described.get(name) or {"name": name, "inputSchema": {"type": "object"}}
            definition = pb.ToolDefinition(
                name=f"{peer_id}_{name}",
                description=str(tool.get("description") or f"{name} on peer {peer_id}"),
                input_schema_json=orjson.dumps(tool.get("inputSchema") or {"type": "object"}).decode(),
                title=str(tool.get("title") or ""),
                tags=["peer", peer_id],
                task_support_mode="forbidden",
            )
            if tool.get("annotations"):
                definition.annotations_json = orjson.dumps(tool["annotations"]).decode()
            definitions.append(definition)
            served[definition.name] = name
        self._peer_tools[peer_id] = served
        try:
            self.events.loaded(PEER_PREFIX + peer_id, Loaded(definitions))
        except ValueError as exc:  # a clash with a local tool: the peer's tools are not served
            self.stderr(f"protomcp: bridge: the tools of peer {peer_id} are not served: {exc}")

    # -- messages from a peer ---------------------------------------------------------------
    async def _dispatch(self, link: Link, message: BaseMessage) -> None:
        if message.receiver_id not in (None, self.me):
            if not isinstance(message, NotificationMessage):
                await link.send(
                    self._error(
                        ErrorCode.INTERNAL_ERROR,
                        f"this is agent {self.me!r}, not {message.receiver_id!r} (no multi-hop routing)",
                        "wrong_receiver",
                        link.peer_id,
                        message.message_id,
                    )
                )
            return
        if isinstance(message, RequestMessage):
            if self.draining:
                await link.send(
                    self._error(
                        ErrorCode.INTERNAL_ERROR,
                        f"agent {self.me!r} is stopping: request not started",
                        "stopping",
                        link.peer_id,
                        message.message_id,
                    )
                )
            elif len(self.gate) >= MAX_QUEUED:  # a flood waits in memory only up to a bound
                await link.send(
                    self._error(
                        ErrorCode.INTERNAL_ERROR,
                        f"agent {self.me!r} is busy: {MAX_QUEUED} requests wait",
                        "busy",
                        link.peer_id,
                        message.message_id,
                    )
                )
            elif self.gate.submit(message.priority, (link, message)) is not None:
                self._start(link, message)
        elif isinstance(message, ResponseMessage | ErrorMessage):
            future = link.pending.get(message.correlation_id or "")
            if future is not None and not future.done():
                future.set_result(message)
            elif isinstance(message, ErrorMessage):
                details = message.payload
                code = details.error_code.value
                self.stderr(f"protomcp: bridge: peer {link.peer_id}: {code}: {details.error_message}")
        elif isinstance(message, NotificationMessage):
            if message.payload.event_type == TOOLS_CHANGED:
                data = message.payload.data
                link.peer.tools = [str(n) for n in data.get("tools") or []]
                link.peer.metadata["mcp_tools"] = data.get("mcp_tools") or []
                self._offer(link.peer_id, link.peer.metadata["mcp_tools"], link.peer.tools)
            else:
                self.on_event(message)
        else:  # a second handshake
            await link.send(
                self._error(
                    ErrorCode.INTERNAL_ERROR,
                    "this link is handshaken already",
                    "protocol",
                    link.peer_id,
                    message.message_id,
                )
            )

    def _start(self, link: Link, message: RequestMessage) -> None:
        assert self._tg is not None
        self._tg.start_soon(self._execute, link, message)

    async def _execute(self, link: Link, message: RequestMessage) -> None:
        try:
            with anyio.CancelScope() as scope:
                link.inbound[message.message_id] = scope
                reply = await self._run(link, message)
                if link.open:
                    await link.send(reply)
        except Exception as exc:
            self.stderr(f"protomcp: bridge: answering peer {link.peer_id}: {_describe(exc)}")
        finally:
            link.inbound.pop(message.message_id, None)
            following = self.gate.finish()
            if following is not None:
                self._start(*following)
            self._settle()

    async def _run(self, link: Link, message: RequestMessage) -> BaseMessage:
        request = message.payload
        name = request.tool_name
        local = {tool.name: tool for tool in self.local_tools()}
        tool = local.get(name)
        if tool is None:
            return self._error(
                ErrorCode.TOOL_NOT_FOUND,
                f"no tool {name!r} on agent {self.me!r}",
                "not_found",
                link.peer_id,
                message.message_id,
                {"tool_name": name, "available_tools": sorted(local)},
            )
        problem = tool.validate(request.arguments)
        if problem:
            return self._error(
                ErrorCode.INVALID_ARGUMENTS,
                f"{name}: {problem}",
                "invalid_arguments",
                link.peer_id,
                message.message_id,
                {"tool_name": name},
            )
        timeout = request.timeout or self.call_timeout
        began = time.monotonic()
        with anyio.move_on_after(timeout) as deadline:
            answer = await link.client.request("tools/call", {"name": name, "arguments": request.arguments})
        if deadline.cancelled_caught:
            return self._error(
                ErrorCode.TIMEOUT,
                f"{name} did not finish within {timeout:g}s",
                "timeout",
                link.peer_id,
                message.message_id,
                {"tool_name": name, "timeout": timeout},
            )
        elapsed = time.monotonic() - began
        if "error" in answer:
            return self._error(
                ErrorCode.EXECUTION_FAILED,
                str(answer["error"].get("message")),
                "execution_failed",
                link.peer_id,
                message.message_id,
                {"tool_name": name},
            )
        result = answer["result"]
        failed = bool(result.get("isError"))
        response = ToolResponse(
            success=not failed, result=result, execution_time=elapsed, error=_text(result) if failed else None
        )
        return Make.create_response(self.me, message, response)

    def _error(
        self,
        code: ErrorCode,
        text: str,
        kind: str,
        receiver_id: str | None = None,
        correlation_id: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> ErrorMessage:
        return Make.create_error(
            self.me,
            code,
            text,
            receiver_id=receiver_id,
            correlation_id=correlation_id,
            error_type=kind,
            details=details,
        )

    # -- calls to a peer ---------------------------------------------------------------------
    async def call(
        self, peer_id: str, served: str, arguments: dict[str, Any], priority: MessagePriority
    ) -> pb.CallToolResponse:
        """Run a peer's tool; an `error` message or a lost link raises PeerCallFailed."""
        link = self.links.get(peer_id)
        if link is None:
            raise PeerCallFailed(ErrorCode.INTERNAL_ERROR, f"peer {peer_id} is not connected")
        name = self._peer_tools.get(peer_id, {}).get(served, served)
        timeout = self.call_timeout
        message = Make.create_request(
            self.me, peer_id, ToolRequest(tool_name=name, arguments=arguments, timeout=timeout), priority
        )
        future: asyncio.Future[BaseMessage] = asyncio.get_running_loop().create_future()
        link.pending[message.message_id] = future
        try:
            await link.send(message)
            with anyio.move_on_after((timeout or 3600.0) + 5.0) as waited:
                reply = await future
        except (ConnectionError, OSError) as exc:
            raise PeerCallFailed(
                ErrorCode.INTERNAL_ERROR, f"peer {peer_id} went away ({_describe(exc)})"
            ) from None
        finally:
            link.pending.pop(message.message_id, None)
            self._settle()
        if waited.cancelled_caught:
            raise PeerCallFailed(ErrorCode.TIMEOUT, f"peer {peer_id} did not answer {name} in time")
        if isinstance(reply, ErrorMessage):
            raise PeerCallFailed(reply.payload.error_code, reply.payload.error_message)
        assert isinstance(reply, ResponseMessage)
        return _call_response(reply.payload)


class PeerCallFailed(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code.value}: {message}")
        self.code = code


class PeerSource:
    """A peer's tools as the bridge sees a tool file's processes (`ToolSource`)."""

    def __init__(self, hub: PeerHub, peer_id: str) -> None:
        self.hub = hub
        self.peer_id = peer_id
        self._running: dict[str, anyio.CancelScope] = {}
        self._ids = itertools.count(1)

    def start(self, envelope: pb.Envelope, leg: Leg) -> None:
        if envelope.WhichOneof("msg") != "call_tool" or self.hub._tg is None:
            leg.failed(f"peer {self.peer_id} serves tools only")
            return
        request_id = f"p{next(self._ids)}"
        scope = self._running[request_id] = anyio.CancelScope()
        leg.sent(self, request_id)
        self.hub._tg.start_soon(self._call, envelope.call_tool, leg, request_id, scope)

    async def _call(
        self, request: pb.CallToolRequest, leg: Leg, request_id: str, scope: anyio.CancelScope
    ) -> None:
        reply: pb.CallToolResponse | None = None
        failure = ""
        with scope:
            try:
                arguments = orjson.loads(request.arguments_json) if request.arguments_json else {}
                reply = await self.hub.call(self.peer_id, request.name, arguments, MessagePriority.NORMAL)
            except PeerCallFailed as exc:
                failure = f"peer {self.peer_id}: {exc}"
        if self._running.pop(request_id, None) is None:
            return  # dropped: nobody waits for it
        if reply is not None:
            leg.answered(pb.Envelope(call_result=reply), None, True)
        else:
            leg.failed(failure)

    def drop(self, request_id: str, cancel: bool = True) -> None:
        """The call is over here (cancelled, timed out): stop waiting. The bridge protocol has no way to
        cancel a request on the peer; its answer, when it comes, is dropped."""
        scope = self._running.pop(request_id, None)
        if scope is not None:
            scope.cancel()

    def notify(self, envelope: pb.Envelope) -> None:
        """Notifications for tool processes (roots changed) do not go to peers."""

    def ready_channel(self) -> None:
        return None

    async def channel(self) -> None:
        return None

    async def stop(self, grace: float) -> None:
        for scope in self._running.values():
            scope.cancel()


class BridgeTools:
    """The bridge's own tools: `bridge_notify` (send a notification to one peer or all) and
    `bridge_peers` (who is connected, with their capabilities)."""

    def __init__(self, hub: PeerHub) -> None:
        self.hub = hub

    @staticmethod
    def definitions() -> list[pb.ToolDefinition]:
        notify_schema = {
            "type": "object",
            "properties": {
                "event_type": {"type": "string", "description": "What happened, e.g. agent_status_changed"},
                "data": {"type": "object", "description": "The event's data"},
                "receiver_id": {"type": ["string", "null"], "description": "One peer's agent id (null: all)"},
                "priority": {
                    "type": "string",
                    "enum": [p.value for p in MessagePriority],
                    "default": "normal",
                },
            },
            "required": ["event_type"],
            "additionalProperties": False,
        }
        return [
            pb.ToolDefinition(
                name="bridge_notify",
                description="Send a notification to one peer host of the swarm (receiver_id) or to all.",
                input_schema_json=orjson.dumps(notify_schema).decode(),
                tags=["bridge"],
            ),
            pb.ToolDefinition(
                name="bridge_peers",
                description="The peer hosts connected over the bridge, with their capabilities.",
                input_schema_json=orjson.dumps({"type": "object", "additionalProperties": False}).decode(),
                annotations_json=orjson.dumps({"readOnlyHint": True}).decode(),
                tags=["bridge"],
            ),
        ]

    def start(self, envelope: pb.Envelope, leg: Leg) -> None:
        if envelope.WhichOneof("msg") != "call_tool" or self.hub._tg is None:
            leg.failed("the bridge serves tools only")
            return
        self.hub._tg.start_soon(self._call, envelope.call_tool, leg)

    async def _call(self, request: pb.CallToolRequest, leg: Leg) -> None:
        arguments = orjson.loads(request.arguments_json) if request.arguments_json else {}
        try:
            if request.name == "bridge_notify":
                sent = await self.hub.notify(
                    arguments["event_type"],
                    arguments.get("data") or {},
                    arguments.get("receiver_id"),
                    MessagePriority(arguments.get("priority") or "normal"),
                )
                value: Any = {"sent_to": sent}
            else:
                value = {
                    "agent_id": self.hub.me,
                    "peers": [link.peer.model_dump() for link in self.hub.links.values()],
                }
        except LookupError as exc:
            response = pb.CallToolResponse(
                is_error=True, result_json=orjson.dumps([_block(str(exc))]).decode()
            )
        else:
            text = orjson.dumps(value).decode()
            response = pb.CallToolResponse(result_json=orjson.dumps([_block(text)]).decode())
        if leg.live:
            leg.answered(pb.Envelope(call_result=response), None, True)

    def notify(self, envelope: pb.Envelope) -> None: ...

    def ready_channel(self) -> None:
        return None

    async def channel(self) -> None:
        return None

    async def stop(self, grace: float) -> None: ...


class ClientConn:
    """The dialling end: a `websockets` client connection."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws

    async def send(self, text: str) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            await self.ws.send(text)
        except ConnectionClosed as exc:
            raise ConnectionError(str(exc)) from None

    async def receive(self) -> str:
        from websockets.exceptions import ConnectionClosed

        try:
            data = await self.ws.recv()
        except ConnectionClosed as exc:
            raise ConnectionError(str(exc)) from None
        return data if isinstance(data, str) else data.decode()

    async def close(self, reason: str = "") -> None:
        await self.ws.close(1000, reason[:120])


def _call_response(response: ToolResponse) -> pb.CallToolResponse:
    """A peer's ToolResponse as the tool process answer the bridge expects."""
    result = response.result if isinstance(response.result, dict) else {}
    content = result.get("content")
    if not isinstance(content, list):  # another implementation's plain result
        content = [_block(orjson.dumps(response.result).decode() if response.result is not None else "")]
    if not response.success and response.error and not content:
        content = [_block(response.error)]
    answer = pb.CallToolResponse(is_error=not response.success, result_json=orjson.dumps(content).decode())
    if isinstance(result.get("structuredContent"), dict):
        answer.structured_content_json = orjson.dumps(result["structuredContent"]).decode()
    return answer


def _block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _text(result: dict[str, Any]) -> str:
    return "\n".join(
        str(b.get("text")) for b in result.get("content") or [] if isinstance(b, dict) and "text" in b
    )


def _refusal_text(exc: BaseException) -> str:
    """What a peer's /bridge said when it refused the WebSocket handshake (why, which flag)."""
    body = getattr(getattr(exc, "response", None), "body", None)
    text = bytes(body).decode(errors="replace").strip() if isinstance(body, bytes | bytearray) else ""
    return f" ({text.splitlines()[0]})" if text else ""


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return (str(exc) or type(exc).__name__).splitlines()[0]
