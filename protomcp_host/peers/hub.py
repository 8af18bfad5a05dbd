"""This host and its peers: the links between them, over WebSocket (the bridge protocol).

`PeerHub` owns the links: those it dials (`--peer ws://HOST:PORT/bridge`, reconnected with
backoff: dial.py) and those peers dial to its `/bridge` endpoint (`accept`). A link starts with
the handshake (capabilities both ways, `accepted`); then each side may call the other's tools:

- a peer's tools are served here as `PEERID_<name>` (owner `peer PEERID`, a `PeerSource`,
  which the calls layer calls like a tool file's processes: source.py); a `request` goes out
  with a correlation id and the call's timeout, its `response` (or `error`) comes back to the
  call (link.py);
- a peer's `request` runs a local tool through a headless MCP session of this host, at most
  `max_in_flight` at once across peers, the rest queued by priority (requests.py);
- `notification`s: `tools_changed` (sent to every peer when the local tool list changes)
  updates that peer's tools; any other event is shown to this host's clients as a log message
  (logger `bridge`) and on stderr. `bridge_notify` (a tool of this host: tools.py) sends one,
  to one peer or all.

A link that closes fails its calls (`INTERNAL_ERROR`, peer went away), its tools leave the
list (`list_changed`), and requests it queued here are dropped. Who may be which agent id is
ids.py's to say.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from protomcp_host.peers.dial import Dialler
from protomcp_host.peers.ids import AgentIds
from protomcp_host.peers.link import HANDSHAKE_TIMEOUT, Background, Conn, Link, PeerCallFailed
from protomcp_host.peers.local import LocalClient
from protomcp_host.peers.messages import (
    PROTOCOL_VERSION,
    AgentCapabilities,
    BaseMessage,
    ErrorCode,
    ErrorMessage,
    HandshakeRequest,
    InvalidMessage,
    MCPBridgeProtocol,
    MessagePriority,
    NotificationMessage,
    RequestMessage,
    ResponseMessage,
    ToolRequest,
    parse_message,
)
from protomcp_host.peers.requests import PeerRequests
from protomcp_host.peers.settings import PeerSettings
from protomcp_host.peers.source import PEER_PREFIX, PeerSource, call_response, peer_tools
from protomcp_host.peers.tools import TOOLS_LABEL, PeerTools
from protomcp_host.processes.events import Loaded, ProcessEvents
from protomcp_host.transports.ports import Sessions
from protomcp_sdk.wire import envelope_pb2 as pb

if TYPE_CHECKING:
    from protomcp_host.calls.execution import ToolSource

TOOLS_CHANGED = "tools_changed"
Make = MCPBridgeProtocol


class PeerHub:
    def __init__(
        self,
        settings: PeerSettings,
        sessions: Sessions,
        events: ProcessEvents,
        sources: MutableMapping[str, ToolSource],
        *,
        call_timeout: float | None,
        on_event: Callable[[NotificationMessage], None],
        stderr: Callable[[str], None],
    ) -> None:
        self.settings = settings
        self.me = settings.agent_id
        self.sessions = sessions
        self.events = events
        self.sources = sources  # the host's sources of tools: the peers' join them
        self.call_timeout = call_timeout
        self.on_event = on_event
        self.stderr = stderr
        self.links: dict[str, Link] = {}
        self.connected = asyncio.Event()  # set whenever a link comes up (tests, diagnostics)
        self.background = Background()
        self.ids = AgentIds(settings, self.links, self.background, stderr)
        self.requests = PeerRequests(
            self.me, settings.max_in_flight, self.local_tools, call_timeout, self.background, stderr
        )
        self.dialler = Dialler(settings, self.capabilities, self._reserve, self._serve_link, stderr)
        self._peer_tools: dict[str, dict[str, str]] = {}  # peer id -> served name -> its name
        sources[TOOLS_LABEL] = PeerTools(self.me, self.links, self.notify, self.background)

    # -- lifecycle -------------------------------------------------------------------------
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self.background.tg = tg
            self.events.loaded(TOOLS_LABEL, Loaded(PeerTools.definitions()))
            for url in self.settings.peers:
                tg.start_soon(self.dialler.dial_forever, url)
            task_status.started()
            await anyio.sleep_forever()

    async def drain(self) -> None:
        """Refuse peers' new requests; return once theirs (running and queued) have been
        answered and this host's calls to peers are over (the caller bounds the wait)."""
        await self.requests.drain(lambda: list(self.links.values()))

    async def stop(self, grace: float) -> None:
        for link in list(self.links.values()):
            with anyio.move_on_after(1):
                await link.conn.close("the host is stopping")
        if self.background.tg is not None:
            self.background.tg.cancel_scope.cancel()

    # -- what this host offers its peers ------------------------------------------------------
    def capabilities(self) -> AgentCapabilities:
        tools = self.local_tools()
        return AgentCapabilities(
            agent_id=self.me,
            agent_name=self.settings.agent_name or self.me,
            agent_role=self.settings.agent_role,
            tools=[tool.name for tool in tools],
            version=PROTOCOL_VERSION,
            metadata={"mcp_tools": [tool.mcp for tool in tools]},
        )

    def local_tools(self) -> list[Any]:
        """The tools peers may call: this host's own (tool files, upstreams), not its peers'
        (the bridge protocol has no multi-hop routing) nor the peers' own tools, and not hidden ones."""
        return [
            tool
            for tool in self.sessions.catalog.visible()
            if not (str(tool.owner).startswith(PEER_PREFIX) or tool.owner == TOOLS_LABEL)
        ]

    def tools_changed(self) -> None:
        """The local tool list changed: tell every peer."""
        if not self.background.running or not self.links:
            return
        caps = self.capabilities()
        data = {"tools": caps.tools, "mcp_tools": caps.metadata["mcp_tools"]}
        for link in list(self.links.values()):
            message = Make.create_notification(self.me, TOOLS_CHANGED, data, receiver_id=link.peer_id)
            self.background.start_soon(link.send_quietly, message)

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
            await link.send_quietly(message)
        return [link.peer_id for link in targets]

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
        request = Make.create_request(
            self.me, peer_id, ToolRequest(tool_name=name, arguments=arguments, timeout=timeout), priority
        )
        try:
            response = await link.call(request, (timeout or 3600.0) + 5.0)
        finally:
            self.requests.settle()
        return call_response(response)

    # -- links -----------------------------------------------------------------------------
    def _reserve(self, url: str, agent_id: str) -> str:
        """The id a dialled peer answered with, reserved for its URL (a peer that dialled in
        holding it is cut off); or why it cannot have it."""
        problem = self.ids.reserve(url, agent_id)
        intruder = self.links.get(agent_id)
        if problem or intruder is None or intruder.dialled:
            return problem
        self.stderr(f"protomcp: bridge: peer {agent_id} dialled in under the id of --peer {url}: cut off")
        self._end_link(intruder)
        self.ids.unbind(agent_id)
        if self.background.running:
            reason = f"agent_id {agent_id!r} is reserved for a configured peer"
            self.background.start_soon(intruder.conn.close, reason)
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
            invalid = Make.create_error(
                self.me, ErrorCode.INTERNAL_ERROR, str(exc), error_type="invalid_message"
            )
            await conn.send(invalid.to_json())
            await conn.close("invalid message")
            return
        if not isinstance(hello, HandshakeRequest):
            refusal = Make.create_error(
                self.me,
                ErrorCode.UNAUTHORIZED,
                "handshake first: send a handshake_request",
                receiver_id=hello.sender_id,
                correlation_id=hello.message_id,
                error_type="unauthorized",
            )
            await conn.send(refusal.to_json())
            await conn.close("no handshake")
            return
        peer = hello.payload
        problem = self.ids.refusal(peer.agent_id)
        if not problem or peer.agent_id in self.links:  # say why it may not be that id at all first
            problem = self.ids.claim_refusal(peer.agent_id, credential) or problem
        caps = self.capabilities()
        if problem:
            caps.metadata["reason"] = problem
            await conn.send(Make.create_handshake_response(self.me, hello, caps, accepted=False).to_json())
            self.stderr(f"protomcp: bridge: refused a handshake: {problem}")
            await conn.close(problem)
            return
        self.ids.bind(peer.agent_id, credential)  # before any await: no other token takes it meanwhile
        try:
            await conn.send(Make.create_handshake_response(self.me, hello, caps, accepted=True).to_json())
            reason = await self._serve_link(conn, peer, "")
        finally:
            self.ids.release_later(peer.agent_id, credential)
        self.stderr(f"protomcp: bridge: peer {peer.agent_id} went away ({reason})")

    async def _serve_link(self, conn: Conn, peer: AgentCapabilities, dialled: str) -> str:
        """A handshaken link until it closes; returns why it closed."""
        problem = self.ids.refusal(peer.agent_id)
        if not dialled:  # a --peer's dial may have learned the id while the handshake was answered
            problem = problem or self.ids.reserved_refusal(peer.agent_id)
        if problem:
            await conn.close(problem)
            return problem
        client = LocalClient(self.sessions, f"peer {peer.agent_id}")
        link = Link(conn, peer, client, dialled)
        self.links[link.peer_id] = link
        try:
            await client.open()
            label = PEER_PREFIX + link.peer_id
            if label not in self.sources:
                self.sources[label] = PeerSource(link.peer_id, self.call, self.background)
            self._offer(link.peer_id, peer.metadata.get("mcp_tools"), peer.tools)
            self.stderr(
                f"protomcp: bridge: peer {link.peer_id} connected ({peer.agent_name or link.peer_id}"
                f"{', ' + peer.agent_role if peer.agent_role else ''}; {len(peer.tools)} tools)"
            )
            self.connected.set()
            await self._read(link)
        finally:
            self._end_link(link)
        return "its connection closed"

    async def _read(self, link: Link) -> None:
        """The link's messages, until it closes or is cut off."""
        while link.open:
            try:
                text = await link.conn.receive()
            except ConnectionError:
                return
            if not link.open:  # cut off meanwhile (its id is a configured peer's)
                return
            try:
                message = parse_message(text)
            except InvalidMessage as exc:
                await link.send(
                    Make.create_error(
                        self.me,
                        ErrorCode.INTERNAL_ERROR,
                        str(exc),
                        receiver_id=link.peer_id,
                        error_type="invalid_message",
                    )
                )
                continue
            await self._dispatch(link, message)

    def _end_link(self, link: Link) -> None:
        if not link.end(self.me):  # ended already (a peer cut off, whose reader ends it again)
            return
        if self.links.get(link.peer_id) is link:
            del self.links[link.peer_id]
        self.requests.discard(link)
        self.requests.settle()
        self._offer(link.peer_id, [], [])  # its tools leave the list (list_changed)
        link.client.close()

    def _offer(self, peer_id: str, mcp_tools: Any, names: list[str]) -> None:
        """Serve a peer's tools as PEERID_<name>."""
        definitions, self._peer_tools[peer_id] = peer_tools(peer_id, mcp_tools, names)
        try:
            self.events.loaded(PEER_PREFIX + peer_id, Loaded(definitions))
        except ValueError as exc:  # a clash with a local tool: the peer's tools are not served
            self.stderr(f"protomcp: bridge: the tools of peer {peer_id} are not served: {exc}")

    # -- messages from a peer ---------------------------------------------------------------
    async def _dispatch(self, link: Link, message: BaseMessage) -> None:
        if message.receiver_id not in (None, self.me):
            if not isinstance(message, NotificationMessage):
                text = f"this is agent {self.me!r}, not {message.receiver_id!r} (no multi-hop routing)"
                await self._refuse(link, message, text, "wrong_receiver")
            return
        if isinstance(message, RequestMessage):
            await self.requests.receive(link, message)
        elif isinstance(message, ResponseMessage | ErrorMessage):
            if not link.answer(message) and isinstance(message, ErrorMessage):
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
            await self._refuse(link, message, "this link is handshaken already", "protocol")

    async def _refuse(self, link: Link, message: BaseMessage, text: str, kind: str) -> None:
        refusal = Make.create_error(
            self.me,
            ErrorCode.INTERNAL_ERROR,
            text,
            receiver_id=link.peer_id,
            correlation_id=message.message_id,
            error_type=kind,
        )
        await link.send(refusal)
