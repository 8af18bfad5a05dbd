"""Helpers for the scale-out tests: the official client in modern mode, bursts of calls, and
waiting for a file a tool writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from tests.support.hosts import TOOLS

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


TASKS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {
        "elicitation": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    },
}
_NAMED = {"tools/call": "name", "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}


async def modern_rpc(http: Any, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One raw 2026-07-28 POST (the official client does not speak the tasks extension yet)
    declaring the tasks extension and elicitation; the JSON-RPC answer."""
    import orjson

    from tests.support.http import ACCEPT, answer_of

    headers = {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    if method in _NAMED:
        headers["mcp-name"] = str(params[_NAMED[method]])
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": TASKS_META}}
    response = await http.post(url, content=orjson.dumps(body), headers=headers)
    return answer_of(response)


async def task_until(
    http: Any, url: str, task_id: str, *statuses: str, timeout: float = 30
) -> dict[str, Any]:
    """tasks/get through `url` until the task has one of `statuses` (polled, as clients do).
    Another host learns of a new task over the store's bus within milliseconds: until then it
    does not know the id (eventual consistency; clients poll after pollIntervalMs anyway)."""
    with anyio.fail_after(timeout):
        while True:
            answer = await modern_rpc(http, url, "tasks/get", {"taskId": task_id})
            if "error" in answer:
                assert answer["error"]["message"] == "Failed to retrieve task: Task not found", answer
            elif answer["result"]["status"] in statuses:
                return answer["result"]
            await anyio.sleep(0.05)
