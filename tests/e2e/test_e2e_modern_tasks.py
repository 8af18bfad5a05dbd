"""The tasks extension (io.modelcontextprotocol/tasks, 2026-07-28) through the real host and
tool processes: the official `mcp` client with a tasks ClientExtension (tasks_client.py) over
stdio and HTTP, raw JSON for what the client cannot express (listen streams with taskIds,
principals), a legacy 2025-11-25 session beside a modern client on one host, and one task store
whose tasks only their owner can see."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import orjson
import pytest

from tests.e2e.tasks_client import TASKS, Tasks, cancel_task, get_task
from tests.support.hosts import HOST
from tests.support.http import ACCEPT, answer_of, headers_for, open_raw_session, rpc, sse_events
from tests.support.matrix import Auth

EVERYTHING = str(Path(__file__).resolve().parents[2] / "examples" / "tools" / "everything.py")
SUB = "io.modelcontextprotocol/subscriptionId"
DECLARED = {"elicitation": {}, "extensions": {TASKS: {}}}


def meta(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": DECLARED if capabilities is None else capabilities,
    }


async def _elicit(context: Any, params: Any) -> types.ElicitResult:
    values = {"name": "Ada", "confirm": True}
    return types.ElicitResult(
        action="accept", content={k: values[k] for k in params.requested_schema["properties"]}
    )


def _answer(key: str, request: dict[str, Any]) -> dict[str, Any]:
    """The Tasks extension's answer to a task's input request (a person saying yes)."""
    assert request["method"] == "elicitation/create"
    return {"action": "accept", "content": {"confirm": True, "name": "Ada"}}


async def _tasks_through_the_client(client: Any, tasks: Tasks) -> None:
    session = client.session
    assert session.protocol_version == "2026-07-28"
    assert TASKS in (session.server_capabilities.extensions or {})
    # a task-optional tool runs as a task (the claim polls tasks/get to its inlined result)
    done = await client.call_tool("slow_compute", {"seconds": 0.1, "label": "x"})
    assert done.content[0].text == "Computed x after 0.1s" and len(tasks.created) == 1
    # a task waiting on input: answered with tasks/update, then completed
    confirmed = await client.call_tool("confirm_delete", {"filename": "f.txt"})
    assert confirmed.content[0].text == "Deleted f.txt"
    # a tool error is a completed task with an isError result
    failed = await client.call_tool("failing_job", {})
    assert failed.is_error and "failed on purpose" in failed.content[0].text
    # the input round trip first (tools/call), then a task (input_before_task=True)
    greeted = await client.call_tool("test_tool_with_task", {})
    assert greeted.content[0].text == "Hello, Ada!"
    # create, see it working, cancel, see it cancelled; cancelling again is acknowledged too
    created = await session.call_tool("slow_compute", {"seconds": 30}, allow_claimed=True)
    assert created.result_type == "task" and created.status == "working"
    assert (await get_task(session, created.task_id)).status == "working"
    assert (await cancel_task(session, created.task_id)).result_type == "complete"
    cancelled = await get_task(session, created.task_id)
    assert cancelled.status == "cancelled" and cancelled.result is None
    assert (await cancel_task(session, created.task_id)).result_type == "complete"
    # a synchronous tool stays synchronous
    assert (await client.call_tool("greet", {"name": "Bo"})).content[0].text == "Hello, Bo!"


async def test_official_client_runs_tasks_over_stdio() -> None:
    from mcp import Client, StdioServerParameters

    tasks = Tasks(answer=_answer)
    params = StdioServerParameters(command=HOST[0], args=[*HOST[1:], "run", EVERYTHING], env=dict(os.environ))
    async with Client(params, cache=None, extensions=[tasks], elicitation_callback=_elicit) as client:
        await _tasks_through_the_client(client, tasks)


async def test_official_client_runs_tasks_over_http_beside_a_legacy_session(http_host: Any) -> None:
    """One host, at the same time: a modern client running tasks through the extension, a
    legacy official client, and a legacy 2025-11-25 session (raw: the client cannot send
    params.task) with a task of its own; one task store, and neither sees the other's tasks."""
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    host = http_host("run", EVERYTHING)
    tasks = Tasks(answer=_answer)
    async with (
        Client(host.url, cache=None, extensions=[tasks], elicitation_callback=_elicit) as modern,
        Client(host.url, mode="legacy", cache=None) as legacy,
        httpx2.AsyncClient(timeout=30) as raw,
    ):
        assert legacy.session.protocol_version == "2025-11-25"
        session_id = await open_raw_session(raw, host.url)
        call = {"name": "slow_compute", "arguments": {"seconds": 30}, "task": {"ttl": 60000}}
        old = answer_of(
            await raw.post(host.url, content=rpc(1, "tools/call", call), headers=headers_for(session_id))
        )
        old_id = old["result"]["task"]["taskId"]
        assert (await legacy.call_tool("greet", {"name": "Al"})).content[0].text == "Hello, Al!"
        await _tasks_through_the_client(modern, tasks)
        with pytest.raises(MCPError) as refused:  # the stateful session's task is not the client's
            await get_task(modern.session, old_id)
        assert refused.value.error.code == -32602
        for task_id, status in ((tasks.created[0], None), (old_id, "working")):
            got = answer_of(
                await raw.post(
                    host.url,
                    content=rpc(2, "tasks/get", {"taskId": task_id}),
                    headers=headers_for(session_id),
                )
            )
            if status is None:
                assert got["error"]["code"] == -32602  # the modern client's task is not the session's
            else:
                assert got["result"]["status"] == status


def test_listen_stream_gets_notifications_for_its_tasks_over_stdio(raw_host: Any) -> None:
    host = raw_host("run", EVERYTHING)
    created = host.request(
        1, "tools/call", {"name": "confirm_delete", "arguments": {"filename": "a"}, "_meta": meta()}
    )["result"]
    assert created["resultType"] == "task" and "requestState" not in created
    task_id = created["taskId"]
    wanted = {"taskIds": [task_id, "unknown-task"]}
    host.send(
        {
            "jsonrpc": "2.0",
            "id": "L",
            "method": "subscriptions/listen",
            "params": {"notifications": wanted, "_meta": meta()},
        }
    )
    ack = host.recv()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"] == {"_meta": {SUB: "L"}, "notifications": {"taskIds": [task_id]}}
    task = _poll(host, task_id, "input_required")
    (key,) = task["inputRequests"]
    responses = {key: {"action": "accept", "content": {"confirm": True}}, "other": {"action": "decline"}}
    update = {"taskId": task_id, "_meta": meta(), "inputResponses": responses}
    host.send({"jsonrpc": "2.0", "id": 3, "method": "tasks/update", "params": update})
    statuses, ack = [], None
    while ack is None or statuses[-1:] != ["completed"]:  # the ack and the notifications, any order
        message = host.recv()
        if message.get("id") == 3:
            ack = message
        elif message.get("method") == "notifications/tasks":
            assert message["params"]["_meta"] == {SUB: "L"} and message["params"]["taskId"] == task_id
            statuses.append(message["params"]["status"])
    assert ack["result"]["resultType"] == "complete" and "taskId" not in ack["result"]
    assert statuses == ["working", "completed"]
    done = host.request(4, "tasks/get", {"taskId": task_id, "_meta": meta()})["result"]
    assert done["result"]["content"] == [{"type": "text", "text": "Deleted a"}]
    # without the extension: tasks/* and taskIds are refused, a task-required tool too
    for request_id, method, params in (
        (5, "tasks/get", {"taskId": task_id}),
        (6, "subscriptions/listen", {"notifications": {"taskIds": [task_id]}}),
        (7, "tools/call", {"name": "failing_job", "arguments": {}}),
    ):
        refused = host.request(request_id, method, {**params, "_meta": meta({})})
        assert refused["error"]["code"] == -32021, refused
        assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    # and a task-optional tool answers synchronously
    sync = host.request(
        8, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}, "_meta": meta({})}
    )
    assert sync["result"]["resultType"] == "complete" and "taskId" not in sync["result"]
    # a JSON-RPC error during the call (its timeout) is a failed task with the error inlined
    failed_id = host.request(
        9, "tools/call", {"name": "protocol_error_job", "arguments": {}, "_meta": meta()}
    )["result"]["taskId"]
    failed = _poll(host, failed_id, "failed")
    assert failed["error"]["code"] == -32603 and "result" not in failed


def _poll(host: Any, task_id: str, status: str) -> dict[str, Any]:
    """tasks/get until the task has `status`: polling is how the extension's clients follow a
    task (bounded: 400 polls 25 ms apart)."""
    for attempt in range(400):
        task = host.request(
            f"poll-{task_id[:6]}-{attempt}", "tasks/get", {"taskId": task_id, "_meta": meta()}
        )
        if task["result"]["status"] == status:
            return task["result"]
        time.sleep(0.025)
    raise AssertionError(f"task {task_id} never reached {status}")


# -- two principals over HTTP -----------------------------------------------------------------------
def _headers(token: str, method: str, name: str | None = None) -> dict[str, str]:
    headers = {
        "authorization": f"Bearer {token}",
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    if name is not None:
        headers["mcp-name"] = name
    return headers


async def _post(client: Any, url: str, token: str, id_: Any, method: str, params: dict[str, Any]) -> Any:
    name = params.get("taskId") or params.get("name")
    body = orjson.dumps(
        {"jsonrpc": "2.0", "id": id_, "method": method, "params": {**params, "_meta": meta()}}
    )
    response = await client.post(url, content=body, headers=_headers(token, method, name))
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return response.status_code, orjson.loads(sse_events(response.text)[-1]["data"])
    return response.status_code, response.json()


async def test_two_principals_never_see_each_others_tasks(tmp_path: Path, http_host: Any) -> None:
    auth = Auth(tmp_path)
    host = http_host("run", EVERYTHING, *auth.options())
    alice, bob = auth.token("alice"), auth.token("bob")
    async with httpx2.AsyncClient(timeout=30) as client:
        status, created = await _post(
            client, host.url, alice, 1, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 30}}
        )
        assert status == 200 and created["result"]["resultType"] == "task"
        task_id = created["result"]["taskId"]
        for id_, method, extra in (
            (2, "tasks/get", {}),
            (3, "tasks/cancel", {}),
            (4, "tasks/update", {"inputResponses": {}}),
        ):
            status, refused = await _post(client, host.url, bob, id_, method, {"taskId": task_id, **extra})
            assert status == 400 and refused["error"]["code"] == -32602, refused
            assert refused["error"]["message"] == "Failed to retrieve task: Task not found"
        # bob's listen stream does not get alice's task
        listen = {"notifications": {"taskIds": [task_id]}, "_meta": meta()}
        body = orjson.dumps({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": listen})
        async with client.stream(
            "POST", host.url, content=body, headers=_headers(bob, "subscriptions/listen")
        ) as stream:
            async for line in stream.aiter_lines():
                if line.startswith("data:"):
                    ack = orjson.loads(line[5:])
                    break
        assert ack["params"]["notifications"] == {}
        status, mine = await _post(client, host.url, alice, 5, "tasks/get", {"taskId": task_id})
        assert status == 200 and mine["result"]["status"] == "working"
        # Mcp-Name must be the task id on tasks/*
        wrong = _headers(alice, "tasks/get", "another-task")
        body = orjson.dumps(
            {"jsonrpc": "2.0", "id": 6, "method": "tasks/get", "params": {"taskId": task_id, "_meta": meta()}}
        )
        response = await client.post(host.url, content=body, headers=wrong)
        assert response.status_code == 400 and response.json()["error"]["code"] == -32020
        # alice's listen stream hears of her task's cancellation (notifications/tasks)
        listen = {"notifications": {"taskIds": [task_id]}, "_meta": meta()}
        body = orjson.dumps({"jsonrpc": "2.0", "id": "M", "method": "subscriptions/listen", "params": listen})
        headers = _headers(alice, "subscriptions/listen")
        with anyio.fail_after(15):
            async with client.stream("POST", host.url, content=body, headers=headers) as stream:
                lines = stream.aiter_lines()
                frames = (orjson.loads(line[5:]) async for line in lines if line.startswith("data:"))
                ack = await anext(frames)
                assert ack["params"]["notifications"] == {"taskIds": [task_id]}
                status, _ = await _post(client, host.url, alice, 7, "tasks/cancel", {"taskId": task_id})
                assert status == 200
                note = await anext(frames)
        assert note["method"] == "notifications/tasks"
        assert note["params"]["taskId"] == task_id and note["params"]["status"] == "cancelled"
        assert note["params"]["_meta"] == {SUB: "M"}
        status, ended = await _post(client, host.url, alice, 8, "tasks/get", {"taskId": task_id})
        assert ended["result"]["status"] == "cancelled"
