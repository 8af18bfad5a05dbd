"""`/healthz` for load balancers: readiness (200 when this host should get requests, 503 while
it starts, drains, has a tool file with no process serving, or cannot reach its store) and
`/healthz/live` (200 while the event loop answers at all). Neither needs credentials; neither
says more than the status, the pid, which files serve and whether the store answers."""

from __future__ import annotations

import orjson

from protomcp_host.transports.http.asgi import Receive, Scope, Send, respond_json
from protomcp_host.transports.ports import Sessions

READY_PATH = "/healthz"
LIVE_PATH = "/healthz/live"
NO_STORE = ((b"cache-control", b"no-store"),)


class Health:
    def __init__(self, host: Sessions) -> None:
        self.host = host

    async def ready(self, scope: Scope, receive: Receive, send: Send) -> None:
        ok, body = await self.host.health()
        await respond_json(send, 200 if ok else 503, orjson.dumps(body), NO_STORE)

    async def live(self, scope: Scope, receive: Receive, send: Send) -> None:
        await respond_json(send, 200, b'{"status":"alive"}', NO_STORE)
