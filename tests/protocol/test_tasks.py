"""MCP tasks without I/O: the task store (protocol/tasks.py) and the session's task methods."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from protomcp_host.calls.envelope import tool_from_definition
from protomcp_host.protocol.catalog import Catalog, Tool
from protomcp_host.protocol.session import Call, CancelCall, Event, Send, Session, ToolAnswer
from protomcp_host.protocol.tasks import (
    DEFAULT_TTL_MS,
    MAX_TTL_MS,
    MIN_TTL_MS,
    RELATED_TASK,
    InvalidTaskCursor,
    TaskMethods,
    TaskNotFound,
    TaskStore,
    TooManyTasks,
    iso,
)
from protomcp_sdk.wire import envelope_pb2 as pb

pytestmark = pytest.mark.fast  # starts no process

T0 = 1_700_000_000.0  # a fixed "now" (seconds since the epoch)


# -- the store ---------------------------------------------------------------------------


def test_ids_are_long_random_and_unique() -> None:
    store = TaskStore()
    ids = {store.create(None, T0).id for _ in range(50)}
    assert len(ids) == 50
    assert all(len(task_id) >= 32 for task_id in ids)  # token_urlsafe(24): 192 random bits


def test_ttl_default_cap_and_expiry() -> None:
    store = TaskStore()
    default = store.create(None, T0)
    capped = store.create(10 * MAX_TTL_MS, T0)
    short = store.create(1500, T0)
    assert (default.ttl_ms, capped.ttl_ms, short.ttl_ms) == (DEFAULT_TTL_MS, MAX_TTL_MS, 1500)
    assert store.expire(T0 + 1.499) == []
    assert store.expire(T0 + 1.5) == [short]
    with pytest.raises(TaskNotFound):
        store.find(short.id)
    assert store.find(default.id) is default
    assert store.expire(T0 + DEFAULT_TTL_MS / 1000) == [default]
    assert list(store.tasks) == [capped.id]


@pytest.mark.parametrize("requested", [0, -1, -5000, 0.0, -0.5, "600", True, [1000]])
def test_a_ttl_of_zero_or_less_or_not_a_number_gets_the_default(requested: Any) -> None:
    store = TaskStore()
    task = store.create(requested, T0)
    assert task.ttl_ms == DEFAULT_TTL_MS
    assert store.expire(T0 + 1) == []  # not gone at once
    assert store.find(task.id) is task


@pytest.mark.parametrize(
    ("requested", "granted"), [(0.4, MIN_TTL_MS), (1, MIN_TTL_MS), (999.9, MIN_TTL_MS), (1000, 1000)]
)
def test_a_tiny_ttl_is_raised_to_one_poll_interval(requested: float, granted: int) -> None:
    store = TaskStore()
    task = store.create(requested, T0)
    assert task.ttl_ms == granted
    assert store.expire(T0 + granted / 1000 - 0.001) == []
    assert store.expire(T0 + granted / 1000) == [task]


def test_a_ttl_of_zero_is_answered_with_the_ttl_granted() -> None:
    session = new_session()
    [created] = sent(request(session, 1, "tools/call", {"name": "opt", "arguments": {}, "task": {"ttl": 0}}))
    task = created["result"]["task"]
    assert task["ttl"] == DEFAULT_TTL_MS
    assert session.task_events.advance(T0 + 1) == []
    [got] = sent(request(session, 2, "tasks/get", {"taskId": task["taskId"]}))
    assert got["result"]["status"] == "working" and got["result"]["ttl"] == DEFAULT_TTL_MS


def test_status_transitions() -> None:
    store = TaskStore()
    task = store.create(None, T0)
    assert task.describe() == {
        "taskId": task.id,
        "status": "working",
        "createdAt": iso(T0),
        "lastUpdatedAt": iso(T0),
        "ttl": DEFAULT_TTL_MS,
        "pollInterval": 1000,
    }
    assert store.update(task, T0 + 1, status="input_required", message="need input")
    assert not store.update(task, T0 + 2, status="input_required", message="need input")  # no change
    assert not store.update(task, T0 + 2, status="completed")  # only the answer ends a task
    assert store.update(task, T0 + 3, status="working")
    assert (task.status, task.message, task.updated) == ("working", "need input", T0 + 3)
    assert store.finish(task, "cancelled", b'{"content":[],"isError":true}', "stop", T0 + 4)
    assert not store.finish(task, "completed", b'{"content":[],"isError":false}', None, T0 + 5)
    assert not store.update(task, T0 + 5, message="late")
    assert (task.status, task.message) == ("cancelled", "stop")  # cancelled stays cancelled
    assert "pollInterval" not in task.describe()
    assert iso(T0 + 4) == task.describe()["lastUpdatedAt"] == "2023-11-14T22:13:24.000Z"


def test_limit_forgets_the_oldest_finished_task_then_refuses() -> None:
    store = TaskStore(max_tasks=3)
    first, second, third = (store.create(None, T0 + i) for i in range(3))
    store.finish(second, "completed", b"{}", None, T0 + 5)
    fourth = store.create(None, T0 + 6)  # second (finished) makes room
    assert list(store.tasks) == [first.id, third.id, fourth.id]
    with pytest.raises(TooManyTasks, match="3 running tasks"):
        store.create(None, T0 + 7)


def test_the_limit_holds_for_copies_made_elsewhere_and_says_what_it_forgot() -> None:
    from protomcp_host.protocol.tasks import Task

    store = TaskStore(max_tasks=3)
    evicted: list[str] = []
    store.on_evict = lambda task: evicted.append(task.id)
    mine = store.create(None, T0 + 3, "principal:a")
    for i, status in enumerate(("completed", "working", "failed")):  # another host's tasks
        copy = Task(f"copy{i}", 0, DEFAULT_TTL_MS, T0 + i, T0 + i, status=status, owner="principal:a")
        store.adopt(copy)
    assert evicted == ["copy0"] and [t.id for t in store.owned_by("principal:a")] == [
        mine.id,
        "copy1",
        "copy2",
    ]
    store.finish(mine, "completed", b"{}", None, T0 + 9)
    store.create(None, T0 + 10, "principal:a")  # the oldest finished one goes (a copy too)
    assert evicted == ["copy0", "copy2"]


def test_pages_survive_deletions_and_bad_cursors_are_refused() -> None:
    store = TaskStore(page_size=2)
    tasks = [store.create(None, T0) for _ in range(5)]
    page, cursor = store.page(None)
    assert page == tasks[:2] and cursor is not None
    store.forget(tasks[2])  # forgotten between two pages
    page, cursor = store.page(cursor)
    assert page == tasks[3:5] and cursor is None
    for bad in ("nonsense", "dG9vbHM6MQ==", 7):
        with pytest.raises(InvalidTaskCursor):
            store.page(bad)


# -- the session ---------------------------------------------------------------------------


def make_tool(name: str, mode: str) -> Tool:
    definition = pb.ToolDefinition(name=name, description=name, task_support_mode=mode)
    definition.input_schema_json = orjson.dumps(
        {"type": "object", "properties": {"n": {"type": "integer"}}}
    ).decode()
    return tool_from_definition(definition, owner="t.py")


def new_session(version: str = "2025-11-25", tasks: TaskMethods | None = None) -> Session:
    catalog = Catalog()
    catalog.replace("t.py", [make_tool("opt", "optional"), make_tool("req", "required"), make_tool("no", "")])
    session = Session(catalog, {"name": "t", "version": "1"}, tasks=tasks)
    session.task_events.advance(T0)
    init = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
    session.receive(orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
    session.receive(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    return session


def request(session: Session, id_: int, method: str, params: dict[str, Any]) -> list[Event]:
    return session.receive(orjson.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}))


def sent(events: list[Event]) -> list[Any]:
    return [orjson.loads(e.data) for e in events if isinstance(e, Send)]


def start_task(session: Session, id_: int = 1, ttl: int | None = None) -> tuple[str, Call]:
    task: dict[str, Any] = {} if ttl is None else {"ttl": ttl}
    events = request(session, id_, "tools/call", {"name": "opt", "arguments": {"n": 1}, "task": task})
    created, call = events
    assert isinstance(created, Send) and isinstance(call, Call) and created.related == str(id_).encode()
    return orjson.loads(created.data)["result"]["task"]["taskId"], call


def answer(text: str, is_error: bool = False) -> ToolAnswer:
    return ToolAnswer([orjson.dumps([{"type": "text", "text": text}])], is_error=is_error)


def test_capability_only_for_2025_11_25() -> None:
    for version in ("2024-11-05", "2025-03-26", "2025-06-18"):
        session = Session(Catalog(), {"name": "t", "version": "1"})
        init = {"protocolVersion": version, "capabilities": {}}
        [event] = session.receive(
            orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
        )
        assert "tasks" not in orjson.loads(event.data)["result"]["capabilities"]  # type: ignore[union-attr]
    capabilities = Session(Catalog(), {"name": "t", "version": "1"}).receive(
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}'
    )
    assert orjson.loads(capabilities[0].data)["result"]["capabilities"]["tasks"] == {  # type: ignore[union-attr]
        "list": {},
        "cancel": {},
        "requests": {"tools": {"call": {}}},
    }


def test_task_support_is_enforced_with_32601() -> None:
    session = new_session()
    [refused] = sent(request(session, 1, "tools/call", {"name": "req", "arguments": {}}))
    assert refused["error"]["code"] == -32601 and "must run as a task" in refused["error"]["message"]
    [refused] = sent(request(session, 2, "tools/call", {"name": "no", "arguments": {}, "task": {}}))
    assert refused["error"]["code"] == -32601 and "cannot run as a task" in refused["error"]["message"]
    # Older revisions know no tasks: a required-task tool runs as a plain call, "task" is ignored.
    old = new_session("2025-06-18")
    assert isinstance(request(old, 1, "tools/call", {"name": "req", "arguments": {}})[0], Call)
    [call] = request(old, 2, "tools/call", {"name": "opt", "arguments": {}, "task": {}})
    assert isinstance(call, Call) and call.task is None
    [missing] = sent(request(old, 3, "tasks/list", {}))
    assert missing["error"]["code"] == -32601


def test_task_completes_and_result_blocks_until_then() -> None:
    session = new_session()
    task_id, call = start_task(session)
    assert session.in_flight == {}  # the request is answered; the task owns the call
    [got] = sent(request(session, 2, "tasks/get", {"taskId": task_id}))
    assert got["result"]["status"] == "working"
    assert request(session, 3, "tasks/result", {"taskId": task_id}) == []  # blocks
    events = session.task_events.done(call, answer("done"), T0 + 1)
    notice, result = sent(events)
    assert notice["method"] == "notifications/tasks/status" and notice["params"]["status"] == "completed"
    assert result["id"] == 3 and events[1].related == b"3"  # type: ignore[union-attr]
    assert result["result"] == {
        "content": [{"type": "text", "text": "done"}],
        "isError": False,
        "_meta": {RELATED_TASK: {"taskId": task_id}},
    }
    [again] = sent(request(session, 4, "tasks/result", {"taskId": task_id}))
    assert again["result"] == result["result"]
    [listed] = sent(request(session, 5, "tasks/list", {}))
    assert [t["status"] for t in listed["result"]["tasks"]] == ["completed"]


def test_error_result_fails_the_task_with_its_message() -> None:
    session = new_session()
    task_id, call = start_task(session)
    session.task_events.done(call, answer("it broke", is_error=True), T0 + 1)
    [got] = sent(request(session, 2, "tasks/get", {"taskId": task_id}))
    assert (got["result"]["status"], got["result"]["statusMessage"]) == ("failed", "it broke")
    [result] = sent(request(session, 3, "tasks/result", {"taskId": task_id}))
    assert result["result"]["isError"] is True
    failed_id, failed_call = start_task(session, 4)
    session.task_events.failed(failed_call, "Tool 'opt' failed: tool process exited with status 3", T0 + 2)
    [got] = sent(request(session, 5, "tasks/get", {"taskId": failed_id}))
    assert got["result"]["statusMessage"] == "Tool 'opt' failed: tool process exited with status 3"


def test_invalid_arguments_fail_the_task_at_once() -> None:
    session = new_session()
    events = request(session, 1, "tools/call", {"name": "opt", "arguments": {"n": "x"}, "task": {}})
    created, notice = sent(events)
    assert not any(isinstance(e, Call) for e in events)
    assert created["result"]["task"]["status"] == "working"
    assert notice["params"]["status"] == "failed" and "Invalid arguments" in notice["params"]["statusMessage"]


def test_cancel_running_then_refused_when_terminal() -> None:
    session = new_session()
    task_id, call = start_task(session)
    request(session, 2, "tasks/result", {"taskId": task_id})
    events = request(session, 3, "tasks/cancel", {"taskId": task_id})
    response, notice, waiter = sent(events)
    assert isinstance(events[-1], CancelCall) and events[-1].call is call
    assert response["id"] == 3 and response["result"]["status"] == "cancelled"
    assert notice["params"]["status"] == "cancelled"
    assert waiter["id"] == 2 and waiter["result"]["isError"] is True
    assert session.task_events.done(call, answer("late"), T0 + 1) == []  # stays cancelled
    [refused] = sent(request(session, 4, "tasks/cancel", {"taskId": task_id}))
    assert refused["error"] == {
        "code": -32602,
        "message": "Cannot cancel task: already in terminal status 'cancelled'",
    }
    [unknown] = sent(request(session, 5, "tasks/cancel", {"taskId": "nope"}))
    assert unknown["error"]["code"] == -32602


def test_expiry_cancels_the_call_and_answers_waiters() -> None:
    session = new_session()
    task_id, call = start_task(session, ttl=1000)
    request(session, 2, "tasks/result", {"taskId": task_id})
    assert session.task_events.advance(T0 + 0.5) == []
    events = session.task_events.advance(T0 + 1)
    assert [e.call for e in events if isinstance(e, CancelCall)] == [call]
    [expired] = sent(events)
    assert expired["id"] == 2 and expired["error"]["message"] == "Failed to retrieve task: Task has expired"
    [gone] = sent(request(session, 3, "tasks/get", {"taskId": task_id}))
    assert gone["error"]["code"] == -32602


def test_status_reports_and_progress_carry_the_task() -> None:
    session = new_session()
    events = request(
        session,
        1,
        "tools/call",
        {"name": "opt", "arguments": {}, "task": {}, "_meta": {"progressToken": "p"}},
    )
    call = events[1]
    assert isinstance(call, Call) and call.task is not None
    [notice] = sent(session.task_events.status(call, "input_required", "need input", T0 + 1))
    assert (notice["params"]["status"], notice["params"]["statusMessage"]) == ("input_required", "need input")
    assert session.task_events.status(call, "input_required", "need input", T0 + 2) == []
    progress = orjson.loads(session.progress(call, 1.0, 2.0, "half") or b"")
    assert progress["params"]["_meta"] == {RELATED_TASK: {"taskId": call.task.id}}
    log = orjson.loads(session.log("info", "opt", "hi", call.task) or b"")
    assert log["params"]["_meta"] == {RELATED_TASK: {"taskId": call.task.id}}


def test_tasks_belong_to_their_session() -> None:
    mine, other = new_session(), new_session()
    task_id, _ = start_task(mine)
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        [refused] = sent(request(other, 9, method, {"taskId": task_id}))
        assert refused["error"]["code"] == -32602
    [listed] = sent(request(other, 10, "tasks/list", {}))
    assert listed["result"]["tasks"] == []


def test_session_limit_is_a_clear_error() -> None:
    session = new_session()
    session.tasks.store.max_tasks = 2
    start_task(session, 1)
    start_task(session, 2)
    [refused] = sent(request(session, 3, "tools/call", {"name": "opt", "arguments": {}, "task": {}}))
    assert refused["error"]["code"] == -32600 and "2 running tasks (the limit)" in refused["error"]["message"]


# -- the SDK side -------------------------------------------------------------------------


def test_tool_task_option_sets_the_definition() -> None:
    from protomcp_sdk.authoring.tools import ToolSpec

    def work() -> str:
        return "ok"

    assert ToolSpec.from_function(work).definition().task_support_mode == "forbidden"
    optional = ToolSpec.from_function(work, task="optional").definition()
    assert (optional.task_support_mode, optional.task_support) == ("optional", True)
    assert tool_from_definition(optional, "f.py").mcp["execution"] == {"taskSupport": "optional"}
    with pytest.raises(ValueError, match="task must be one of 'forbidden', 'optional', 'required'"):
        ToolSpec.from_function(work, task="sometimes")  # type: ignore[arg-type]


def test_input_before_task_reaches_the_host_and_needs_task_support() -> None:
    from protomcp_sdk.authoring.tools import ToolSpec

    def work() -> str:
        return "ok"

    marked = ToolSpec.from_function(work, task="required", input_before_task=True).definition()
    assert marked.input_before_task and tool_from_definition(marked, "f.py").input_before_task
    assert not tool_from_definition(
        ToolSpec.from_function(work, task="optional").definition(), "f"
    ).input_before_task
    with pytest.raises(ValueError, match="input_before_task needs task='optional' or 'required'"):
        ToolSpec.from_function(work, input_before_task=True)


def test_sessions_sharing_a_store_see_only_their_own_tasks() -> None:
    store = TaskStore()
    mine = new_session(tasks=TaskMethods(store, "session:1"))
    other = new_session(tasks=TaskMethods(store, "session:2"))
    assert mine.tasks.store is other.tasks.store is store
    task_id, _ = start_task(mine)
    [refused] = sent(request(other, 9, "tasks/get", {"taskId": task_id}))
    assert refused["error"]["code"] == -32602
    [listed] = sent(request(other, 10, "tasks/list", {}))
    assert listed["result"]["tasks"] == [] and len(store) == 1
    other.tasks.forget_all()  # a session that ends takes only its own tasks along
    assert len(store) == 1
    mine.tasks.forget_all()
    assert len(store) == 0 and store.owners() == []


def test_context_task_status_frames() -> None:
    from protomcp_sdk.runtime.context import Context

    frames: list[pb.Envelope] = []
    ctx = Context("7", "", frames.append, "job", task_id="T")
    ctx.set_task_status("halfway", input_required=True)
    ctx.report_progress(1, 4)
    ctx.report_progress(2)  # no message, no total: nothing to say about the task
    states = [(f.request_id, f.task_status_response.state, f.task_status_response.message) for f in frames]
    assert states == [("7", "input_required", "halfway"), ("7", "", "")]
    assert (frames[1].task_status_response.progress, frames[1].task_status_response.total) == (1, 4)
    with pytest.raises(RuntimeError, match="not running as a task"):
        Context("8", "", frames.append, "plain").set_task_status("nope")
