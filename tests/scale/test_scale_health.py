"""/healthz (readiness) and /healthz/live for load balancers, without credentials; readiness
follows the shared store."""

from __future__ import annotations

import signal
from typing import Any

import httpx2

from tests.support.scale import CPU


async def test_ready_and_live_without_credentials(http_host: Any) -> None:
    host = http_host("run", str(CPU), "--auth-token-env", "SCALE_TOKEN", env={"SCALE_TOKEN": "s3cret"})
    base = host.url.rsplit("/", 1)[0]
    async with httpx2.AsyncClient(timeout=10) as http:
        assert (await http.post(host.url, content=b"{}")).status_code == 401  # the MCP path needs it
        ready = await http.get(base + "/healthz")
        assert ready.status_code == 200 and ready.headers["cache-control"] == "no-store"
        assert ready.json() == {
            "status": "ok",
            "pid": host.proc.pid,
            "files": {"cpu.py": True},
            "store": {"url": "memory", "reachable": True},
        }
        live = await http.get(base + "/healthz/live")
        assert live.status_code == 200 and live.json() == {"status": "alive"}


async def test_not_ready_while_the_store_is_unreachable(http_host: Any, redis_url: str) -> None:
    import subprocess

    host = http_host("run", str(CPU), "--store", redis_url)
    base = host.url.rsplit("/", 1)[0]
    async with httpx2.AsyncClient(timeout=10) as http:
        assert (await http.get(base + "/healthz")).json()["store"] == {"url": redis_url, "reachable": True}
        port = redis_url.rsplit(":", 1)[1].split("/")[0]
        subprocess.run(["redis-cli", "-p", port, "shutdown", "nosave"], capture_output=True, check=False)
        down = await http.get(base + "/healthz")
        assert down.status_code == 503 and down.json()["status"] == "unready", down.text
        assert (await http.get(base + "/healthz/live")).status_code == 200
    host.proc.send_signal(signal.SIGTERM)
    assert host.proc.wait(30) == 0
