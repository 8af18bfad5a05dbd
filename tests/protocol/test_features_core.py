"""The sans-IO side of resources, prompts, completions and requests to the client
(protocol/features.py) and the URI templates they match, without any process."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from protomcp_host.protocol.catalog import Catalog, NameClash
from protomcp_host.protocol.features import (
    CancelForward,
    ClientAnswer,
    Entry,
    FeatureCatalog,
    FileFeatures,
    Forward,
    template_entry,
)
from protomcp_host.protocol.session import Send, Session
from protomcp_sdk.wire.uritemplate import TemplateError, UriTemplate

pytestmark = pytest.mark.fast  # starts no process

# -- URI templates -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        ("test://template/{id}/data", "test://template/123/data", {"id": "123"}),
        ("test://template/{id}/data", "test://template/1/2/data", None),  # simple: no slash
        ("file:///{+path}", "file:///a/b/c.txt", {"path": "a/b/c.txt"}),  # reserved: slashes
        ("notes://{id}", "notes://a%20b", {"id": "a b"}),  # percent-decoded
        ("x://{a,b}", "x://1,2", {"a": "1", "b": "2"}),
        ("x://item{/a,b}", "x://item/1/2", {"a": "1", "b": "2"}),
        ("x://{id}{?fmt,lang}", "x://5?lang=en&fmt=md", {"id": "5", "fmt": "md", "lang": "en"}),
        ("x://{id}{?fmt}", "x://5", {"id": "5"}),
        ("x://page{#section}", "x://page#intro", {"section": "intro"}),
        ("x://static", "x://static", {}),
        ("x://{id}", "y://1", None),
        ("x://{id}", "x://", None),
    ],
)
def test_uri_template_match(template: str, uri: str, expected: dict[str, str] | None) -> None:
    assert UriTemplate(template).match(uri) == expected


@pytest.mark.parametrize("template", ["x://{id}{id}", "x://{?q}/{id}", "x://{bad name}", "x://{=x}"])
def test_bad_uri_templates_are_refused(template: str) -> None:
    with pytest.raises(TemplateError):
        UriTemplate(template)


# -- merged lists --------------------------------------------------------------------------------


def _resource(uri: str, owner: str = "a.py", name: str = "r") -> Entry:
    return Entry(uri, owner, {"uri": uri, "name": name})


def test_listing_clash_names_both_files_and_changes_nothing() -> None:
    features = FeatureCatalog(page_size=10)
    features.replace("a.py", FileFeatures(resources=[_resource("test://x")]))
    with pytest.raises(NameClash, match=r"resource clash: 'test://x' is defined in both a\.py and b\.py"):
        features.check("b.py", FileFeatures(resources=[_resource("test://x", "b.py")]))
    with pytest.raises(NameClash, match=r"defined twice in a\.py"):
        features.check("a.py", FileFeatures(resources=[_resource("test://y"), _resource("test://y")]))
    assert list(features.resources.entries) == ["test://x"]


def test_replace_reports_list_changed_per_kind_only_when_changed() -> None:
    features = FeatureCatalog(page_size=10)
    prompt = Entry("p", "a.py", {"name": "p", "arguments": []})
    assert features.replace("a.py", FileFeatures(prompts=[prompt])) == ["notifications/prompts/list_changed"]
    assert features.replace("a.py", FileFeatures(prompts=[prompt])) == []
    template = template_entry("n://{id}", "a.py", {"uriTemplate": "n://{id}", "name": "n"})
    assert template is not None
    notes = features.replace("a.py", FileFeatures(templates=[template], prompts=[prompt]))
    assert notes == ["notifications/resources/list_changed"]
    assert features.resource_owner("n://7") is template
    assert features.replace("a.py", FileFeatures()) == [
        "notifications/resources/list_changed",
        "notifications/prompts/list_changed",
    ]


def test_pages_and_cursors() -> None:
    features = FeatureCatalog(page_size=2)
    features.replace("a.py", FileFeatures(resources=[_resource(f"test://{i}") for i in range(5)]))

    def page(cursor: str | None) -> Any:
        return orjson.loads(features.resources.page(cursor, "resources", lambda entry: entry.mcp))

    first = page(None)
    assert [r["uri"] for r in first["resources"]] == ["test://0", "test://1"]
    second = page(first["nextCursor"])
    third = page(second["nextCursor"])
    assert [r["uri"] for r in third["resources"]] == ["test://4"] and "nextCursor" not in third


# -- the session's side ----------------------------------------------------------------------------


def _session(capabilities: dict[str, Any] | None = None, *, completions: bool = False) -> Session:
    features = FeatureCatalog(page_size=10)
    prompt = Entry("greet", "a.py", {"name": "greet", "arguments": []}, required=("name",))
    features.replace(
        "a.py", FileFeatures(resources=[_resource("test://x")], prompts=[prompt], completions=completions)
    )
    session = Session(Catalog(), {"name": "t", "version": "1"}, features=features)
    init = {"protocolVersion": "2025-11-25", "capabilities": capabilities or {}, "clientInfo": {}}
    session.receive(orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
    session.receive(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    return session


def _request(session: Session, method: str, params: dict[str, Any], id_: int = 1) -> list[Any]:
    return session.receive(orjson.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}))


def _answer(events: list[Any]) -> dict[str, Any]:
    (event,) = events
    assert isinstance(event, Send)
    return orjson.loads(event.data)


def test_completions_capability_only_when_a_file_defines_one() -> None:
    for completions in (False, True):
        features = FeatureCatalog(page_size=10)
        features.replace("a.py", FileFeatures(completions=completions))
        session = Session(Catalog(), {"name": "t", "version": "1"}, features=features)
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}}
        capabilities = _answer(_request(session, "initialize", init))["result"]["capabilities"]
        assert ("completions" in capabilities) is completions
        assert capabilities["resources"] == {"subscribe": True, "listChanged": True}
        assert capabilities["prompts"] == {"listChanged": True}
    # A session without features (a tools-only server) declares neither.
    session = Session(Catalog(), {"name": "t", "version": "1"})
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}}
    capabilities = _answer(_request(session, "initialize", init))["result"]["capabilities"]
    assert "resources" not in capabilities and "prompts" not in capabilities


def test_unknown_resource_and_prompt_errors() -> None:
    session = _session()
    error = _answer(_request(session, "resources/read", {"uri": "test://nope"}))["error"]
    assert error == {
        "code": -32002,
        "message": "Resource not found: test://nope",
        "data": {"uri": "test://nope"},
    }
    error = _answer(_request(session, "prompts/get", {"name": "nope"}))["error"]
    assert error["code"] == -32602 and "nope" in error["message"]
    error = _answer(_request(session, "prompts/get", {"name": "greet", "arguments": {}}))["error"]
    assert error["code"] == -32602 and "name" in error["message"]


def test_forward_answered_once_and_not_after_cancel() -> None:
    session = _session()
    (forward,) = _request(session, "resources/read", {"uri": "test://x"}, id_=5)
    assert isinstance(forward, Forward) and forward.params == {"uri": "test://x"}
    answer = session.features.answered(forward, b'{"contents":[]}')
    assert answer == b'{"jsonrpc":"2.0","id":5,"result":{"contents":[]}}'
    assert session.features.answered(forward, b"{}") is None  # exactly one answer
    (forward,) = _request(session, "resources/read", {"uri": "test://x"}, id_=6)
    (cancel,) = session.receive(
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}'
    )
    assert isinstance(cancel, CancelForward) and cancel.forward is forward
    assert session.features.failed(forward, -32603, "late") is None


def test_completion_without_completion_functions_is_empty_without_a_process() -> None:
    session = _session(completions=False)
    params = {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "a"}}
    result = _answer(_request(session, "completion/complete", params))["result"]
    assert result == {"completion": {"values": [], "total": 0, "hasMore": False}}
    session = _session(completions=True)
    (forward,) = _request(session, "completion/complete", params)
    assert isinstance(forward, Forward) and forward.params["ref"] == "greet"


def test_subscriptions() -> None:
    session = _session()
    assert _answer(_request(session, "resources/subscribe", {"uri": "test://x"}))["result"] == {}
    assert session.features.updated("test://x") is not None
    assert session.features.updated("test://other") is None
    _request(session, "resources/unsubscribe", {"uri": "test://x"})
    assert session.features.updated("test://x") is None


def test_requests_to_the_client() -> None:
    session = _session({"sampling": {}, "elicitation": {}})
    features = session.features
    assert features.client.missing_capability("sampling/createMessage", {}) is None
    assert "roots" in (features.client.missing_capability("roots/list", {}) or "")
    assert features.client.missing_capability("elicitation/create", {"mode": "form"}) is None
    assert "url-mode" in (features.client.missing_capability("elicitation/create", {"mode": "url"}) or "")
    answers: list[Any] = []
    pending, data = features.client.request_client(
        "sampling/createMessage", {"maxTokens": 1}, b"3", lambda *a: answers.append(a)
    )
    sent = orjson.loads(data)
    assert sent == {
        "jsonrpc": "2.0",
        "id": pending.id,
        "method": "sampling/createMessage",
        "params": {"maxTokens": 1},
    }
    (event,) = session.receive(orjson.dumps({"jsonrpc": "2.0", "id": pending.id, "result": {"model": "m"}}))
    assert isinstance(event, ClientAnswer) and event.result == {"model": "m"} and event.error is None
    assert (
        session.receive(orjson.dumps({"jsonrpc": "2.0", "id": pending.id, "result": {}})) == []
    )  # only once
    pending, _ = features.client.request_client("roots/list", {}, None, lambda *a: None)
    (event,) = session.receive(
        orjson.dumps({"jsonrpc": "2.0", "id": pending.id, "error": {"code": 1, "message": "no"}})
    )
    assert isinstance(event, ClientAnswer) and event.error == "no"
    pending, _ = features.client.request_client("roots/list", {}, None, lambda *a: None)
    cancelled = orjson.loads(features.client.drop_client_request(pending) or b"{}")
    assert cancelled["method"] == "notifications/cancelled" and cancelled["params"]["requestId"] == pending.id
    assert features.client.drop_client_request(pending) is None


def test_an_id_in_use_by_a_forwarded_request_is_refused() -> None:
    session = _session()
    (forward,) = _request(session, "resources/read", {"uri": "test://x"}, id_=8)
    assert isinstance(forward, Forward)
    error = _answer(_request(session, "prompts/get", {"name": "greet", "arguments": {"name": "a"}}, id_=8))
    assert error["error"]["code"] == -32600 and "already in use" in error["error"]["message"]
