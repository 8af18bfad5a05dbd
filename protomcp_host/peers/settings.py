"""PeerSettings: how this host takes part in the bridge with its peers (--agent-id and the
options beside it), the one copy of their defaults; AGENT_ID, what an agent id may be."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

AGENT_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class PeerSettings:
    """(Not slotted: `PeerSettings.rebind_grace` is the default, for click.)"""

    agent_id: str
    agent_name: str = ""
    agent_role: str = ""
    peers: tuple[str, ...] = ()  # ws:// URLs to dial
    peer_ids: Mapping[str, str] = field(default_factory=dict)  # URL -> the agent id it must have (ID=URL)
    token: str = ""  # bearer token sent to the peers dialled
    token_env: str = ""  # the variable `token` was read from (--peer-token-env)
    credentials: Mapping[str, str] = field(default_factory=dict)  # /bridge: VAR -> a token peers send
    claims: Mapping[str, frozenset[str]] = field(default_factory=dict)  # VAR -> the only ids it may claim
    rebind_grace: float = 30.0  # seconds an inbound peer's id stays its token's after its link closed
    max_in_flight: int = 16  # peer requests run at once; the rest wait, by priority
