"""Helpers for the scale-out tests: the official client in modern mode, bursts of calls, and
waiting for a file a tool writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from conftest import TOOLS

CPU = TOOLS / "scale" / "cpu.py"


def modern_client(url: str, mode: str = "auto", **kwargs: Any) -> Any:
    from mcp import Client

    return Client(url, mode=mode, cache=None, **kwargs)  # type: ignore[arg-type]


async def burst(client: Any, calls: int, n: int = 20_000) -> list[dict[str, Any]]:
    """`calls` concurrent burns; asserts each was answered exactly once; their results."""
    seen: list[dict[str, Any]] = []

    async def one(i: int) -> None:
        result = await client.call_tool("burn", {"n": n, "tag": str(i)})
        assert not result.is_error, result
        seen.append(result.structured_content)

    async with anyio.create_task_group() as tg:
        for i in range(calls):
            tg.start_soon(one, i)
    assert sorted(int(r["tag"]) for r in seen) == list(range(calls))
    return seen


async def wait_for_file(path: Path, timeout: float = 30) -> str:
    """The text of `path` once a tool wrote it (polled: it is written by another process)."""
    with anyio.fail_after(timeout):
        while not path.exists() or not path.read_text():
            await anyio.sleep(0.02)
    return path.read_text()
