"""GET /metrics: the Prometheus text format (telemetry/prometheus.py), every worker in one scrape.

Who may scrape: a loopback client without a token, unless its request came through a proxy (it
carries Forwarded, X-Forwarded-For or X-Real-IP: a reverse proxy on the same machine connects
from loopback on behalf of anyone). Anyone else needs `Authorization: Bearer <token>` with the
token held by the variable --metrics-token-env names; without that option they get 403. The MCP
endpoint's credentials are neither needed nor accepted here (an MCP client is not an operator).
"""

from __future__ import annotations

import hmac

import anyio.to_thread

from protomcp_host.telemetry.multiprocess import FolderChanging
from protomcp_host.telemetry.prometheus import CONTENT_TYPE, PrometheusMetrics
from protomcp_host.transports.http.asgi import Receive, Scope, Send, header, respond
from protomcp_host.transports.http.guard import is_loopback
from protomcp_host.transports.ports import Sessions

METRICS_PATH = "/metrics"
FORWARDED = (b"forwarded", b"x-forwarded-for", b"x-real-ip")
TEXT = b"text/plain; charset=utf-8"
NO_STORE = ((b"cache-control", b"no-store"),)
CHANGING = b"Service Unavailable: workers died during each read of the metrics; scrape again\n"
NOT_HERE = (
    b"Forbidden: /metrics is served to loopback clients only (not through a proxy); "
    b"start the host with --metrics-token-env VAR to let scrapers elsewhere in with that token\n"
)
NO_TOKEN = b"Unauthorized: /metrics needs 'Authorization: Bearer <token>' (the --metrics-token-env token)\n"


class MetricsEndpoint:
    def __init__(self, host: Sessions, metrics: PrometheusMetrics, token: str | None) -> None:
        self.host = host
        self.metrics = metrics
        self.token = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _local(scope):
            if self.token is None:
                await respond(send, 403, NOT_HERE, content_type=TEXT)
                return
            if not self._token_given(scope):
                challenge = ((b"www-authenticate", b'Bearer realm="metrics"'),)
                await respond(send, 401, NO_TOKEN, content_type=TEXT, headers=challenge)
                return
        await self.host.health()  # (the store is pinged: protomcp_store_up is as of now)
        try:
            body = await anyio.to_thread.run_sync(self.metrics.scrape)  # (reading files: not on the loop)
        except FolderChanging:  # (a failed scrape, rather than totals counted wrong)
            await respond(send, 503, CHANGING, content_type=TEXT, headers=NO_STORE)
            return
        await respond(send, 200, body, content_type=CONTENT_TYPE.encode(), headers=NO_STORE)

    def _token_given(self, scope: Scope) -> bool:
        assert self.token is not None
        given = header(scope, b"authorization") or ""
        scheme, _, value = given.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token)


def _local(scope: Scope) -> bool:
    """The request came from this machine, and not through a proxy."""
    client = scope.get("client")
    if not client or not is_loopback(str(client[0])):
        return False
    headers = scope["headers"]
    return not any(name in FORWARDED for name, _ in headers)
