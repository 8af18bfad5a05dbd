"""Sibling copies of one server (issue 30): Claude Desktop starts a second copy of every local
stdio server to probe its protocol era, and a Cowork session runs its own. Two copies of
`protomcp run|dev` on one file, started at the same moment, both serve; each has its own
lifespan; each exits when its stdin closes."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.support.hosts import RawHost

LIFESPAN = """import os
from pathlib import Path
from protomcp_sdk import Context, lifespan, tool

@lifespan
async def opened():
    mark = Path(os.environ["SIBLING_MARKS"]) / f"{os.getpid()}.open"
    mark.write_text("")
    yield {"pid": os.getpid()}
    mark.rename(mark.with_suffix(".closed"))

@tool
def whose(ctx: Context) -> int:
    return ctx.state["pid"]
"""

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "1"},
}


def taken_port() -> int:
    """A port free now (both copies will ask for it; one gets it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def probe(host: RawHost) -> int:
    """Claude Desktop's way: server/discover, then initialize; then one call. Returns the pid
    of the tool process that answered."""
    discover = host.request(1, "server/discover", {"_meta": MODERN_META})
    assert "2026-07-28" in discover["result"]["supportedVersions"], discover
    init = host.request(
        2,
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "desktop", "version": "1"},
        },
    )
    assert init["result"]["protocolVersion"] == "2025-11-25", init
    host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    answer = host.request(3, "tools/call", {"name": "whose", "arguments": {}})
    return int(answer["result"]["structuredContent"]["result"])


@pytest.mark.parametrize("command", ["run", "dev --ui"])
def test_two_copies_started_at_once_both_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("SIBLING_MARKS", str(marks))
    file = tmp_path / "tools.py"
    file.write_text(LIFESPAN)
    args = [*command.split(), str(file)]
    port = taken_port()
    if "--ui" in args:
        args += ["--ui-port", str(port)]
    hosts = [RawHost(*args), RawHost(*args)]  # at the same moment: neither waits for the other
    try:
        pids = [probe(host) for host in hosts]
        assert pids[0] != pids[1]  # a tool process, and its lifespan, per copy
        assert sorted(p.name for p in marks.iterdir()) == sorted(f"{pid}.open" for pid in pids)
        if "--ui" in args:
            texts = [host.wait_stderr("protomcp playground: http") for host in hosts]
            assert sum(f"127.0.0.1:{port}/" in text for text in texts) == 1, texts
            [fallback] = [text for text in texts if f"port {port} is in use" in text]
            assert "using port" in fallback
        codes = [host.close() for host in hosts]  # stdin closed: each exits on its own
        assert codes == [0, 0], [host.stderr_text() for host in hosts]
        assert sorted(p.name for p in marks.iterdir()) == sorted(f"{pid}.closed" for pid in pids)
    finally:
        for host in hosts:
            host.close()


@pytest.mark.parametrize("command", ["run", "dev"])
def test_a_probe_that_closes_its_input_during_the_load_ends_the_host(tmp_path: Path, command: str) -> None:
    """A probing copy is answered initialize at once and closes its input while the tool file
    is still loading: the host exits then, not once the file has loaded."""
    file = tmp_path / "tools.py"
    file.write_text("import time\ntime.sleep(3600)  # a load that never ends\n")
    host = RawHost(command, str(file))
    try:
        init = host.request(
            1,
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "probe", "version": "1"},
            },
        )
        assert init["result"]["protocolVersion"] == "2025-11-25"
        assert host.close(timeout=15) == 0, host.stderr_text()  # (raises if it is still waiting)
    finally:
        host.close()
