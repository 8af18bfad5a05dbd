"""The Streamable HTTP app driven in-process (no sockets, a host without tool files): stream
mechanics that need short timings, e.g. keep-alive comments and takeover by a resumption."""

from __future__ import annotations

from typing import Any

import anyio
import orjson
import pytest

from protomcp_host.app import Host
from protomcp_host.transports.http.streamable import HttpOptions, StreamableHTTP
from tests.support.http import INITIALIZE, INITIALIZED

pytestmark = pytest.mark.fast  # starts no process


class Exchange:
    """One ASGI request: its body, what the app sent back, and a way to hang up."""

    def __init__(self, method: str, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        raw = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        raw.update(headers or {})
        self.scope = {
            "type": "http",
            "method": method,
            "path": "/mcp",
            "headers": [(k.encode(), v.encode()) for k, v in raw.items()],
        }
        self.body = body
        self.sent: list[dict[str, Any]] = []
        self.changed = anyio.Event()
        self.hung_up = anyio.Event()
        self._body_given = False

    async def receive(self) -> dict[str, Any]:
        if not self._body_given:
            self._body_given = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.hung_up.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        self.changed.set()
        self.changed = anyio.Event()

    @property
    def status(self) -> int:
        return self.sent[0]["status"]

    def headers(self) -> dict[bytes, bytes]:
        return dict(self.sent[0]["headers"])

    def text(self) -> str:
        return b"".join(m.get("body", b"") for m in self.sent[1:]).decode()

    async def wait_for(self, needle: str) -> None:
        with anyio.fail_after(10):
            while needle not in self.text():
                await self.changed.wait()


async def test_keep_alive_comments_and_takeover() -> None:
    host = Host([], stderr=lambda _: None)
    app = StreamableHTTP(host, HttpOptions(keepalive=0.01))
    init = Exchange("POST", INITIALIZE)
    await app(init.scope, init.receive, init.send)
    assert init.status == 200
    session = init.headers()[b"mcp-session-id"].decode()
    notified = Exchange("POST", INITIALIZED, {"mcp-session-id": session})
    await app(notified.scope, notified.receive, notified.send)
    assert notified.status == 202

    get = Exchange("GET", headers={"mcp-session-id": session, "accept": "text/event-stream"})
    async with anyio.create_task_group() as tg:
        tg.start_soon(app, get.scope, get.receive, get.send)
        await get.wait_for(": keep-alive")  # a quiet stream still shows it is alive
        host.routers[0].log("warning", "test", "to the GET stream")
        await get.wait_for("to the GET stream")
        last_id = [line for line in get.text().splitlines() if line.startswith("id: ")][-1][4:]
        # A resumption takes the stream over; the old connection's response ends.
        resumed = Exchange(
            "GET",
            headers={"mcp-session-id": session, "accept": "text/event-stream", "last-event-id": last_id},
        )
        tg.start_soon(app, resumed.scope, resumed.receive, resumed.send)
        with anyio.fail_after(10):
            while not (get.sent and get.sent[-1].get("more_body") is False):
                await get.changed.wait()
        host.routers[0].log("warning", "test", "after the takeover")
        await resumed.wait_for("after the takeover")
        assert "to the GET stream" not in resumed.text()  # already delivered before last_id
        message = next(line for line in resumed.text().splitlines() if "after the takeover" in line)
        assert orjson.loads(message[len("data: ") :])["params"]["data"] == "after the takeover"
        resumed.hung_up.set()
        get.hung_up.set()
    app.close_all()


async def test_both_uvicorn_protocols_batch_writes() -> None:
    """The HTTP app under uvicorn with each HTTP/1.1 protocol protomcp may pick (httptools when
    installed, else h11), on loopback: an answer arrives whole through the batching transport."""
    import httpx2
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from protomcp_host.transports.http.batching import batching
    from protomcp_host.transports.http.server import HttpSettings, _Server, bind, build_app

    protocols = [H11Protocol]
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        protocols.append(HttpToolsProtocol)
    except ImportError:  # a dependency, but h11 is what uvicorn falls back to without it
        pass
    for protocol in protocols:
        host = Host([], stderr=lambda _: None)
        app, owner = build_app(host, HttpSettings())
        sock = bind("127.0.0.1", 0)
        config = uvicorn.Config(app, lifespan="off", log_config=None, http=batching(protocol))
        server = _Server(config)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(server.serve, [sock])
                async with httpx2.AsyncClient(timeout=10) as client:
                    headers = {
                        "accept": "application/json, text/event-stream",
                        "content-type": "application/json",
                    }
                    # The socket listens already: the request waits in its backlog until uvicorn serves.
                    response = await client.post(url, content=INITIALIZE, headers=headers)
                assert response.status_code == 200, protocol
                assert response.json()["result"]["serverInfo"]["name"]
                assert response.headers["mcp-session-id"]
                owner.close_all()
                server.should_exit = True
        sock.close()
