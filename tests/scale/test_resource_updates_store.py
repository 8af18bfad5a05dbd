"""Resource updates on a host with a shared store (`--store` on a real redis-server): this host's
own subscribers, in both eras (2025-11-25 `resources/subscribe`, 2026-07-28
`subscriptions/listen`), hear of a tool's update at once and once, whether Redis is up, down, or
back (when what waited for it goes out and comes back on the bus)."""

from __future__ import annotations

import os
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.cluster import REDIS, start_redis, stop
from tests.support.hosts import TOOLS
from tests.support.installed import missing
from tests.support.ports import free_port

FILE = TOOLS / "matrix" / "tools.py"  # touch(uri): resource_updated(uri)
BUS = "protomcp:bus:0"  # the store's bus channel (store/redis_store.py)
SUB = "io.modelcontextprotocol/subscriptionId"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
# resources of FILE's template matrix://flush/{key}
UP, DOWN, BACK, MARKER = (f"matrix://flush/{key}" for key in ("up", "down", "back", "marker"))
URIS = [UP, DOWN, BACK, MARKER]

Message = dict[str, Any]


class Heard:
    """Every message the host wrote, read in order; the resource updates counted per era."""

    def __init__(self, host: Any) -> None:
        self.host = host
        self.updates: Counter[tuple[str, str]] = Counter()  # (era, uri) -> notifications
        self.last: Message = {}

    def until(self, done: Callable[[], bool]) -> None:
        """Read until `done()` (checked before each read)."""
        while not done():
            message = self.last = self.host.recv(timeout=15)
            if message.get("method") == "notifications/resources/updated":
                era = "modern" if SUB in message["params"].get("_meta", {}) else "stateful"
                self.updates[era, message["params"]["uri"]] += 1

    def both_eras_heard(self, uri: str) -> None:
        self.until(lambda: self.updates["stateful", uri] >= 1 and self.updates["modern", uri] >= 1)

    def touch(self, request_id: int, uri: str) -> None:
        """The tool tells of an update; each era here hears of it."""
        self.host.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": "touch", "arguments": {"uri": uri}},
            }
        )
        self.until(lambda: self.last.get("id") == request_id)
        self.both_eras_heard(uri)


def _bus(port: int) -> Any:
    import redis

    pubsub = redis.Redis(port=port).pubsub()
    pubsub.subscribe(BUS)
    assert pubsub.get_message(timeout=10)["type"] == "subscribe"
    return pubsub


def _flush(heard: Heard, bus: Any, port: int, uri: str) -> None:
    """Wait until the host's own message for `uri` passed on the bus, then send a marker after
    it: once the host delivers the marker, every echo of its own messages came back before."""
    import redis

    sent = b"resource_updated\0" + uri.encode()  # (then NUL and the host's id)
    deadline = time.monotonic() + 15
    while True:  # (the bus carries other messages too: the hosts' heartbeats)
        message = bus.get_message(timeout=max(0.0, deadline - time.monotonic()))
        assert message is not None, f"the host's update of {uri} never reached the bus"
        data = bytes(message["data"]) if message["type"] == "message" else b""
        if data == sent or data.startswith(sent + b"\0"):
            break
    redis.Redis(port=port).publish(BUS, b"resource_updated\0" + MARKER.encode())  # (as from another host)
    heard.both_eras_heard(MARKER)
    heard.updates.pop(("stateful", MARKER))
    heard.updates.pop(("modern", MARKER))


def test_this_hosts_subscribers_hear_each_update_once_whether_redis_is_up_or_down(
    raw_host: Any, tmp_path: Path
) -> None:
    if not os.access(REDIS, os.X_OK):
        missing("redis-server is not installed (Debian: apt-get install redis-server)")
    port = free_port()
    redis_server = start_redis(port, tmp_path / "redis")
    restarted = None
    try:
        host = raw_host("run", str(FILE), "--store", f"redis://127.0.0.1:{port}/0")
        heard = Heard(host)
        host.initialize("2025-11-25")
        for n, uri in enumerate(URIS):
            assert "result" in host.request(f"sub-{n}", "resources/subscribe", {"uri": uri})
        listen = {"notifications": {"resourceSubscriptions": URIS}, "_meta": META}
        host.send({"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen", "params": listen})
        heard.until(lambda: heard.last.get("method") == "notifications/subscriptions/acknowledged")

        bus = _bus(port)
        heard.touch(1, UP)  # Redis up
        _flush(heard, bus, port, UP)

        subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True, check=False)
        host.wait_stderr("is unreachable")
        heard.touch(2, DOWN)  # Redis down: heard here all the same

        restarted = start_redis(port, tmp_path / "redis-again")
        host.wait_stderr("is reachable again")
        bus = _bus(port)
        heard.touch(3, BACK)  # goes out after what waited for Redis: DOWN
        _flush(heard, bus, port, BACK)

        expected = {(era, uri): 1 for era in ("stateful", "modern") for uri in (UP, DOWN, BACK)}
        assert dict(heard.updates) == expected
    finally:
        stop(redis_server)
        if restarted is not None:
            stop(restarted)
