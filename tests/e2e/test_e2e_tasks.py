"""End to end: MCP tasks (2025-11-25) through `protomcp run|dev` and a real tool process,
over raw JSON-RPC on stdio and with the official `mcp` client where it can express them."""

from __future__ import annotations

import itertools
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.hosts import TOOLS, RawHost, mcp_session

TASK_TOOLS = TOOLS / "tasks_tools.py"


class TaskClient:
    """A raw 2025-11-25 session that keeps the notifications and early responses it reads."""

    def __init__(self, host: RawHost) -> None:
        self.host = host
        self.notes: list[dict[str, Any]] = []
        self.answers: dict[Any, dict[str, Any]] = {}
        self.ids = itertools.count(1)
        init = host.initialize("2025-11-25")["result"]
        assert "tasks" in init["capabilities"]

    def send(self, method: str, params: dict[str, Any]) -> int:
        request_id = next(self.ids)
        self.host.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    def _read(self, timeout: float) -> None:
        message = self.host.recv(timeout)
        if "method" in message:
            self.notes.append(message)
        else:
            self.answers[message["id"]] = message

    def response(self, request_id: int, timeout: float = 15) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while request_id not in self.answers:
            self._read(max(0.01, deadline - time.monotonic()))
        return self.answers.pop(request_id)

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.response(self.send(method, params))

    def notice(self, want: Callable[[dict[str, Any]], bool], timeout: float = 15) -> dict[str, Any]:
        """The first notification (read so far or later) whose params satisfy `want`."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for note in self.notes[seen:]:
                if want(note):
                    return note
            seen = len(self.notes)
            self._read(max(0.01, deadline - time.monotonic()))

    def status(self, task_id: str, status: str, timeout: float = 15) -> dict[str, Any]:
        """Wait for the notifications/tasks/status that moves the task to `status`."""
        note = self.notice(
            lambda n: (
                n["method"] == "notifications/tasks/status"
                and n["params"]["taskId"] == task_id
                and n["params"]["status"] == status
            ),
            timeout,
        )
        return note["params"]

    def start(self, name: str, arguments: dict[str, Any], **task: Any) -> str:
        reply = self.request("tools/call", {"name": name, "arguments": arguments, "task": task})
        created = reply["result"]["task"]
        assert created["status"] == "working" and set(created) >= {"createdAt", "lastUpdatedAt", "ttl"}
        return created["taskId"]

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.request("tools/call", {"name": name, "arguments": arguments})["result"]


@pytest.fixture
def tasks(raw_host: Callable[..., RawHost]) -> Iterator[TaskClient]:
    yield TaskClient(raw_host("run", str(TASK_TOOLS)))


def text(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


def test_task_polled_to_completion(tasks: TaskClient) -> None:
    task_id = tasks.start("report", {"n": 21})
    deadline = time.monotonic() + 15
    while (got := tasks.request("tasks/get", {"taskId": task_id})["result"])["status"] == "working":
        assert time.monotonic() < deadline, "the task never completed"
    assert got["status"] == "completed" and got["taskId"] == task_id
    result = tasks.request("tasks/result", {"taskId": task_id})["result"]
    assert text(result) == "42" and result["structuredContent"] == {"result": 42}
    assert result["_meta"] == {"io.modelcontextprotocol/related-task": {"taskId": task_id}}
    listed = tasks.request("tasks/list", {})["result"]["tasks"]
    assert [(t["taskId"], t["status"]) for t in listed] == [(task_id, "completed")]


def test_task_result_blocks_until_done(tasks: TaskClient) -> None:
    task_id = tasks.start("job", {"key": "blocks"})
    assert tasks.status(task_id, "working")["statusMessage"] == "waiting for blocks"  # ctx.set_task_status
    waiting = tasks.send("tasks/result", {"taskId": task_id})
    assert tasks.request("ping", {}) == {"jsonrpc": "2.0", "id": waiting + 1, "result": {}}
    assert waiting not in tasks.answers  # still blocked while the task works
    assert text(tasks.call("release", {"key": "blocks"})) == "released blocks"
    result = tasks.response(waiting)["result"]
    assert text(result) == "job blocks done (task yes)" and result["isError"] is False
    assert tasks.status(task_id, "completed").get("statusMessage") is None


def test_task_cancelled_and_cancel_of_a_finished_task_refused(tasks: TaskClient) -> None:
    task_id = tasks.start("job", {"key": "doomed"})
    tasks.status(task_id, "working")  # the job runs (a call cancelled before it starts logs nothing)
    waiting = tasks.send("tasks/result", {"taskId": task_id})
    cancelled = tasks.request("tasks/cancel", {"taskId": task_id})["result"]
    assert (cancelled["taskId"], cancelled["status"]) == (task_id, "cancelled")
    # The tool process was told: the job's CancelledError handler logs.
    tasks.notice(
        lambda n: n["method"] == "notifications/message" and n["params"]["data"] == "job doomed was cancelled"
    )
    assert tasks.response(waiting)["result"]["isError"] is True
    assert tasks.request("tasks/get", {"taskId": task_id})["result"]["status"] == "cancelled"
    again = tasks.request("tasks/cancel", {"taskId": task_id})["error"]
    assert again == {"code": -32602, "message": "Cannot cancel task: already in terminal status 'cancelled'"}
    done_id = tasks.start("report", {"n": 1})
    tasks.response(tasks.send("tasks/result", {"taskId": done_id}))
    refused = tasks.request("tasks/cancel", {"taskId": done_id})["error"]
    assert refused == {
        "code": -32602,
        "message": "Cannot cancel task: already in terminal status 'completed'",
    }
    unknown = tasks.request("tasks/cancel", {"taskId": "no-such-task"})["error"]
    assert unknown["code"] == -32602


def test_task_support_enforced(tasks: TaskClient) -> None:
    required = tasks.request("tools/call", {"name": "report", "arguments": {"n": 1}})["error"]
    assert required["code"] == -32601 and "must run as a task" in required["message"]
    forbidden = tasks.request("tools/call", {"name": "plain", "arguments": {"x": 1}, "task": {}})["error"]
    assert forbidden["code"] == -32601 and "cannot run as a task" in forbidden["message"]
    assert text(tasks.call("plain", {"x": 3})) == "3"
    # An optional-task tool also runs as a plain call.
    tasks.call("release", {"key": "direct"})
    assert text(tasks.call("job", {"key": "direct"})) == "job direct done (task no)"


def test_failures_and_status_reports(tasks: TaskClient) -> None:
    failed = tasks.start("broken", {"reason": "out of paper"})
    note = tasks.status(failed, "failed")
    assert "out of paper" in note["statusMessage"]
    result = tasks.request("tasks/result", {"taskId": failed})["result"]
    assert result["isError"] is True and "out of paper" in text(result)
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": failed}
    assert len(result["_meta"]) == 2  # the ToolError's own _meta is kept beside it
    asks = tasks.start("asks", {})
    assert tasks.status(asks, "input_required")["statusMessage"] == "need an answer"
    assert tasks.status(asks, "working")["statusMessage"] == "got it"
    counts = tasks.start("counts", {"steps": 3})
    tasks.notice(
        lambda n: n["method"] == "notifications/tasks/status" and n["params"].get("statusMessage") == "3/3"
    )
    tasks.call("release", {"key": "asks"})
    tasks.call("release", {"key": "counts"})
    assert text(tasks.request("tasks/result", {"taskId": asks})["result"]) == "asked"
    assert text(tasks.request("tasks/result", {"taskId": counts})["result"]) == "counted"


def test_crash_marks_the_task_failed(tasks: TaskClient) -> None:
    task_id = tasks.start("crash", {"code": 7})
    note = tasks.status(task_id, "failed")
    assert "tool process exited with status 7" in note["statusMessage"]
    result = tasks.request("tasks/result", {"taskId": task_id})["result"]
    assert result["isError"] is True and "exited with status 7" in text(result)
    # The process is restarted and serves again.
    assert text(tasks.call("plain", {"x": 5})) == "5"


def test_ttl_expiry(tasks: TaskClient) -> None:
    task_id = tasks.start("job", {"key": "short"}, ttl=1500)
    tasks.status(task_id, "working")  # the job runs (a call cancelled before it starts logs nothing)
    assert tasks.request("tasks/get", {"taskId": task_id})["result"]["ttl"] == 1500
    # The host's clock expires it: its call is cancelled in the tool process...
    tasks.notice(
        lambda n: n["method"] == "notifications/message" and n["params"]["data"] == "job short was cancelled"
    )
    # ...and the task is gone.
    gone = tasks.request("tasks/get", {"taskId": task_id})["error"]
    assert gone == {"code": -32602, "message": "Failed to retrieve task: Task not found"}
    assert tasks.request("tasks/list", {})["result"]["tasks"] == []


@pytest.mark.parametrize("ttl", [0, -5000])
def test_a_ttl_of_zero_or_less_gets_the_default_and_the_task_lives(tasks: TaskClient, ttl: int) -> None:
    task_id = tasks.start("job", {"key": "zero"}, ttl=ttl)
    tasks.status(task_id, "working")  # the job runs
    got = tasks.request("tasks/get", {"taskId": task_id})["result"]
    assert got["status"] == "working" and got["ttl"] == 60 * 60 * 1000  # the default: one hour
    waiting = tasks.send("tasks/result", {"taskId": task_id})
    assert text(tasks.call("release", {"key": "zero"})) == "released zero"
    assert text(tasks.response(waiting)["result"]) == "job zero done (task yes)"
    assert [t["taskId"] for t in tasks.request("tasks/list", {})["result"]["tasks"]] == [task_id]


def test_per_session_limit(tasks: TaskClient) -> None:
    ids = [tasks.start("job", {"key": "many"}) for _ in range(100)]
    refused = tasks.request("tools/call", {"name": "job", "arguments": {"key": "many"}, "task": {}})["error"]
    assert refused["code"] == -32600 and "100 running tasks (the limit)" in refused["message"]
    tasks.call("release", {"key": "many"})
    for task_id in ids:
        tasks.status(task_id, "completed")
    # Full of finished tasks: the oldest is forgotten to make room.
    newest = tasks.start("report", {"n": 1})
    assert tasks.request("tasks/get", {"taskId": ids[0]})["error"]["code"] == -32602
    listed: list[str] = []
    cursor: str | None = None
    while True:
        page = tasks.request("tasks/list", {"cursor": cursor} if cursor else {})["result"]
        listed += [t["taskId"] for t in page["tasks"]]
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    assert listed == [*ids[1:], newest]


def test_task_outlives_a_reload(tmp_path: Path, raw_host: Callable[..., RawHost]) -> None:
    file = tmp_path / "tasks_tools.py"
    shutil.copy(TASK_TOOLS, file)
    tasks = TaskClient(raw_host("dev", str(file)))
    old_pid = tasks.call("pid", {})["structuredContent"]["result"]
    gate = tmp_path / "gate"
    task_id = tasks.start("until_file", {"path": str(gate)})
    source = file.read_text() + '\n\n@tool\ndef added() -> str:\n    """New."""\n    return "new"\n'
    tmp = file.with_name(".tmp.py")
    tmp.write_text(source)
    os.replace(tmp, file)
    tasks.notice(lambda n: n["method"] == "notifications/tools/list_changed")
    new_pid = tasks.call("pid", {})["structuredContent"]["result"]
    assert new_pid != old_pid
    gate.touch()
    result = tasks.request("tasks/result", {"taskId": task_id})["result"]
    assert result["isError"] is False and text(result) == f"saw gate in process {old_pid}"
    assert tasks.request("tasks/get", {"taskId": task_id})["result"]["status"] == "completed"


@pytest.mark.anyio
async def test_official_client_sees_tasks() -> None:
    """mcp 2.3.0 negotiates 2025-11-25 and types tasks, but its tools/call validates the
    result as a CallToolResult, so it cannot create a task; the rest it can express."""
    import mcp.types as types
    from mcp.shared.exceptions import MCPError

    async with mcp_session("run", str(TASK_TOOLS)) as session:
        capabilities = session.server_capabilities.tasks
        assert capabilities.list is not None and capabilities.cancel is not None
        assert capabilities.requests.tools.call is not None
        execution = {
            t.name: t.execution and t.execution.task_support for t in (await session.list_tools()).tools
        }
        assert (execution["job"], execution["report"], execution["plain"]) == ("optional", "required", None)
        with pytest.raises(MCPError) as refused:
            await session.call_tool("report", {"n": 1})
        assert refused.value.error.code == -32601
        listed = await session.send_request(types.ListTasksRequest(), types.ListTasksResult)
        assert listed.tasks == []
        with pytest.raises(MCPError) as unknown:
            await session.send_request(
                types.GetTaskRequest(params=types.GetTaskRequestParams(task_id="nope")), types.GetTaskResult
            )
        assert unknown.value.error.code == -32602


def test_task_through_middleware(raw_host: Callable[..., RawHost]) -> None:
    """A middleware in another tool process wraps the call; the tool still runs as the task."""
    tasks = TaskClient(raw_host("run", str(TOOLS / "middleware" / "mw.py"), str(TASK_TOOLS)))
    task_id = tasks.start("job", {"key": "wrapped"})
    assert tasks.status(task_id, "working")["statusMessage"] == "waiting for wrapped"
    tasks.call("release", {"key": "wrapped"})
    assert text(tasks.request("tasks/result", {"taskId": task_id})["result"]) == "job wrapped done (task yes)"
