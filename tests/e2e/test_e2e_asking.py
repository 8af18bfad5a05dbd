"""Sampling, elicitation and roots end to end: a tool asks, the host asks the client session
that made the call, the answer goes back to the suspended call (tests/tools/features/asking.py)."""

from __future__ import annotations

from typing import Any

import anyio
from mcp import types

from tests.support.hosts import TOOLS, mcp_session

ASKING = str(TOOLS / "features" / "asking.py")
RUN = ("run", ASKING)


def _text(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def _sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    seen.append(params)
    question = params.messages[0].content.text
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=f"echo:{question}"),
        model="test-model",
        stop_reason="endTurn",
    )


seen: list[types.CreateMessageRequestParams] = []


async def test_sampling_from_async_and_sync_tools() -> None:
    seen.clear()
    async with mcp_session(*RUN, sampling_callback=_sample) as session:
        result = await session.call_tool("ask_async", {"question": "why?"})
        assert not result.is_error, _text(result)
        assert _text(result) == "test-model|endTurn|echo:why?"
        params = seen[0]
        assert (params.max_tokens, params.system_prompt, params.temperature) == (50, "Be brief.", 0.2)
        result = await session.call_tool("ask_sync", {"question": "how?"})
        assert _text(result) == "sync:echo:how?"
        assert seen[1].max_tokens == 20


async def test_sampling_while_other_calls_run() -> None:
    async with mcp_session(*RUN, sampling_callback=_sample) as session:
        results: dict[str, str] = {}

        async def call(name: str, arguments: dict[str, Any] | None = None) -> None:
            results[name] = _text(await session.call_tool(name, arguments or {}))

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "slow_async")
                tg.start_soon(call, "slow_sync")
                await call("ask_async", {"question": "a"})
                await call("ask_sync", {"question": "b"})
                assert "slow_async" not in results and "slow_sync" not in results  # still running
                await call("open_gate")
        assert results["ask_async"].endswith("echo:a") and results["ask_sync"] == "sync:echo:b"
        assert results["slow_async"] == "async done" and results["slow_sync"] == "sync done"


async def test_client_without_sampling_gets_a_tool_error() -> None:
    async with mcp_session(*RUN) as session:
        assert session is not None
        result = await session.call_tool("ask_async", {"question": "x"})
        assert result.is_error
        assert "does not support sampling" in _text(result)
        result = await session.call_tool("roots", {})
        assert result.is_error and "roots" in _text(result)


async def test_elicitation_form_accept_decline_cancel() -> None:
    answers: list[types.ElicitResult] = []
    requests: list[Any] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        requests.append(params)
        return answers.pop(0)

    async with mcp_session(*RUN, elicitation_callback=elicit) as session:
        answers.append(
            types.ElicitResult(action="accept", content={"name": "Jane", "age": 25, "color": "green"})
        )
        result = await session.call_tool("ask_profile", {})
        assert _text(result) == "accept:Jane:25:green:True"  # defaults fill what was not given
        schema = requests[0].requested_schema
        props = schema["properties"]
        assert props["name"] == {"default": "John Doe", "title": "Name", "type": "string"}
        assert props["age"]["default"] == 30 and props["age"]["type"] == "integer"
        assert props["score"]["default"] == 95.5 and props["score"]["type"] == "number"
        assert props["status"]["enum"] == ["active", "inactive"] and props["status"]["default"] == "active"
        assert props["color"]["enum"] == ["red", "green"] and props["color"]["type"] == "string"
        assert props["verified"]["default"] is True and props["verified"]["type"] == "boolean"
        assert "$defs" not in schema and requests[0].message == "Your profile?"
        answers.append(types.ElicitResult(action="decline"))
        assert _text(await session.call_tool("ask_profile", {})) == "action=decline"
        answers.append(types.ElicitResult(action="cancel"))
        assert _text(await session.call_tool("ask_profile", {})) == "action=cancel"
        answers.append(types.ElicitResult(action="accept", content={"ok": True}))
        assert _text(await session.call_tool("ask_confirm", {})) == "accept:Confirm(ok=True)"
        answers.append(types.ElicitResult(action="accept", content={"ok": "not a bool"}))
        result = await session.call_tool("ask_confirm", {})
        assert result.is_error and "does not fit the form" in _text(result)


async def test_elicitation_url_mode() -> None:
    requests: list[Any] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        requests.append(params)
        return types.ElicitResult(action="accept")

    async with mcp_session(*RUN, elicitation_callback=elicit) as session:
        result = await session.call_tool("ask_url", {})
        assert _text(result) == "url:accept"
        (params,) = requests
        assert params.mode == "url" and params.url == "https://example.com/login"
        assert params.elicitation_id == "login-1" and params.message == "Log in, please"


async def test_roots_listed() -> None:
    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(
            roots=[types.Root(uri="file:///work/a", name="A"), types.Root(uri="file:///work/b")]
        )

    async with mcp_session(*RUN, list_roots_callback=roots) as session:
        assert _text(await session.call_tool("roots", {})) == "file:///work/a=A;file:///work/b=None"
        assert _text(await session.call_tool("roots_sync", {})) == "file:///work/a;file:///work/b"


def _init_with(raw: Any, capabilities: dict[str, Any]) -> None:
    raw.request(
        0,
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": {"name": "raw", "version": "1"},
        },
    )
    raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def _next_request(raw: Any) -> dict[str, Any]:
    while True:
        message = raw.recv()
        if "method" in message and "id" in message:
            return message


def test_cancelling_the_call_cancels_the_sampling_request(raw_host: Any) -> None:
    raw = raw_host("run", ASKING)
    _init_with(raw, {"sampling": {}})
    raw.send(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "ask_async", "arguments": {"question": "q"}},
        }
    )
    asked = _next_request(raw)
    assert asked["method"] == "sampling/createMessage"
    assert asked["params"]["messages"][0]["content"]["text"] == "q"
    raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})
    while True:
        message = raw.recv()
        if message.get("method") == "notifications/cancelled":
            break
        assert message.get("id") != 7, "a cancelled call gets no answer"
    assert message["params"]["requestId"] == asked["id"]
    # The tool process is still serving; a late answer to the dropped request is ignored.
    raw.send(
        {
            "jsonrpc": "2.0",
            "id": asked["id"],
            "result": {"role": "assistant", "content": {"type": "text", "text": "late"}, "model": "m"},
        }
    )
    reply = raw.request(8, "tools/call", {"name": "open_gate", "arguments": {}})
    assert reply["result"]["content"][0]["text"] == "open"


def test_sampling_timeout_cancels_the_request_and_fails_the_tool(raw_host: Any) -> None:
    raw = raw_host("run", ASKING)
    _init_with(raw, {"sampling": {}})
    raw.send(
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ask_short", "arguments": {}}}
    )
    asked = _next_request(raw)
    assert asked["method"] == "sampling/createMessage"
    cancelled = raw.recv()
    assert cancelled["method"] == "notifications/cancelled"
    assert cancelled["params"]["requestId"] == asked["id"]
    reply = raw.recv_response(3)
    assert reply["result"]["isError"] is True
    assert "did not answer sampling/createMessage within 0.5s" in reply["result"]["content"][0]["text"]


def test_client_error_answer_reaches_the_tool(raw_host: Any) -> None:
    raw = raw_host("run", ASKING)
    _init_with(raw, {"sampling": {}})
    raw.send(
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "ask_sync", "arguments": {"question": "q"}},
        }
    )
    asked = _next_request(raw)
    raw.send(
        {"jsonrpc": "2.0", "id": asked["id"], "error": {"code": -1, "message": "User rejected sampling"}}
    )
    reply = raw.recv_response(4)
    assert reply["result"]["isError"] is True
    assert "User rejected sampling" in reply["result"]["content"][0]["text"]


async def test_roots_list_changed_runs_the_hooks() -> None:
    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/a")])

    async with mcp_session(*RUN, list_roots_callback=roots) as session:
        assert _text(await session.call_tool("roots_changes", {})) == "0/0"
        await session.send_roots_list_changed()
        # The notification reaches the tool process before the next call does; the sync hook
        # runs at once, the async one as a task that has run by the time the call is served.
        assert _text(await session.call_tool("roots_changes", {})) == "1/1"


async def test_sampling_through_middleware(tmp_path: Any) -> None:
    middleware = tmp_path / "mw.py"
    middleware.write_text(
        "from protomcp_sdk import middleware\n\n"
        "@middleware\n"
        "async def passing(call, call_next):\n"
        "    return await call_next(call)\n"
    )
    async with mcp_session("run", ASKING, str(middleware), sampling_callback=_sample) as session:
        with anyio.fail_after(30):
            result = await session.call_tool("ask_async", {"question": "via middleware"})
        assert _text(result) == "test-model|endTurn|echo:via middleware"
