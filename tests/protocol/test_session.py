"""The sans-IO MCP session (protomcp_host.protocol.session): lines in, events out, no I/O."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from protomcp_host.calls.envelope import tool_answer, tool_from_definition
from protomcp_host.protocol.catalog import Catalog, Tool
from protomcp_host.protocol.session import Call, CancelCall, Event, Send, Session
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.toollist import ToolListChange

pytestmark = pytest.mark.fast  # starts no process

SERVER_INFO = {"name": "protomcp-test", "version": "9.9"}
VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "minimum": 0}},
    "required": ["a"],
}


def make_tool(
    name: str,
    *,
    owner: str = "a.py",
    description: str = "",
    schema: dict[str, Any] | None = None,
    output_schema: dict[str, Any] | None = None,
    title: str = "",
    annotations: dict[str, Any] | None = None,
) -> Tool:
    return tool_from_definition(
        pb.ToolDefinition(
            name=name,
            description=description or f"The {name} tool.",
            input_schema_json=orjson.dumps(schema).decode() if schema is not None else "",
            output_schema_json=orjson.dumps(output_schema).decode() if output_schema is not None else "",
            title=title,
            annotations_json=orjson.dumps(annotations).decode() if annotations is not None else "",
        ),
        owner=owner,
    )


ADD = make_tool(
    "add",
    description="Add two numbers.",
    schema=ADD_SCHEMA,
    output_schema={"type": "object", "properties": {"result": {"type": "integer"}}},
    title="Adder",
    annotations={"readOnlyHint": True},
)
ECHO = make_tool("echo", schema={"type": "object", "properties": {"text": {"type": "string"}}})


def done(
    session: Session,
    call: Call,
    response: pb.CallToolResponse,
    raw: list[bytes] | None = None,
    trusted: bool = False,
) -> bytes | None:
    return session.call_done(call, tool_answer(response, raw, trusted))


def new_session(*tools: Tool, page_size: int = 1000) -> Session:
    catalog = Catalog(page_size=page_size)
    catalog.replace("a.py", list(tools) or [ADD, ECHO])
    return Session(catalog, SERVER_INFO)


def send(session: Session, message: Any) -> list[Event]:
    return session.receive(orjson.dumps(message))


def request(session: Session, id_: Any, method: str, params: dict[str, Any] | None = None) -> list[Event]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return send(session, message)


def notify(session: Session, method: str, params: dict[str, Any] | None = None) -> list[Event]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return send(session, message)


def only_send(events: list[Event]) -> bytes:
    assert len(events) == 1, events
    assert isinstance(events[0], Send), events
    return events[0].data


def answer(events: list[Event]) -> Any:
    data = only_send(events)
    assert b"\n" not in data
    return orjson.loads(data)


def error_of(events: list[Event]) -> tuple[Any, int, str]:
    reply = answer(events)
    assert set(reply) == {"jsonrpc", "id", "error"}
    return reply["id"], reply["error"]["code"], reply["error"]["message"]


def initialize(session: Session, version: str = "2025-11-25", initialized: bool = True) -> Any:
    reply = answer(
        request(
            session,
            0,
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        )
    )
    if initialized:
        assert notify(session, "notifications/initialized") == []
    return reply


def ready(version: str = "2025-11-25", *tools: Tool, page_size: int = 1000) -> Session:
    session = new_session(*tools, page_size=page_size)
    initialize(session, version)
    return session


def start_call(
    session: Session, id_: Any, name: str = "add", arguments: Any = None, meta: Any = None
) -> Call:
    params: dict[str, Any] = {"name": name, "arguments": {"a": 1} if arguments is None else arguments}
    if meta is not None:
        params["_meta"] = meta
    events = request(session, id_, "tools/call", params)
    assert len(events) == 1 and isinstance(events[0], Call), events
    return events[0]


def text_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


# -- malformed input ----------------------------------------------------------------------


def test_parse_error_answers_with_null_id() -> None:
    session = ready()
    reply_id, code, message = error_of(session.receive(b'{"jsonrpc": "2.0", "id": 1, "method": '))
    assert (reply_id, code) == (None, -32700)
    assert message.startswith("Parse error: ")


@pytest.mark.parametrize("line", [b"42", b'"ping"', b"null", b"true"])
def test_non_object_is_invalid_request(line: bytes) -> None:
    assert error_of(ready().receive(line)) == (
        None,
        -32600,
        "Invalid Request: a message must be a JSON object",
    )


def test_missing_method_echoes_the_id() -> None:
    assert error_of(send(ready(), {"jsonrpc": "2.0", "id": "q"})) == (
        "q",
        -32600,
        'Invalid Request: missing "method"',
    )


def test_bad_jsonrpc_version() -> None:
    assert error_of(send(ready(), {"jsonrpc": "1.0", "id": 3, "method": "ping"})) == (
        3,
        -32600,
        'Invalid Request: "jsonrpc" must be "2.0"',
    )


@pytest.mark.parametrize("raw_id", [True, None, 1.5, {"n": 1}])
def test_bad_id_types(raw_id: Any) -> None:
    assert error_of(request(ready(), raw_id, "ping")) == (
        None,
        -32600,
        'Invalid Request: "id" must be a string or an integer',
    )


def test_notification_gets_no_answer_but_request_does() -> None:
    session = ready()
    assert notify(session, "tools/list") == []
    assert notify(session, "no/such/method") == []
    assert answer(request(session, 1, "tools/list"))["id"] == 1


def test_unknown_method() -> None:
    assert error_of(request(ready(), "m", "resources/list")) == (
        "m",
        -32601,
        "Method not found: resources/list",
    )


def test_ids_are_echoed_verbatim() -> None:
    session = ready()
    assert only_send(request(session, "1", "ping")) == b'{"jsonrpc":"2.0","id":"1","result":{}}'
    assert only_send(request(session, 1, "ping")) == b'{"jsonrpc":"2.0","id":1,"result":{}}'
    assert only_send(request(session, -3, "ping")) == b'{"jsonrpc":"2.0","id":-3,"result":{}}'
    assert only_send(request(session, "", "ping")) == b'{"jsonrpc":"2.0","id":"","result":{}}'


def test_response_messages_from_the_client_are_ignored() -> None:
    session = ready()
    assert send(session, {"jsonrpc": "2.0", "id": 5, "result": {}}) == []
    assert send(session, {"jsonrpc": "2.0", "id": 6, "error": {"code": 1, "message": "x"}}) == []


# -- lifecycle -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "answered"), [*((v, v) for v in VERSIONS), ("2099-01-01", "2025-11-25"), ("1.0", "2025-11-25")]
)
def test_version_negotiation(asked: str, answered: str) -> None:
    session = new_session()
    reply = initialize(session, asked, initialized=False)
    capabilities: dict[str, Any] = {"logging": {}, "tools": {"listChanged": True}}
    if answered == "2025-11-25":  # tasks arrived in that revision
        capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    assert reply == {
        "jsonrpc": "2.0",
        "id": 0,
        "result": {
            "protocolVersion": answered,
            "capabilities": capabilities,
            "serverInfo": SERVER_INFO,
        },
    }
    assert session.version == answered
    assert session.initialized is False


def test_initialize_records_client_info_and_capabilities() -> None:
    session = new_session()
    reply = answer(
        request(
            session,
            1,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {"roots": {"listChanged": True}},
                "clientInfo": {"name": "c", "version": "2"},
            },
        )
    )
    assert reply["result"]["protocolVersion"] == "2025-06-18"
    assert session.client_info == {"name": "c", "version": "2"}
    assert session.client_capabilities == {"roots": {"listChanged": True}}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, 'Invalid params: "protocolVersion" must be a string'),
        ({"protocolVersion": 20250618}, 'Invalid params: "protocolVersion" must be a string'),
        (
            {"protocolVersion": "2025-06-18", "capabilities": []},
            'Invalid params: "capabilities" must be an object',
        ),
        (
            {"protocolVersion": "2025-06-18", "clientInfo": "me"},
            'Invalid params: "clientInfo" must be an object',
        ),
    ],
)
def test_initialize_with_bad_params(params: dict[str, Any], message: str) -> None:
    session = new_session()
    assert error_of(request(session, 1, "initialize", params)) == (1, -32602, message)
    assert session.version is None


@pytest.mark.parametrize("method", ["tools/list", "tools/call", "logging/setLevel"])
def test_requests_before_initialize_are_refused(method: str) -> None:
    session = new_session()
    assert error_of(request(session, 4, method, {})) == (
        4,
        -32600,
        "Invalid Request: the session is not initialized; send initialize first",
    )


def test_ping_before_initialize_is_answered() -> None:
    assert answer(request(new_session(), "p", "ping")) == {"jsonrpc": "2.0", "id": "p", "result": {}}


def test_unknown_method_before_initialize_is_method_not_found() -> None:
    assert error_of(request(new_session(), 1, "nope"))[1] == -32601


def test_initialized_notification_before_initialize_is_ignored() -> None:
    session = new_session()
    assert notify(session, "notifications/initialized") == []
    assert session.initialized is False


def test_double_initialize_is_refused_and_keeps_the_version() -> None:
    session = ready("2025-06-18")
    assert error_of(
        request(session, 9, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {}})
    ) == (9, -32600, "Invalid Request: the session is already initialized")
    assert session.version == "2025-06-18"


# -- batches -------------------------------------------------------------------------------


def test_batch_in_2025_03_26_gets_one_array_reply_in_order() -> None:
    session = ready("2025-03-26")
    line = orjson.dumps(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/whatever"},
            7,
            {"jsonrpc": "2.0", "id": "u", "method": "nope"},
            {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "error"}},
        ]
    )
    assert answer(session.receive(line)) == [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": "Invalid Request: a message must be a JSON object"},
        },
        {"jsonrpc": "2.0", "id": "u", "error": {"code": -32601, "message": "Method not found: nope"}},
        {"jsonrpc": "2.0", "id": 2, "result": {}},
    ]
    assert session.log_level == "error"


def test_batch_refuses_a_repeated_id_even_after_a_fast_first_answer() -> None:
    """The first request is answered at once (its id is free again), yet the second with the
    same id is a duplicate: one answer and one refusal, never two answers for one id."""
    session = ready("2025-03-26")
    line = orjson.dumps(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        ]
    )
    replies = answer(session.receive(line))
    assert replies[0] == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert replies[1]["id"] == 1 and replies[1]["error"]["code"] == -32600
    assert "already used" in replies[1]["error"]["message"]
    assert replies[2] == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert len(replies) == 3


def test_batch_with_tool_calls_is_sent_when_the_last_call_is_done() -> None:
    session = ready("2025-03-26")
    events = session.receive(
        orjson.dumps(
            [
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "add", "arguments": {"a": 1}},
                },
                {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo"}},
            ]
        )
    )
    assert [type(e) for e in events] == [Call, Call]
    first, third = events
    assert isinstance(first, Call) and isinstance(third, Call)
    assert first.batch is third.batch is not None
    three = pb.CallToolResponse(result_json='[{"type":"text","text":"three"}]')
    assert done(session, third, three) is None  # the batch still waits for call 1
    data = done(session, first, pb.CallToolResponse(result_json='[{"type":"text","text":"one"}]'))
    assert data is not None
    assert orjson.loads(data) == [
        {"jsonrpc": "2.0", "id": 2, "result": {}},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {"content": [{"type": "text", "text": "three"}], "isError": False},
        },
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"content": [{"type": "text", "text": "one"}], "isError": False},
        },
    ]


def test_batch_of_only_notifications_gets_no_reply() -> None:
    session = new_session()
    initialize(session, "2025-03-26", initialized=False)
    events = session.receive(
        orjson.dumps(
            [
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "method": "notifications/other"},
            ]
        )
    )
    assert events == []
    assert session.initialized is True


def test_batch_with_a_client_response_only_gets_no_reply() -> None:
    session = ready("2025-03-26")
    assert session.receive(b'[{"jsonrpc":"2.0","id":5,"result":{}}]') == []


def test_initialize_inside_a_batch_is_refused() -> None:
    session = ready("2025-03-26")
    line = orjson.dumps(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26"}},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        ]
    )
    assert answer(session.receive(line)) == [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {"code": -32600, "message": "Invalid Request: initialize must not be part of a batch"},
        },
        {"jsonrpc": "2.0", "id": 2, "result": {}},
    ]


def test_initialize_batch_before_initialize_is_refused() -> None:
    session = new_session()
    line = orjson.dumps(
        [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26"}}]
    )
    assert error_of(session.receive(line)) == (
        None,
        -32600,
        "Invalid Request: batches are not supported in an uninitialized session",
    )
    assert session.version is None


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25"])
def test_batches_are_refused_in_other_versions(version: str) -> None:
    session = ready(version)
    line = b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]'
    assert error_of(session.receive(line)) == (
        None,
        -32600,
        f"Invalid Request: batches are not supported in {version}",
    )


def test_empty_batch_is_invalid() -> None:
    assert error_of(ready("2025-03-26").receive(b"[]")) == (None, -32600, "Invalid Request: empty batch")


def test_cancelled_call_in_a_batch_does_not_hold_back_the_rest() -> None:
    session = ready("2025-03-26")
    events = session.receive(
        orjson.dumps(
            [
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "add", "arguments": {"a": 1}},
                },
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo"}},
            ]
        )
    )
    first, second = events
    assert isinstance(first, Call) and isinstance(second, Call)
    assert notify(session, "notifications/cancelled", {"requestId": 1}) == [CancelCall(first)]
    data = done(session, second, pb.CallToolResponse(result_json="[]"))
    assert data is not None
    assert orjson.loads(data) == [{"jsonrpc": "2.0", "id": 2, "result": {"content": [], "isError": False}}]


def test_cancelling_the_last_pending_call_of_a_batch_sends_the_rest() -> None:
    session = ready("2025-03-26")
    events = session.receive(
        orjson.dumps(
            [
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "add", "arguments": {"a": 1}},
                },
                {"jsonrpc": "2.0", "id": 2, "method": "ping"},
            ]
        )
    )
    (call,) = events
    assert isinstance(call, Call)
    events = notify(session, "notifications/cancelled", {"requestId": 1})
    assert events[0] == CancelCall(call)
    assert [orjson.loads(e.data) for e in events[1:] if isinstance(e, Send)] == [
        [{"jsonrpc": "2.0", "id": 2, "result": {}}]
    ]
    assert len(events) == 2


def test_cancelling_every_call_of_a_batch_sends_nothing() -> None:
    session = ready("2025-03-26")
    (call,) = session.receive(b'[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}]')
    assert isinstance(call, Call)
    assert notify(session, "notifications/cancelled", {"requestId": 1}) == [CancelCall(call)]
    assert done(session, call, pb.CallToolResponse()) is None


def test_cancel_inside_the_same_batch_as_its_call() -> None:
    session = ready("2025-03-26")
    events = session.receive(
        orjson.dumps(
            [
                {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}},
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
            ]
        )
    )
    assert len(events) == 3
    call, cancel, reply = events
    assert isinstance(call, Call) and cancel == CancelCall(call)
    assert reply == Send(b'[{"jsonrpc":"2.0","id":2,"result":{}}]')
    assert session.in_flight == {}


# -- tools/list --------------------------------------------------------------------------------


def test_tools_list_full_shape_in_2025_11_25() -> None:
    reply = answer(request(ready(), 1, "tools/list"))
    assert reply == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "tools": [
                {
                    "name": "add",
                    "title": "Adder",
                    "description": "Add two numbers.",
                    "inputSchema": ADD_SCHEMA,
                    "outputSchema": {"type": "object", "properties": {"result": {"type": "integer"}}},
                    "annotations": {"readOnlyHint": True},
                },
                {
                    "name": "echo",
                    "description": "The echo tool.",
                    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
                },
            ]
        },
    }


@pytest.mark.parametrize(
    ("version", "fields"),
    [
        ("2024-11-05", ["name", "description", "inputSchema"]),
        ("2025-03-26", ["name", "description", "inputSchema", "annotations"]),
        ("2025-06-18", ["name", "title", "description", "inputSchema", "outputSchema", "annotations"]),
        ("2025-11-25", ["name", "title", "description", "inputSchema", "outputSchema", "annotations"]),
    ],
)
def test_tool_fields_per_version(version: str, fields: list[str]) -> None:
    tools = answer(request(ready(version), 1, "tools/list"))["result"]["tools"]
    assert list(tools[0]) == fields
    assert tools[0]["inputSchema"] == ADD_SCHEMA


def test_pagination_with_page_size_two() -> None:
    tools = [make_tool(f"t{i}") for i in range(5)]
    session = ready("2025-11-25", *tools, page_size=2)
    seen: list[list[str]] = []
    cursor: str | None = None
    cursors: list[str] = []
    for index in range(3):
        params = {"cursor": cursor} if cursor is not None else {}
        result = answer(request(session, index, "tools/list", params))["result"]
        seen.append([t["name"] for t in result["tools"]])
        cursor = result.get("nextCursor")
        if index < 2:
            assert isinstance(cursor, str) and cursor
            cursors.append(cursor)
        else:
            assert set(result) == {"tools"}  # last page: no nextCursor
    assert seen == [["t0", "t1"], ["t2", "t3"], ["t4"]]
    assert len(set(cursors)) == 2


def test_exactly_one_full_page_has_no_next_cursor() -> None:
    session = ready("2025-11-25", make_tool("x"), make_tool("y"), page_size=2)
    assert set(answer(request(session, 1, "tools/list"))["result"]) == {"tools"}


@pytest.mark.parametrize("cursor", ["garbage", "", "b2Zmc2V0Ojk5", "Zm9vOjI="])
def test_invalid_cursor(cursor: str) -> None:
    session = ready("2025-11-25", *[make_tool(f"t{i}") for i in range(5)], page_size=2)
    assert error_of(request(session, 1, "tools/list", {"cursor": cursor})) == (
        1,
        -32602,
        f"Invalid cursor: {cursor!r}",
    )


def test_non_string_cursor() -> None:
    assert error_of(request(ready(), 1, "tools/list", {"cursor": 2})) == (
        1,
        -32602,
        'Invalid params: "cursor" must be a string',
    )


def test_null_cursor_is_the_first_page() -> None:
    assert [
        t["name"] for t in answer(request(ready(), 1, "tools/list", {"cursor": None}))["result"]["tools"]
    ] == [
        "add",
        "echo",
    ]


# -- tools/call ----------------------------------------------------------------------------------


def test_unknown_tool() -> None:
    assert error_of(request(ready(), 1, "tools/call", {"name": "nope", "arguments": {}})) == (
        1,
        -32602,
        "Unknown tool: nope",
    )


@pytest.mark.parametrize("arguments", [[1, 2], "a=1", 3, True])
def test_non_object_arguments(arguments: Any) -> None:
    assert error_of(request(ready(), 1, "tools/call", {"name": "add", "arguments": arguments})) == (
        1,
        -32602,
        'Invalid params: "arguments" must be an object',
    )


@pytest.mark.parametrize("params", [{}, {"name": 5}, {"name": None}])
def test_missing_or_bad_tool_name(params: dict[str, Any]) -> None:
    assert error_of(request(ready(), 1, "tools/call", params)) == (
        1,
        -32602,
        'Invalid params: "name" must be a string',
    )


@pytest.mark.parametrize(
    ("arguments", "text"),
    [
        ({}, "Invalid arguments for tool 'add': 'a' is a required property"),
        ({"a": "x"}, "Invalid arguments for tool 'add': a: 'x' is not of type 'integer'"),
        ({"a": 1, "b": -1}, "Invalid arguments for tool 'add': b: -1 is less than the minimum of 0"),
    ],
)
def test_schema_violation_is_an_error_result_naming_the_field(arguments: dict[str, Any], text: str) -> None:
    session = ready()
    assert answer(request(session, 5, "tools/call", {"name": "add", "arguments": arguments})) == {
        "jsonrpc": "2.0",
        "id": 5,
        "result": text_result(text),
    }
    assert session.in_flight == {}


def test_call_to_a_tool_with_a_broken_schema_still_starts() -> None:
    broken = make_tool("broken", schema={"type": "object", "properties": {"x": {"type": 12}}})
    session = ready("2025-11-25", broken)
    call = start_call(session, 1, name="broken", arguments={"x": 1})
    assert call.arguments == {"x": 1}


def test_valid_call_starts_a_call_with_the_progress_token() -> None:
    session = ready()
    call = start_call(session, "c1", arguments={"a": 2, "b": 3}, meta={"progressToken": "tok"})
    assert call.id == b'"c1"'
    assert call.tool is session.catalog.get("add")
    assert call.arguments == {"a": 2, "b": 3}
    assert call.progress_token == "tok"
    assert call.batch is None
    assert session.in_flight == {b'"c1"': call}


@pytest.mark.parametrize(
    ("meta", "token"), [({"progressToken": 7}, 7), ({}, None), ({"progressToken": True}, None), ("x", None)]
)
def test_progress_token_kinds(meta: Any, token: Any) -> None:
    assert start_call(ready(), 1, meta=meta).progress_token == token


@pytest.mark.parametrize("params", [{"name": "echo", "arguments": None}, {"name": "echo"}])
def test_null_or_missing_arguments_are_an_empty_object(params: dict[str, Any]) -> None:
    events = request(ready(), 2, "tools/call", params)
    assert len(events) == 1 and isinstance(events[0], Call)
    assert events[0].arguments == {}


def test_duplicate_in_flight_id_is_refused_until_the_call_is_done() -> None:
    session = ready()
    call = start_call(session, 1)
    assert error_of(request(session, 1, "ping")) == (
        1,
        -32600,
        "Invalid Request: this id is already in use by a request in progress",
    )
    assert session.in_flight == {b"1": call}
    assert done(session, call, pb.CallToolResponse(result_json="[]")) is not None
    assert start_call(session, 1).id == b"1"


def test_string_and_integer_ids_are_different_calls() -> None:
    session = ready()
    start_call(session, 1)
    assert isinstance(start_call(session, "1"), Call)
    assert set(session.in_flight) == {b"1", b'"1"'}


# -- call results -----------------------------------------------------------------------------------


def test_call_done_splices_content_verbatim() -> None:
    session = ready()
    call = start_call(session, 1)
    content = '[ {"type": "text", "text": "3"} ]'
    assert done(session, call, pb.CallToolResponse(result_json=content)) == (
        b'{"jsonrpc":"2.0","id":1,"result":{"content":' + content.encode() + b',"isError":false}}'
    )
    assert session.in_flight == {}


@pytest.mark.parametrize("version", VERSIONS)
def test_structured_content_only_from_2025_06_18(version: str) -> None:
    session = ready(version)
    call = start_call(session, "s")
    data = done(
        session,
        call,
        pb.CallToolResponse(
            result_json='[{"type":"text","text":"{\\"result\\": 3}"}]',
            structured_content_json='{"result": 3}',
        ),
    )
    assert data is not None
    if version in ("2025-06-18", "2025-11-25"):
        assert data == (
            b'{"jsonrpc":"2.0","id":"s","result":{"content":[{"type":"text","text":"{\\"result\\": 3}"}],'
            b'"structuredContent":{"result": 3},"isError":false}}'
        )
    else:
        assert orjson.loads(data)["result"] == {
            "content": [{"type": "text", "text": '{"result": 3}'}],
            "isError": False,
        }


def test_is_error_flag() -> None:
    session = ready()
    call = start_call(session, 1)
    data = done(
        session, call, pb.CallToolResponse(is_error=True, result_json='[{"type":"text","text":"no"}]')
    )
    assert data is not None
    assert orjson.loads(data)["result"] == {"content": [{"type": "text", "text": "no"}], "isError": True}


def test_empty_result_json_is_empty_content() -> None:
    session = ready()
    call = start_call(session, 1)
    assert done(session, call, pb.CallToolResponse()) == (
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}'
    )


@pytest.mark.parametrize(
    ("result_json", "structured"),
    [("[{", ""), ('{"type":"text"}', ""), ('"text"', ""), ("[]", "{nope"), ("[] []", "")],
)
def test_malformed_result_from_the_child_is_an_error_result(result_json: str, structured: str) -> None:
    session = ready()
    call = start_call(session, 1)
    data = done(
        session, call, pb.CallToolResponse(result_json=result_json, structured_content_json=structured)
    )
    assert data is not None
    assert orjson.loads(data) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": text_result("Tool 'add' returned malformed content"),
    }


def test_result_json_with_raw_newlines_is_re_encoded_to_one_line() -> None:
    session = ready()
    call = start_call(session, 1)
    data = done(
        session,
        call,
        pb.CallToolResponse(
            result_json='[\n  {"type": "text",\r\n   "text": "a\\nb"}\n]',
            structured_content_json='{\n"k": 1\n}',
        ),
    )
    assert data == (
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\\nb"}],'
        b'"structuredContent":{"k":1},"isError":false}}'
    )


def test_call_failed_is_an_error_result() -> None:
    session = ready()
    call = start_call(session, "f")
    data = session.call_failed(call, "Tool 'add' failed: the tool process exited with status 1")
    assert data is not None
    assert orjson.loads(data) == {
        "jsonrpc": "2.0",
        "id": "f",
        "result": text_result("Tool 'add' failed: the tool process exited with status 1"),
    }
    assert session.call_failed(call, "again") is None
    assert done(session, call, pb.CallToolResponse()) is None


def test_call_is_answered_once() -> None:
    session = ready()
    call = start_call(session, 1)
    assert done(session, call, pb.CallToolResponse()) is not None
    assert done(session, call, pb.CallToolResponse()) is None
    assert session.call_failed(call, "late") is None


# -- cancellation ------------------------------------------------------------------------------------


def test_cancelled_notification_cancels_the_call_and_suppresses_the_answer() -> None:
    session = ready()
    call = start_call(session, 11)
    events = notify(session, "notifications/cancelled", {"requestId": 11, "reason": "user"})
    assert events == [CancelCall(call)]
    assert isinstance(events[0], CancelCall) and events[0].call is call
    assert session.in_flight == {}
    assert done(session, call, pb.CallToolResponse(result_json="[]")) is None
    assert session.progress(call, 1.0, None, "") is None


@pytest.mark.parametrize("request_id", ["11", 12, None, True, [11]])
def test_cancel_of_an_unknown_or_mismatched_id_does_nothing(request_id: Any) -> None:
    session = ready()
    call = start_call(session, 11)
    assert notify(session, "notifications/cancelled", {"requestId": request_id}) == []
    assert session.in_flight == {b"11": call}


def test_cancel_without_params_does_nothing() -> None:
    session = ready()
    start_call(session, 11)
    assert notify(session, "notifications/cancelled") == []
    assert len(session.in_flight) == 1


# -- server-initiated messages ---------------------------------------------------------------------


LATEST = "2025-11-25"
LIST_CHANGED = Send(b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}')


def test_tools_changed_only_after_initialized() -> None:
    session = new_session(ADD)
    assert session.tool_list.catalog_changed({}) == []
    initialize(session, initialized=False)
    assert session.tool_list.catalog_changed({}) == []
    notify(session, "notifications/initialized")
    assert session.tool_list.catalog_changed({}) == [LIST_CHANGED]
    assert session.tool_list.catalog_changed(session.tool_list.visible()) == []


# -- tool-list control -------------------------------------------------------------------------------

HIDDEN = tool_from_definition(pb.ToolDefinition(name="secret", hidden=True), owner="a.py")


def listed(session: Session) -> list[str]:
    return [t["name"] for t in answer(request(session, 9, "tools/list"))["result"]["tools"]]


def change(session: Session, **batch: Any) -> list[Event]:
    """Apply one tool-list control batch and flush: the notifications it calls for."""
    session.tool_list.update(ToolListChange.of(**batch))
    return session.tool_list.flush()


def test_hidden_tool_is_absent_and_refused_until_enabled() -> None:
    session = ready(LATEST, ADD, ECHO, HIDDEN)
    assert listed(session) == ["add", "echo"]
    refused = answer(request(session, 5, "tools/call", {"name": "secret"}))
    assert refused["error"]["code"] == -32602 and "disabled" in refused["error"]["message"]
    assert change(session, enable=["secret"]) == [LIST_CHANGED]
    assert listed(session) == ["add", "echo", "secret"]
    assert isinstance(request(session, 6, "tools/call", {"name": "secret"})[0], Call)


def test_no_list_changed_for_a_no_op() -> None:
    session = ready(LATEST, ADD, ECHO, HIDDEN)
    assert change(session, enable=["add"]) == []  # already visible
    assert change(session, disable=["secret"]) == []  # already hidden
    assert change(session) == []
    assert session.tool_list.flush() == []  # nothing pending


def test_allowlist_blocklist_and_batch() -> None:
    session = ready(LATEST, ADD, ECHO, HIDDEN)
    assert change(session, allow=["echo", "secret"]) == [LIST_CHANGED]
    assert listed(session) == ["echo", "secret"]
    change(session, enable=["add"], disable=["secret"])
    assert listed(session) == ["add", "echo"]
    change(session, block=["add"])
    assert listed(session) == ["echo"]  # hidden tools stay hidden in blocklist mode
    change(session, enable=["add", "secret"], disable=["echo"])
    assert session.tool_list.active() == ["add", "secret"]
    # One batch, one notification: allowlist then enable then disable.
    assert change(session, allow=["add"], enable=["echo"], disable=["add"]) == [LIST_CHANGED]
    assert listed(session) == ["echo"]


def test_many_changes_between_flushes_give_one_notification() -> None:
    session = ready(LATEST, ADD, ECHO, HIDDEN)
    for _ in range(10_000):
        assert (
            session.tool_list.update(ToolListChange.of(enable=["secret"])) is None
        )  # nothing is sent per change
        session.tool_list.update(ToolListChange.of(disable=["secret"]))
    session.tool_list.update(ToolListChange.of(enable=["secret"]))
    assert session.tool_list.pending
    assert session.tool_list.flush() == [LIST_CHANGED]
    assert not session.tool_list.pending
    assert session.tool_list.flush() == []  # at most one per flush


def test_changes_that_cancel_out_between_flushes_send_nothing() -> None:
    session = ready(LATEST, ADD, ECHO, HIDDEN)
    session.tool_list.update(ToolListChange.of(enable=["secret"]))
    session.tool_list.update(ToolListChange.of(disable=["secret"]))
    session.tool_list.update(ToolListChange.of(allow=["add", "echo"]))  # the same list as the default
    assert session.tool_list.flush() == []
    assert listed(session) == ["add", "echo"]


def test_a_reload_flushes_pending_changes_with_one_notification() -> None:
    session = ready(LATEST, ADD, ECHO, HIDDEN)
    session.tool_list.update(ToolListChange.of(enable=["secret"]))  # pending: add, echo -> add, echo, secret
    before = session.tool_list.visible()
    session.catalog.replace("a.py", [ADD, ECHO])  # secret vanishes: back to what was flushed
    assert session.tool_list.catalog_changed(before) == []
    session.tool_list.update(ToolListChange.of(disable=["echo"]))
    session.catalog.replace("a.py", [ADD, ECHO, HIDDEN])
    assert session.tool_list.catalog_changed(session.tool_list.visible()) == [LIST_CHANGED]
    assert session.tool_list.flush() == []


def test_no_notification_before_initialized_and_nothing_left_pending() -> None:
    session = new_session(ADD, ECHO, HIDDEN)
    initialize(session, initialized=False)
    session.tool_list.update(ToolListChange.of(enable=["secret"]))
    assert session.tool_list.flush() == []
    notify(session, "notifications/initialized")
    assert session.tool_list.flush() == []


def test_unknown_names_are_not_kept() -> None:
    session = ready(LATEST, ADD, ECHO, HIDDEN)
    made_up = [f"nope{i}" for i in range(10_000)]
    for batch in ({"enable": made_up}, {"disable": made_up}, {"block": made_up}, {"allow": made_up}):
        session.tool_list.update(ToolListChange.of(**batch))
        visibility = session.visibility
        assert visibility.enabled | visibility.disabled | visibility.listed == set(), batch
    assert session.tool_list.flush() == [LIST_CHANGED]  # the allowlist of nothing
    assert listed(session) == []
    session.tool_list.update(
        ToolListChange.of(allow=["echo", "nope"], enable=["secret", "gone"], disable=["nada"])
    )
    assert session.visibility.listed == {"echo", "secret"}
    assert session.visibility.enabled == {"secret"} and session.visibility.disabled == set()


@pytest.mark.parametrize(
    ("batch", "shown"),
    [
        ({"enable": ["later"]}, ["add", "echo"]),  # a new hidden tool starts hidden
        ({"allow": ["echo", "later"]}, ["echo"]),  # not on the allowlist: it did not exist
        ({"block": ["later"]}, ["add", "echo"]),  # blocklist mode: hidden tools stay hidden
    ],
)
def test_a_name_that_appears_with_a_reload_starts_as_a_new_tool(
    batch: dict[str, Any], shown: list[str]
) -> None:
    session = ready(LATEST, ADD, ECHO, HIDDEN)
    session.tool_list.update(ToolListChange.of(**batch))
    session.tool_list.flush()
    before = session.tool_list.visible()
    later = tool_from_definition(pb.ToolDefinition(name="later", hidden=True), owner="a.py")
    session.catalog.replace("a.py", [ADD, ECHO, HIDDEN, later])
    assert session.tool_list.catalog_changed(before) == []  # this session's list did not change
    assert session.tool_list.active() == shown
    assert change(session, enable=["later"]) == [LIST_CHANGED]  # it exists now: it can be enabled
    assert "later" in listed(session)


def test_visibility_survives_a_reload_and_forgets_vanished_tools() -> None:
    session = ready(LATEST, ADD, ECHO, HIDDEN)
    change(session, disable=["echo"], enable=["secret"])
    before = session.tool_list.visible()
    new_hidden = tool_from_definition(pb.ToolDefinition(name="later", hidden=True), owner="a.py")
    session.catalog.replace("a.py", [ADD, HIDDEN, new_hidden])  # echo vanished, later is new and hidden
    assert session.tool_list.catalog_changed(before) == []  # add and secret: what this session saw before
    assert session.visibility.disabled == set()
    assert listed(session) == ["add", "secret"]


def test_log_before_initialize_is_dropped() -> None:
    assert new_session().log("error", None, "boom") is None


def test_log_without_a_level_set_sends_everything() -> None:
    session = ready()
    assert orjson.loads(session.log("debug", "tools", {"x": 1}) or b"null") == {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "debug", "data": {"x": 1}, "logger": "tools"},
    }


def test_log_level_filtering() -> None:
    session = ready()
    assert answer(request(session, 1, "logging/setLevel", {"level": "warning"})) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {},
    }
    assert session.log_level == "warning"
    assert session.log("debug", None, "d") is None
    assert session.log("info", None, "i") is None
    assert session.log("notice", None, "n") is None
    sent = [
        session.log(level, None, level) for level in ("warning", "error", "critical", "alert", "emergency")
    ]
    assert [orjson.loads(s or b"null")["params"] for s in sent] == [
        {"level": "warning", "data": "warning"},
        {"level": "error", "data": "error"},
        {"level": "critical", "data": "critical"},
        {"level": "alert", "data": "alert"},
        {"level": "emergency", "data": "emergency"},
    ]


def test_log_levels_outside_mcp_are_mapped() -> None:
    session = ready()
    request(session, 1, "logging/setLevel", {"level": "warning"})
    warn = session.log("warn", None, "w")
    assert warn is not None and orjson.loads(warn)["params"]["level"] == "warning"
    assert session.log("verbose", None, "v") is None  # unknown levels count as info
    request(session, 2, "logging/setLevel", {"level": "debug"})
    verbose = session.log("verbose", None, "v")
    assert verbose is not None and orjson.loads(verbose)["params"]["level"] == "info"


@pytest.mark.parametrize("level", ["WARNING", "warn", "", None, 3])
def test_set_level_with_an_invalid_level(level: Any) -> None:
    session = ready()
    assert error_of(request(session, 1, "logging/setLevel", {"level": level})) == (
        1,
        -32602,
        "Invalid params: level must be one of "
        "debug, info, notice, warning, error, critical, alert, emergency",
    )
    assert session.log_level is None


def test_progress_needs_a_token() -> None:
    session = ready()
    call = start_call(session, 1)
    assert session.progress(call, 1.0, 10.0, "step") is None


def test_progress_notification() -> None:
    session = ready()
    call = start_call(session, 1, meta={"progressToken": "p1"})
    assert session.progress(call, 1.0, 10.0, "step 1") == (
        b'{"jsonrpc":"2.0","method":"notifications/progress",'
        b'"params":{"progressToken":"p1","progress":1,"total":10,"message":"step 1"}}'
    )
    data = session.progress(call, 0.5, None, "")
    assert data is not None and orjson.loads(data)["params"] == {"progressToken": "p1", "progress": 0.5}


def test_progress_with_an_integer_token() -> None:
    session = ready()
    call = start_call(session, 1, meta={"progressToken": 42})
    data = session.progress(call, 2.0, None, "")
    assert data is not None and orjson.loads(data)["params"] == {"progressToken": 42, "progress": 2}


def test_progress_message_is_dropped_for_2024_11_05() -> None:
    session = ready("2024-11-05")
    call = start_call(session, 1, meta={"progressToken": "p"})
    data = session.progress(call, 1.0, 2.0, "hidden")
    assert data is not None and orjson.loads(data)["params"] == {
        "progressToken": "p",
        "progress": 1,
        "total": 2,
    }


def test_no_progress_after_the_call_is_done() -> None:
    session = ready()
    call = start_call(session, 1, meta={"progressToken": "p"})
    done(session, call, pb.CallToolResponse())
    assert session.progress(call, 1.0, None, "late") is None


def test_structured_content_must_be_an_object() -> None:
    from protomcp_host.calls.envelope import tool_from_definition
    from protomcp_host.protocol.catalog import Catalog
    from protomcp_host.protocol.session import Session
    from protomcp_sdk.wire import envelope_pb2 as pb

    catalog = Catalog()
    catalog.replace("a.py", [tool_from_definition(pb.ToolDefinition(name="t"), "a.py")])
    session = Session(catalog, {"name": "x", "version": "1"})
    session.receive(
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
    )
    (call,) = session.receive(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t"}}')
    assert isinstance(call, Call)
    response = pb.CallToolResponse(result_json="[]", structured_content_json="[1, 2]")
    reply = orjson.loads(done(session, call, response) or b"")
    assert reply["result"]["isError"] is True and "malformed" in reply["result"]["content"][0]["text"]


def test_raw_content_is_spliced_and_untrusted_content_is_checked() -> None:
    from protomcp_host.calls.envelope import tool_from_definition
    from protomcp_host.protocol.catalog import Catalog
    from protomcp_host.protocol.session import Session
    from protomcp_sdk.wire import envelope_pb2 as pb

    catalog = Catalog()
    catalog.replace("a.py", [tool_from_definition(pb.ToolDefinition(name="t"), "a.py")])
    session = Session(catalog, {"name": "x", "version": "1"})
    session.receive(
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
    )

    def call(request_id: int) -> Call:
        (event,) = session.receive(
            b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t"}}' % request_id
        )
        assert isinstance(event, Call)
        return event

    raw = b'[{"type":"text","text":"big"}]'
    out = done(session, call(2), pb.CallToolResponse(), [raw], True)
    assert out == b'{"jsonrpc":"2.0","id":2,"result":{"content":' + raw + b',"isError":false}}'
    out = done(session, call(3), pb.CallToolResponse(), [b"[not json"], False)
    assert b"malformed" in (out or b"")
