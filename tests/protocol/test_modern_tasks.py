"""The tasks extension in the 2026-07-28 era, sans-IO: ModernEra's tasks/* and task
creation over the shared TaskStore (owners), and the DetailedTask shapes."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from protomcp_host.calls.envelope import tool_from_definition
from protomcp_host.protocol.catalog import Catalog
from protomcp_host.protocol.modern import ModernShared, task_outcome
from protomcp_host.protocol.records import TaskCancel, TaskInput, TasksUnsettled
from protomcp_host.protocol.request_meta import CLIENT_CAPABILITIES, PROTOCOL_VERSION, TASKS_EXTENSION
from protomcp_host.protocol.session import Call, Send, Session, ToolAnswer
from protomcp_host.protocol.tasks import Task, TaskMethods, TaskNotFound, TaskStore
from protomcp_sdk.wire import envelope_pb2 as pb

pytestmark = pytest.mark.fast  # starts no process

INFO = {"name": "protomcp-test", "version": "9.9"}
DECLARED = {PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}}
PLAIN = {PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}}
T0 = 1_700_000_000.0


def _tool(name: str, task: str = "", before: bool = False) -> Any:
    return tool_from_definition(
        pb.ToolDefinition(
            name=name,
            description=name,
            input_schema_json='{"type":"object"}',
            task_support_mode=task,
            input_before_task=before,
        ),
        owner="a.py",
    )


def make(store: TaskStore, owner: str = "principal:alice") -> Session:
    catalog = Catalog()
    catalog.replace(
        "a.py",
        [
            _tool("sync"),
            _tool("opt", "optional"),
            _tool("req", "required"),
            _tool("ask", "required", before=True),
        ],
    )
    session = ModernShared(catalog, INFO, serve_modern=True, task_store=store).session(owner=owner)
    session.tasks.now = T0
    return session


def line(method: str, params: dict[str, Any], id_: Any = 1, meta: Any = DECLARED) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": {**params, "_meta": meta}})


def reply(session: Session, data: bytes) -> dict[str, Any]:
    [event] = session.receive(data)
    assert isinstance(event, Send), event
    return orjson.loads(event.data)


def create(session: Session, tool: str = "opt", id_: Any = 1) -> tuple[dict[str, Any], Call]:
    sent, call = session.receive(line("tools/call", {"name": tool, "arguments": {}}, id_))
    assert isinstance(sent, Send) and isinstance(call, Call) and call.task is not None
    return orjson.loads(sent.data)["result"], call


def test_discover_offers_the_extension() -> None:
    result = reply(make(TaskStore()), line("server/discover", {}))["result"]
    assert result["capabilities"]["extensions"] == {TASKS_EXTENSION: {}}
    assert "tasks" not in result["capabilities"]


def test_a_declaring_request_gets_a_flat_create_task_result() -> None:
    store = TaskStore()
    session = make(store)
    created, call = create(session)
    assert created["resultType"] == "task" and created["status"] == "working"
    assert isinstance(created["ttlMs"], int) and isinstance(created["pollIntervalMs"], int)
    assert not {"task", "ttl", "pollInterval", "requestState", "inputRequests"} & created.keys()
    assert store.find(created["taskId"], "principal:alice") is call.task
    assert call.id not in session.in_flight  # answered already: the call runs for its task
    # a synchronous tool, and a request without the extension, answer as usual
    [sync] = session.receive(line("tools/call", {"name": "sync", "arguments": {}}, 2))
    assert isinstance(sync, Call) and sync.task is None
    [plain] = session.receive(line("tools/call", {"name": "opt", "arguments": {}}, 3, PLAIN))
    assert isinstance(plain, Call) and plain.task is None
    refused = reply(session, line("tools/call", {"name": "req", "arguments": {}}, 4, PLAIN))
    assert refused["error"]["code"] == -32021


def test_input_before_task_runs_as_a_request_until_it_becomes_a_task() -> None:
    store = TaskStore()
    session = make(store)
    [call] = session.receive(line("tools/call", {"name": "ask", "arguments": {}}))
    assert isinstance(call, Call) and call.task is None and call.task_later
    created = orjson.loads(session.era.become_task(session, call) or b"{}")["result"]
    assert created["resultType"] == "task" and call.task is not None and call.id not in session.in_flight
    assert session.era.become_task(session, call) is None  # once


def test_get_update_cancel_of_own_tasks_only() -> None:
    store = TaskStore()
    alice, bob = make(store), make(store, "principal:bob")
    created, call = create(alice)
    task_id = created["taskId"]
    got = reply(alice, line("tasks/get", {"taskId": task_id}, 2))["result"]
    assert got["resultType"] == "complete" and got["status"] == "working" and got["taskId"] == task_id
    for method, extra in (("tasks/get", {}), ("tasks/cancel", {}), ("tasks/update", {"inputResponses": {}})):
        refused = reply(bob, line(method, {"taskId": task_id, **extra}, 3))
        assert refused["error"] == {"code": -32602, "message": "Failed to retrieve task: Task not found"}
    refused = reply(alice, line("tasks/get", {"taskId": task_id}, 4, PLAIN))
    assert refused["error"]["code"] == -32021
    bad = reply(alice, line("tasks/update", {"taskId": task_id, "inputResponses": None}, 5))
    assert bad["error"]["code"] == -32602
    update = alice.receive(line("tasks/update", {"taskId": task_id, "inputResponses": {"k": {}}}, 6))
    assert isinstance(update[0], TaskInput) and update[0].responses == {"k": {}}
    assert orjson.loads(update[1].data)["result"]["resultType"] == "complete"
    cancel, ack = alice.receive(line("tasks/cancel", {"taskId": task_id}, 7))
    assert isinstance(cancel, TaskCancel) and cancel.task is call.task
    assert orjson.loads(ack.data)["result"] == orjson.loads(update[1].data)["result"]
    store.finish(call.task, "cancelled", b"", "stop", T0 + 1)
    [again] = alice.receive(line("tasks/cancel", {"taskId": task_id}, 8))  # idempotent: just the ack
    assert isinstance(again, Send) and orjson.loads(again.data)["result"]["resultType"] == "complete"


def test_detailed_task_inlines_what_its_status_carries() -> None:
    store = TaskStore()
    session = make(store)
    _, call = create(session)
    task = call.task
    assert task is not None
    task.inputs["k"] = {"method": "elicitation/create", "params": {"message": "?"}}
    store.update(task, T0 + 1, status="input_required")
    assert task.detailed()["inputRequests"] == task.inputs
    outcome = task_outcome(session, call, ToolAnswer([b'[{"type":"text","text":"hi"}]'], is_error=True))
    store.finish(task, "completed", outcome, None, T0 + 2)
    detailed = task.detailed()
    assert detailed["result"]["isError"] is True and detailed["result"]["content"][0]["text"] == "hi"
    assert "inputRequests" not in detailed and "error" not in detailed


def test_listen_is_granted_only_the_principals_task_ids() -> None:
    store = TaskStore()
    alice, bob = make(store), make(store, "principal:bob")
    mine = create(alice)[0]["taskId"]
    theirs = create(bob)[0]["taskId"]
    [ack] = alice.receive(
        line("subscriptions/listen", {"notifications": {"taskIds": [mine, theirs, 5]}}, "L")
    )
    assert orjson.loads(ack.data)["params"]["notifications"] == {"taskIds": [mine]}


def test_the_store_is_shared_by_owners_that_never_see_each_other() -> None:
    store = TaskStore(max_tasks=2)
    legacy = TaskMethods(store, "session:1")
    a = store.create(None, T0, "principal:a")
    b = store.create(None, T0, "session:1")
    try:
        store.find(a.id, "session:1")
        raise AssertionError("found another owner's task")
    except TaskNotFound:
        pass
    assert legacy.running() == [b] and store.running("principal:a") == [a]
    store.create(None, T0, "principal:a")  # the limit is per owner
    assert store.page(None, "session:1")[0] == [b]
    assert store.expire(T0 + 3600, "session:1") == [b] and store.find(a.id, "principal:a") is a
    assert store.owners() == ["principal:a"]


def test_while_unsettled_a_copy_or_an_unknown_id_waits_and_the_rest_answers_at_once() -> None:
    """TaskStore.unsettled (a shared store's bus broke): tasks/* of another host's task that is
    not final, or of an id unknown here, becomes TasksUnsettled, whose answer() the calls layer
    takes once the copies are settled; a task running here and a final one answer at once."""
    store = TaskStore()
    session = make(store)
    _, call = create(session)  # its call runs here
    assert call.task is not None
    copy = Task("copy", 0, 60_000, T0, T0, owner="principal:alice")  # another host's, working
    final = Task("final", 0, 60_000, T0, T0, status="completed", outcome=b'{"content":[]}')
    final.owner = "principal:alice"
    store.adopt(copy)
    store.adopt(final)
    store.unsettled = True
    waits: dict[str, Any] = {}
    for method, extra in (("tasks/get", {}), ("tasks/cancel", {}), ("tasks/update", {"inputResponses": {}})):
        for task_id in ("copy", "unknown"):
            [event] = session.receive(line(method, {"taskId": task_id, **extra}, 2))
            assert isinstance(event, TasksUnsettled), (method, task_id, event)
            waits[f"{method} {task_id}"] = event
        for task_id in (call.task.id, "final"):
            events = session.receive(line(method, {"taskId": task_id, **extra}, 3))
            assert not any(isinstance(e, TasksUnsettled) for e in events), (method, task_id, events)
    # settled (or waited long enough): answered from what is known then, never waiting again
    copy.status, copy.outcome = "completed", b'{"content":[],"isError":false}'
    got = waits["tasks/get copy"].answer()
    assert isinstance(got, Send) and orjson.loads(got.data)["result"]["status"] == "completed"
    gone = waits["tasks/get unknown"].answer()
    assert isinstance(gone, Send) and orjson.loads(gone.data)["error"]["code"] == -32602
    copy.status = "working"
    update = waits["tasks/update copy"].answer()
    assert isinstance(update, list) and isinstance(update[0], TaskInput)
    cancel = waits["tasks/cancel copy"].answer()
    assert isinstance(cancel, list) and isinstance(cancel[0], TaskCancel)
    store.unsettled = False
    [at_once] = session.receive(line("tasks/get", {"taskId": "copy"}, 4))
    assert isinstance(at_once, Send)
