"""Resource updates (`ctx.resource_updated(uri)`) for every host of one store. This host's own
subscribers hear of an update at once, whatever the store's bus is doing (a Redis outage loses
nothing here); the other hosts hear of it through the bus. Each message names the host that sent
it, so a host skips its own when the bus brings it back: every subscriber hears of it once.

A message's payload is the URI, then NUL and the sender's id; a payload without NUL (from an
older host) is a URI from another host."""

from __future__ import annotations

import os
from collections.abc import Callable

from protomcp_host.store.base import Store

TOPIC = "resource_updated"  # bus topic


class ResourceUpdates:
    def __init__(self, store: Store, deliver: Callable[[str], None]) -> None:
        """`deliver(uri)` tells this host's subscribed sessions and listen streams."""
        self.store = store
        self.deliver = deliver
        self.origin = os.urandom(8).hex().encode()  # this host process (each --workers worker is one)

    def changed(self, uri: str) -> None:
        """A tool process here updated `uri`."""
        self.deliver(uri)
        self.store.publish(TOPIC, uri.encode() + b"\0" + self.origin)

    def on_bus(self, topic: str, payload: bytes) -> None:
        if topic != TOPIC:
            return
        uri, sep, origin = payload.rpartition(b"\0")
        if not sep:
            uri, origin = payload, b""
        if origin != self.origin:  # (our own was delivered when it was made)
            self.deliver(uri.decode(errors="replace"))
