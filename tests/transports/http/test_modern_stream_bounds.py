"""What a 2026-07-28 stream may hold for a client that does not read it, end to end through the
real host: an unread subscriptions/listen stream costs bounded memory (what its messages really
take, not their length) and is cut off with an error that says why; one client opens a bounded
number of listen streams."""

from __future__ import annotations

import http.client
import socket
import time
from contextlib import AsyncExitStack
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import orjson

from tests.support.hosts import TOOLS
from tests.support.http import ACCEPT, rpc, sse_events

FLOOD = str(TOOLS / "notify_flood.py")
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
NOTES = 200_000  # resource updates for a listener that reads none (up to ~800 MiB held before)


def _headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    if name is not None:
        headers["mcp-name"] = name
    return headers


def _listen(id_: str) -> bytes:
    wanted = {"resourceSubscriptions": ["flood://note"]}
    return rpc(id_, "subscriptions/listen", {"notifications": wanted, "_meta": META})


def _call(id_: int, name: str, arguments: dict[str, Any]) -> bytes:
    return rpc(id_, "tools/call", {"name": name, "arguments": arguments, "_meta": META})


def _peak_rss_mib(pid: int) -> float:
    """The most memory the process has held (VmHWM: its RSS's high-water mark)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _open_listen(url: str, id_: str) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    """A listen stream read by http.client, which reads only what it is asked for."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    connection.connect()
    assert connection.sock is not None
    connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)  # the kernel holds little
    connection.request("POST", parts.path, body=_listen(id_), headers=_headers("subscriptions/listen"))
    return connection, connection.getresponse()


def _read_to_end(stream: http.client.HTTPResponse, within: float = 120) -> str:
    """The rest of the stream (keep-alive comments keep a socket timeout from ever firing)."""
    deadline = time.monotonic() + within
    data = bytearray()
    while chunk := stream.read1(1 << 16):
        data += chunk
        assert time.monotonic() < deadline, "the stream did not end"
    return data.decode()


def test_an_unread_listen_stream_stays_small_and_ends_saying_why(http_host: Any) -> None:
    host = http_host("run", FLOOD)
    pid = host.proc.pid
    connection, stream = _open_listen(host.url, "L")
    try:
        assert stream.status == 200
        while b"acknowledged" not in stream.readline():
            pass
        # the listener reads no more while a call says NOTES times that the resource changed
        before = _peak_rss_mib(pid)
        with httpx2.Client(timeout=120) as caller:
            body = _call(1, "flood", {"count": NOTES})
            done = caller.post(host.url, content=body, headers=_headers("tools/call", "flood"))
            assert done.json()["result"]["structuredContent"] == {"result": NOTES}
            grown = _peak_rss_mib(pid) - before
            assert grown < 150, f"the host grew by {grown:.0f} MiB for one unread stream"
            # the host serves everyone else meanwhile
            body = _call(2, "flood", {"count": 1})
            again = caller.post(host.url, content=body, headers=_headers("tools/call", "flood"))
            assert again.json()["result"]["structuredContent"] == {"result": 1}
        # read now: the notifications that got through, then an error that says why, then the end
        rest = _read_to_end(stream)
    finally:
        connection.close()
    events = [orjson.loads(event["data"]) for event in sse_events(rest) if event.get("data")]
    *notes, last = events
    assert 0 < len(notes) < NOTES and all(n["method"] == "notifications/resources/updated" for n in notes)
    assert last["id"] == "L" and last["error"]["code"] == -32000
    assert "read too slowly" in last["error"]["message"]
    assert any("listen stream was cut off" in line for line in host.stderr)


MOST_LISTENS = 16  # HttpOptions.max_listens by default


async def test_one_client_opens_a_bounded_number_of_listen_streams(http_host: Any) -> None:
    host = http_host("run", FLOOD)
    listen = _headers("subscriptions/listen")
    async with AsyncExitStack() as streams, httpx2.AsyncClient(timeout=60) as client:
        opened = []
        for n in range(MOST_LISTENS):
            stream = await streams.enter_async_context(
                client.stream("POST", host.url, content=_listen(f"L{n}"), headers=listen)
            )
            assert stream.status_code == 200
            opened.append(stream)
        async with httpx2.AsyncClient(timeout=60) as other:
            async with other.stream("POST", host.url, content=_listen("over"), headers=listen) as refused:
                assert refused.status_code == 429
                error = orjson.loads(await refused.aread())
            assert error["id"] == "over" and error["error"]["code"] == -32000
            assert f"{MOST_LISTENS} listen streams open" in error["error"]["message"]
            await opened[0].aclose()  # one ends: there is room again
            with anyio.fail_after(30):
                while True:
                    async with other.stream(
                        "POST", host.url, content=_listen("next"), headers=listen
                    ) as again:
                        if again.status_code == 200:
                            break
                    await anyio.sleep(0.05)  # (until the host has seen the first one end)
    from protomcp_host.transports.http.streamable import HttpOptions

    assert HttpOptions().max_listens == MOST_LISTENS
