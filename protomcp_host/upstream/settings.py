"""UpstreamSettings: what every upstream of one run is given, and the one copy of its bounds'
defaults (the run's startup timeout has its default in RunSettings)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UpstreamSettings:
    startup_timeout: float  # seconds to connect and list what it offers (RunSettings.startup_timeout)
    version: str = ""  # protomcp's, for the upstream's clientInfo ("": 0)
    hidden_env: frozenset[str] = (
        frozenset()
    )  # variables the host reads secrets from: kept from a stdio server
    restart_wait: float = 10.0  # seconds a call waits for a reconnect
    ping_interval: float = 1.0  # seconds between liveness pings of a connected upstream
    settle_wait: float = 2.0  # seconds a lost connection stays open for its requests' own outcomes
    # A dropped request the upstream leaves unanswered this long (stdio) gets the upstream restarted
    # once it is idle: until it is answered or then, every question that may be its is declined.
    cancel_grace: float = 60.0
