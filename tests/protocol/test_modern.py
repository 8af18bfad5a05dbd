"""The 2026-07-28 era core (protomcp_host.protocol.modern), sans-IO: the _meta ladder,
server/discover, result stamping, cache hints, removed methods, per-request logs."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from protomcp_host.calls.envelope import tool_from_definition
from protomcp_host.protocol.catalog import Catalog
from protomcp_host.protocol.features import Entry, FeatureCatalog, FileFeatures, Forward
from protomcp_host.protocol.modern import ModernShared
from protomcp_host.protocol.request_meta import (
    CLIENT_CAPABILITIES,
    LOG_LEVEL,
    PROTOCOL_VERSION,
    SERVER_INFO,
    is_modern,
    maybe_modern,
    stamp,
    supported_versions,
)
from protomcp_host.protocol.session import Call, CancelCall, Send, Session, ToolAnswer
from protomcp_host.protocol.visibility import ToolVisibility
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.toollist import ToolListChange

pytestmark = pytest.mark.fast  # starts no process

INFO = {"name": "protomcp-test", "version": "9.9"}
META = {PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}}


def _tool(name: str, *, task: str = "", hidden: bool = False) -> Any:
    return tool_from_definition(
        pb.ToolDefinition(
            name=name,
            description=f"The {name} tool.",
            input_schema_json='{"type":"object","properties":{"a":{"type":"integer"}}}',
            task_support_mode=task,
            hidden=hidden,
        ),
        owner="a.py",
    )


def make(serve: bool = True, visibility: ToolVisibility | None = None) -> Session:
    catalog = Catalog()
    catalog.replace(
        "a.py", [_tool("zeta"), _tool("alpha"), _tool("job", task="required"), _tool("h", hidden=True)]
    )
    features = FeatureCatalog(100)
    features.replace(
        "a.py",
        FileFeatures(
            resources=[Entry("test://r", "a.py", {"uri": "test://r", "name": "r"})],
            prompts=[Entry("p", "a.py", {"name": "p"})],
        ),
    )
    return ModernShared(catalog, INFO, "Use it.", features, serve_modern=serve).session(visibility=visibility)


def request(method: str, params: dict[str, Any] | None = None, id_: Any = 1, meta: Any = META) -> bytes:
    params = dict(params or {})
    if meta is not None:
        params["_meta"] = meta
    return orjson.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})


def answer(session: Session, line: bytes) -> dict[str, Any]:
    events = session.receive(line)
    assert len(events) == 1 and isinstance(events[0], Send), events
    return orjson.loads(events[0].data)


def test_era_detection() -> None:
    assert is_modern({"_meta": META}) and not is_modern({"_meta": {}}) and not is_modern({})
    assert not maybe_modern(b'{"method":"initialize"}') and maybe_modern(request("tools/list"))


def test_missing_meta_keys_are_invalid_params_with_the_id() -> None:
    session = make()
    for meta in (None, {}, {PROTOCOL_VERSION: "2026-07-28"}, {CLIENT_CAPABILITIES: {}}):
        reply = answer(session, request("server/discover", id_="x", meta=meta))
        assert reply["id"] == "x" and reply["error"]["code"] == -32602


def test_client_info_is_optional_and_discover_is_complete() -> None:
    result = answer(make(), request("server/discover"))["result"]
    assert result["resultType"] == "complete"
    assert result["supportedVersions"] == [
        "2026-07-28",
        "2025-11-25",
        "2025-06-18",
        "2025-03-26",
        "2024-11-05",
    ]
    assert result["capabilities"]["tools"] == {"listChanged": True}
    assert "prompts" in result["capabilities"] and "resources" in result["capabilities"]
    assert result["instructions"] == "Use it."
    assert result["ttlMs"] == 0 and result["cacheScope"] == "public"
    assert result["_meta"] == {SERVER_INFO: INFO}
    assert "serverInfo" not in result


def test_unknown_version_names_the_same_list_as_discover() -> None:
    reply = answer(make(), request("tools/list", meta={**META, PROTOCOL_VERSION: "1999-01-01"}))
    assert reply["error"]["code"] == -32022
    assert reply["error"]["data"] == {"supported": supported_versions(True), "requested": "1999-01-01"}


def test_modern_era_off_lists_only_handshake_versions() -> None:
    """With the modern era off (PROTOMCP_MODERN=0), 2026-07-28 is refused so clients fall back."""
    reply = answer(make(serve=False), request("server/discover"))
    assert reply["error"]["code"] == -32022
    assert "2026-07-28" not in reply["error"]["data"]["supported"]
    assert reply["error"]["data"]["requested"] == "2026-07-28"


@pytest.mark.parametrize(
    "method",
    [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "tasks/list",
        "tasks/result",
        "unknown/method",
    ],
)
def test_removed_methods_are_not_found(method: str) -> None:
    reply = answer(make(), request(method, id_=7))
    assert reply["id"] == 7 and reply["error"]["code"] == -32601


def test_bad_log_level_is_invalid_params() -> None:
    reply = answer(make(), request("tools/list", meta={**META, LOG_LEVEL: "loud"}))
    assert reply["error"]["code"] == -32602


def test_tools_list_is_stamped_ordered_and_without_execution() -> None:
    result = answer(make(), request("tools/list"))["result"]
    assert [t["name"] for t in result["tools"]] == ["zeta", "alpha", "job"]  # deterministic: catalog order
    assert all("execution" not in t for t in result["tools"])
    assert result["resultType"] == "complete" and result["ttlMs"] == 0 and result["cacheScope"] == "public"
    assert result["_meta"][SERVER_INFO] == INFO


def test_controlled_list_is_private_and_shared_by_the_principal() -> None:
    shared = ToolVisibility()
    one, two = make(visibility=shared), make(visibility=shared)
    one.tool_list.update(ToolListChange.of(enable=["h"]))
    result = answer(two, request("tools/list"))["result"]
    assert "h" in [t["name"] for t in result["tools"]] and result["cacheScope"] == "private"
    assert answer(make(), request("tools/list"))["result"]["cacheScope"] == "public"  # another principal
    assert one.tool_list.flush() == []  # list changes go to listen streams, not the connection


def test_a_disabled_tool_is_named_as_the_principals_not_a_sessions() -> None:
    error = answer(make(), request("tools/call", {"name": "h", "arguments": {}}))["error"]
    assert error["code"] == -32602 and "disabled for this principal (all its connections)" in error["message"]


def test_other_lists_carry_cache_hints() -> None:
    session = make()
    for method in ("resources/list", "resources/templates/list", "prompts/list"):
        result = answer(session, request(method))["result"]
        assert (
            result["resultType"] == "complete" and result["cacheScope"] == "public" and result["ttlMs"] == 0
        )


def test_resource_not_found_is_invalid_params_with_the_uri() -> None:
    reply = answer(make(), request("resources/read", {"uri": "test://nope"}))
    assert reply["error"] == {
        "code": -32602,
        "message": "Resource not found: test://nope",
        "data": {"uri": "test://nope"},
    }


def test_read_and_prompt_answers_are_stamped() -> None:
    session = make()
    [read] = session.receive(request("resources/read", {"uri": "test://r"}, id_=1))
    [get] = session.receive(request("prompts/get", {"name": "p"}, id_=2))
    assert isinstance(read, Forward) and isinstance(get, Forward)
    read_result = orjson.loads(session.features.answered(read, b'{"contents":[]}'))["result"]
    assert read_result["resultType"] == "complete" and read_result["cacheScope"] == "public"
    prompt = orjson.loads(session.features.answered(get, b'{"messages":[]', b',"_meta":{"x":1}}'))["result"]
    assert prompt["resultType"] == "complete" and "ttlMs" not in prompt
    assert prompt["_meta"] == {"x": 1, SERVER_INFO: INFO}


def test_tool_call_result_is_stamped_without_cache_hints() -> None:
    session = make()
    [call] = session.receive(request("tools/call", {"name": "alpha", "arguments": {"a": 1}}))
    assert isinstance(call, Call)
    answer_ = ToolAnswer([b'[{"type":"text","text":"1"}]'], b'{"a":1}', trusted=True)
    result = orjson.loads(session.call_done(call, answer_))["result"]
    assert result["resultType"] == "complete" and result["structuredContent"] == {"a": 1}
    assert "ttlMs" not in result and result["_meta"] == {SERVER_INFO: INFO}


def test_failed_call_is_a_stamped_error_result() -> None:
    session = make()
    [call] = session.receive(request("tools/call", {"name": "alpha", "arguments": {}}))
    result = orjson.loads(session.call_failed(call, "boom"))["result"]
    assert result["isError"] is True and result["resultType"] == "complete"


def test_task_required_tool_needs_the_tasks_extension() -> None:
    reply = answer(make(), request("tools/call", {"name": "job", "arguments": {}}))
    assert reply["error"]["code"] == -32021
    assert reply["error"]["data"] == {
        "requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    }


def test_logs_only_for_requests_that_asked() -> None:
    session = make()
    [quiet] = session.receive(request("tools/call", {"name": "alpha", "arguments": {}}, id_=1))
    [loud] = session.receive(
        request("tools/call", {"name": "alpha", "arguments": {}}, id_=2, meta={**META, LOG_LEVEL: "info"})
    )
    assert session.log("error", "t", "x", None, quiet.id) is None
    assert session.log("debug", "t", "x", None, loud.id) is None  # below the request's level
    assert orjson.loads(session.log("info", "t", "x", None, loud.id))["params"]["data"] == "x"
    assert session.log("error", "t", "x") is None  # outside any request: nowhere to go


def test_cancelled_call_gets_no_answer() -> None:
    session = make()
    [call] = session.receive(request("tools/call", {"name": "alpha", "arguments": {}}, id_=5))
    cancel = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})
    [event] = session.receive(cancel)
    assert isinstance(event, CancelCall) and event.call is call
    assert session.call_done(call, ToolAnswer([b"[]"], trusted=True)) is None


def test_stamp_pieces() -> None:
    assert stamp([b"{}"], b'"a":1') == [b'{"a":1}']
    assert stamp([b'{"x":', b"[1]}"], b'"a":1') == [b'{"x":', b'[1],"a":1}']


def test_listen_ack_filter_tags_and_cancel() -> None:
    session = make()
    wanted = {"toolsListChanged": True, "promptsListChanged": False, "resourceSubscriptions": ["test://r"]}
    [ack] = session.receive(request("subscriptions/listen", {"notifications": wanted}, id_=9))
    message = orjson.loads(ack.data)
    assert ack.related == b"9" and message["method"] == "notifications/subscriptions/acknowledged"
    assert message["params"] == {
        "_meta": {"io.modelcontextprotocol/subscriptionId": 9},
        "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["test://r"]},
    }
    assert (
        answer(session, request("subscriptions/listen", {"notifications": {}}, id_=9))["error"]["code"]
        == -32600
    )
    changed = session.features.list_changed(["notifications/prompts/list_changed"])
    assert changed == []  # not asked for
    [updated] = session.features.updates("test://r")
    assert orjson.loads(updated)["params"] == {
        "_meta": {"io.modelcontextprotocol/subscriptionId": 9},
        "uri": "test://r",
    }
    session.tool_list.update(ToolListChange.of(enable=["h"]))
    [note] = session.tool_list.flush()
    assert orjson.loads(note.data)["method"] == "notifications/tools/list_changed" and note.related == b"9"
    [closing] = session.era.close_listens()
    assert orjson.loads(closing.data)["result"] == {
        "resultType": "complete",
        "_meta": {"io.modelcontextprotocol/subscriptionId": 9},
    }


def test_listen_needs_a_filter_and_tasks_need_the_extension() -> None:
    session = make()
    assert answer(session, request("subscriptions/listen", {}))["error"]["code"] == -32602
    refused = answer(session, request("subscriptions/listen", {"notifications": {"taskIds": ["t"]}}))
    assert refused["error"]["code"] == -32021


def test_cancelled_listen_gets_nothing_more() -> None:
    session = make()
    session.receive(request("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, id_=3))
    cancel = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
    assert session.receive(cancel) == []
    session.tool_list.update(ToolListChange.of(enable=["h"]))
    assert session.tool_list.flush() == [] and session.era.close_listens() == []


def test_retry_fields_are_checked() -> None:
    session = make()
    reply = answer(session, request("tools/call", {"name": "alpha", "arguments": {}, "inputResponses": None}))
    assert reply["error"]["code"] == -32602
    reply = answer(session, request("tools/call", {"name": "alpha", "arguments": {}, "requestState": 5}))
    assert reply["error"]["code"] == -32602
    [call] = session.receive(
        request("tools/call", {"name": "alpha", "arguments": {}, "inputResponses": {"k": {}}})
    )
    assert isinstance(call, Call) and call.retry.responses == {"k": {}} and call.retry.state is None


def test_input_required_result_has_no_cache_hints() -> None:
    session = make()
    [call] = session.receive(request("tools/call", {"name": "alpha", "arguments": {}}))
    data = session.era.input_required(session, call.id, {"k": {"method": "roots/list", "params": {}}}, "v1.x")
    result = orjson.loads(data)["result"]
    assert result == {
        "resultType": "input_required",
        "requestState": "v1.x",
        "inputRequests": {"k": {"method": "roots/list", "params": {}}},
        "_meta": {SERVER_INFO: INFO},
    }
    assert call.id not in session.in_flight
