"""calls/tasks.py without processes: a task call's session side (TaskSink) and TaskRunner's
tasks/update, tasks/cancel and notifications/tasks, driven with a fake dispatcher."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from protomcp_host.calls.tasks import TaskRunner, TaskSink
from protomcp_host.protocol.session import Call, ToolAnswer
from protomcp_host.protocol.tasks import TaskStore
from tests.protocol.test_modern_tasks import DECLARED, create, line, make

pytestmark = pytest.mark.fast  # starts no process

ASK = {"mode": "form", "message": "?", "requestedSchema": {"type": "object", "properties": {}}}
YES = {"action": "accept", "content": {}}


class FakeExecution:
    def __init__(self, call: Call) -> None:
        self.call = call
        self.cancelled: list[str] = []
        call.execution = self

    def cancel(self, reason: str = "") -> None:
        self.cancelled.append(reason)


class FakeDispatcher:
    def __init__(self) -> None:
        self.sinks: list[Any] = []

    def execute(self, call: Call, sink: Any) -> FakeExecution:
        self.sinks.append(sink)
        return FakeExecution(call)


class FakeRouter:
    def __init__(self, session: Any) -> None:
        self.session = session
        self.written: list[tuple[dict[str, Any], bytes | None]] = []

    def write(self, data: bytes, related: bytes | None = None) -> None:
        self.written.append((orjson.loads(data), related))

    def call_control(self, change: Any) -> list[str]:
        return []


def setup() -> tuple[TaskRunner, FakeRouter, Call, TaskSink]:
    store = TaskStore()
    session = make(store)
    router = FakeRouter(session)
    dispatcher = FakeDispatcher()
    runner = TaskRunner(store, dispatcher, lambda: [router])  # type: ignore[arg-type]
    _, call = create(session)
    runner.start(call, router)  # type: ignore[arg-type]
    [sink] = dispatcher.sinks
    return runner, router, call, sink


def test_input_requests_partial_answers_and_unique_keys() -> None:
    runner, router, call, sink = setup()
    task = call.task
    assert task is not None
    replies: list[Any] = []
    router.session.receive(line("subscriptions/listen", {"notifications": {"taskIds": [task.id]}}, "L"))
    for _ in range(2):  # the same key asked twice is two requests: the second gets a new key
        sink.call_request(
            call.execution, "elicitation/create", ASK, None, lambda r, e: replies.append((r, e)), "k"
        )
    sink.call_request(call.execution, "elicitation/create", ASK, None, lambda r, e: replies.append((r, e)))
    assert task.status == "input_required" and list(task.inputs) == ["k", "k-2", "elicitation/create-3"]
    runner.answer(task, {"k": YES, "nope": YES, "k-2": {"action": "maybe"}})  # one valid, known key
    assert replies == [(YES, None)] and task.status == "input_required"
    assert list(task.detailed()["inputRequests"]) == ["k-2", "elicitation/create-3"]
    runner.answer(task, {"k-2": YES, "elicitation/create-3": YES})
    assert task.status == "working" and task.inputs == {}
    sink.call_answered(call, ToolAnswer([b'[{"type":"text","text":"done"}]']))
    assert task.status == "completed" and task.detailed()["result"]["content"][0]["text"] == "done"
    notes = [m for m, _ in router.written if m.get("method") == "notifications/tasks"]
    assert [n["params"]["status"] for n in notes] == ["input_required"] * 3 + ["working", "completed"]
    assert all(n["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": "L"} for n in notes)


def test_cancel_stops_the_call_and_a_late_answer_changes_nothing() -> None:
    runner, _, call, sink = setup()
    task = call.task
    assert task is not None
    replies: list[Any] = []
    sink.call_request(
        call.execution, "elicitation/create", ASK, None, lambda r, e: replies.append((r, e)), "k"
    )
    runner.cancel(task)
    assert task.status == "cancelled" and call.execution.cancelled == ["its task was cancelled"]  # type: ignore[union-attr]
    sink.call_released(call.execution, "cancelled")  # type: ignore[arg-type]
    assert replies == [(None, "cancelled")]
    sink.call_answered(call, ToolAnswer([b"[]"]))
    assert task.status == "cancelled" and task.detailed().keys().isdisjoint({"result", "error"})


def test_a_call_that_cannot_complete_fails_its_task_with_a_json_rpc_error() -> None:
    _, _, call, sink = setup()
    sink.call_failed(call, "timed out after 0.5s")
    assert call.task is not None and call.task.status == "failed"
    assert call.task.detailed()["error"] == {
        "code": -32603,
        "message": "Tool 'opt' failed: timed out after 0.5s",
    }
    missing = make(TaskStore())
    assert missing.receive(line("tasks/get", {"taskId": call.task.id}, 1, DECLARED))  # another store: unknown


async def test_a_drain_waits_for_the_task_calls_running_here() -> None:
    import anyio

    runner, _, call, sink = setup()
    waited = anyio.Event()

    async def drain() -> None:
        await runner.wait_idle()
        waited.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(drain)
        await anyio.wait_all_tasks_blocked()
        assert not waited.is_set()  # the task's call runs on
        sink.call_answered(call, ToolAnswer([b'[{"type":"text","text":"done"}]']))
        with anyio.fail_after(5):
            await waited.wait()
    await runner.wait_idle()  # nothing runs: at once
