"""Who may be which agent id (a peer's id names its tools, and it receives the arguments of calls
to them): the id of a `--peer` (given as `ID=URL`, or learned at its first handshake) is that
peer's alone, never claimed by a peer dialling in; a bridge token may be limited to the ids it may
claim; an inbound peer's id is bound to its token while its link is open and `rebind_grace`
seconds after (so only that token reconnects meanwhile), then free."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import anyio

from protomcp_host.peers.credentials import credential_name
from protomcp_host.peers.link import Background, Link
from protomcp_host.peers.settings import AGENT_ID, PeerSettings


class AgentIds:
    def __init__(
        self,
        settings: PeerSettings,
        links: Mapping[str, Link],
        background: Background,
        stderr: Callable[[str], None],
    ) -> None:
        self.me = settings.agent_id
        self.peer_ids = settings.peer_ids
        self.rebind_grace = settings.rebind_grace
        self.links = links
        self.background = background
        self.stderr = stderr
        # agent id -> the --peer URL it is reserved for (given as ID=URL, or learned when dialled)
        self._reserved: dict[str, str] = {id_: url for url, id_ in settings.peer_ids.items()}
        self._claims = {credential_name(var): ids for var, ids in settings.claims.items()}
        self._bound: dict[str, str] = {}  # agent id -> the credential of the inbound peer holding it
        self._releases: dict[str, anyio.CancelScope] = {}  # ids to free once the grace is over

    def refusal(self, agent_id: str) -> str:
        """Why no peer may be `agent_id` now ("": one may)."""
        if not AGENT_ID.match(agent_id):
            return f"agent_id {agent_id!r} must be a letter then letters, digits, _ or - (it names tools)"
        if agent_id == self.me:
            return f"agent_id {agent_id!r} is this host's own"
        if agent_id in self.links:
            return f"peer {agent_id!r} is connected already"
        return ""

    def reserve(self, url: str, agent_id: str) -> str:
        """Reserve the id a dialled peer answered with for its URL; or why it cannot have it."""
        expected = self.peer_ids.get(url)
        if expected is not None and agent_id != expected:
            return f"the peer at {url} says it is {agent_id!r}, not {expected!r} (--peer {expected}={url})"
        holder = self._reserved.setdefault(agent_id, url)
        if holder != url:
            return f"agent_id {agent_id!r} is reserved for --peer {holder}"
        return ""

    def reserved_refusal(self, agent_id: str) -> str:
        reserved = self._reserved.get(agent_id)
        if reserved is None:
            return ""
        return (
            f"agent_id {agent_id!r} is reserved for the configured peer {reserved} (--peer); "
            "a peer dialling in cannot claim it"
        )

    def claim_refusal(self, agent_id: str, credential: str) -> str:
        """Why a peer dialling in with `credential` may not be `agent_id` ("": it may)."""
        reserved = self.reserved_refusal(agent_id)
        if reserved:
            return reserved
        allowed = self._claims.get(credential)
        if allowed is not None and agent_id not in allowed:
            return f"{credential} may claim only agent_id {', '.join(sorted(allowed))}, not {agent_id!r}"
        holder = self._bound.get(agent_id)
        if holder is not None and holder != credential:
            return (
                f"agent_id {agent_id!r} is bound to another bridge token (while its link is open, "
                f"and {self.rebind_grace:g}s after it closes)"
            )
        return ""

    def bind(self, agent_id: str, credential: str) -> None:
        self._bound[agent_id] = credential
        release = self._releases.pop(agent_id, None)
        if release is not None:  # its peer is back within the grace
            release.cancel()

    def unbind(self, agent_id: str) -> None:
        """The id is a --peer's from now on."""
        self._bound.pop(agent_id, None)

    def release_later(self, agent_id: str, credential: str) -> None:
        """Free the id `rebind_grace` seconds after its inbound link closed (counted from the
        last close), unless it is back."""
        if self._bound.get(agent_id) != credential or not self.background.running:
            return
        earlier = self._releases.pop(agent_id, None)
        if earlier is not None:
            earlier.cancel()
        scope = self._releases[agent_id] = anyio.CancelScope()
        self.background.start_soon(self._release, agent_id, credential, scope)

    async def _release(self, agent_id: str, credential: str, scope: anyio.CancelScope) -> None:
        with scope:
            await anyio.sleep(self.rebind_grace)
            if self._releases.get(agent_id) is scope:
                del self._releases[agent_id]
            if agent_id in self.links or self._bound.get(agent_id) != credential:
                return
            del self._bound[agent_id]
            self.stderr(f"protomcp: bridge: agent_id {agent_id} is free again (its link closed)")
