"""Scopes per tool, resource and prompt in the sans-IO core (protocol/scopes.py): listings hide
what the caller's token does not grant, a call/read/get of it is refused (as a JSON-RPC error
where no HTTP 403 came first), and without claims (stdio, a shared bearer token) nothing is
restricted. Both eras."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest

from protomcp_host.calls.envelope import file_features, tool_from_definition
from protomcp_host.protocol.catalog import Catalog
from protomcp_host.protocol.features import FeatureCatalog, Forward
from protomcp_host.protocol.modern import ModernShared
from protomcp_host.protocol.request_meta import CLIENT_CAPABILITIES, PROTOCOL_VERSION
from protomcp_host.protocol.scopes import granted, lacking
from protomcp_host.protocol.session import Call, Send, Session
from protomcp_sdk.wire import envelope_pb2 as pb

pytestmark = pytest.mark.fast  # starts no process

INFO = {"name": "protomcp-test", "version": "9.9"}
META = {PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}}
WRITER = {"sub": "ada", "scope": "files:write notes:read"}
READER = {"sub": "bob", "scp": ["files:read"]}
IDS = itertools.count(1)


def _host() -> tuple[Catalog, FeatureCatalog]:
    catalog = Catalog()
    catalog.replace(
        "a.py",
        [
            tool_from_definition(pb.ToolDefinition(name=name, scopes=scopes), "a.py")
            for name, scopes in (("read", []), ("save", ["files:write"]), ("purge", ["admin", "files:write"]))
        ],
    )
    features = FeatureCatalog(100)
    features.replace(
        "a.py",
        file_features(
            "a.py",
            pb.ResourceListResponse(
                resources=[
                    pb.ResourceDefinition(uri="notes://public", name="public"),
                    pb.ResourceDefinition(uri="notes://secret", name="secret", scopes=["notes:read"]),
                ]
            ),
            pb.ResourceTemplateListResponse(
                templates=[
                    pb.ResourceTemplateDefinition(uri_template="notes://{n}/private", scopes=["notes:read"])
                ]
            ),
            pb.PromptListResponse(
                prompts=[
                    pb.PromptDefinition(name="hello"),
                    pb.PromptDefinition(name="draft", scopes=["files:write"]),
                ]
            ),
            False,
        ),
    )
    return catalog, features


def _stateful(auth: dict[str, Any] | None) -> Session:
    catalog, features = _host()
    session = Session(catalog, INFO, features=features)
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    session.receive(orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
    session.receive(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    session.auth = auth
    return session


def _modern(auth: dict[str, Any] | None) -> Session:
    catalog, features = _host()
    session = ModernShared(catalog, INFO, None, features, serve_modern=True).session()
    session.auth = auth
    return session


def _ask(session: Session, method: str, params: dict[str, Any] | None = None) -> Any:
    params = dict(params or {})
    if session.version == "2026-07-28":
        params["_meta"] = META
    message = {"jsonrpc": "2.0", "id": next(IDS), "method": method, "params": params}
    events = session.receive(orjson.dumps(message))
    assert len(events) == 1, events
    event = events[0]
    return orjson.loads(event.data) if isinstance(event, Send) else event


def _names(session: Session, method: str, key: str, field: str = "name") -> list[str]:
    return [entry[field] for entry in _ask(session, method)["result"][key]]


@pytest.mark.parametrize("make", [_stateful, _modern])
def test_listings_hide_what_the_token_does_not_grant(make: Any) -> None:
    writer, reader, local = make(WRITER), make(READER), make(None)
    assert _names(writer, "tools/list", "tools") == ["read", "save"]  # purge needs admin too
    assert _names(reader, "tools/list", "tools") == ["read"]
    assert _names(local, "tools/list", "tools") == ["read", "save", "purge"]  # no OAuth: no restriction
    assert _names(writer, "resources/list", "resources", "uri") == ["notes://public", "notes://secret"]
    assert _names(reader, "resources/list", "resources", "uri") == ["notes://public"]
    assert _names(reader, "resources/templates/list", "resourceTemplates", "uriTemplate") == []
    assert _names(writer, "resources/templates/list", "resourceTemplates", "uriTemplate") == [
        "notes://{n}/private"
    ]
    assert _names(reader, "prompts/list", "prompts") == ["hello"]
    assert _names(writer, "prompts/list", "prompts") == ["hello", "draft"]
    assert reader.tool_list.active() == ["read"]  # what ctx.active_tools() reports
    # The same session, given a token with more scopes (step-up), sees more.
    reader.auth = {"sub": "bob", "scope": "files:write admin"}
    assert _names(reader, "tools/list", "tools") == ["read", "save", "purge"]


@pytest.mark.parametrize("make", [_stateful, _modern])
def test_calls_reads_and_gets_are_refused_without_the_scopes(make: Any) -> None:
    reader, writer, local = make(READER), make(WRITER), make(None)
    error = _ask(reader, "tools/call", {"name": "save", "arguments": {}})["error"]
    assert error["code"] == -32602
    assert error["message"] == (
        "Forbidden: Tool 'save' needs the scope files:write, which the access token does not grant"
    )
    purge = _ask(writer, "tools/call", {"name": "purge", "arguments": {}})["error"]["message"]
    assert "needs the scope admin," in purge  # only what is missing
    assert "notes:read" in _ask(reader, "resources/read", {"uri": "notes://secret"})["error"]["message"]
    assert "notes:read" in _ask(reader, "resources/read", {"uri": "notes://x/private"})["error"]["message"]
    assert "Prompt 'draft'" in _ask(reader, "prompts/get", {"name": "draft"})["error"]["message"]
    completing = {"ref": {"type": "ref/prompt", "name": "draft"}, "argument": {"name": "topic", "value": "a"}}
    assert (
        "Completing draft needs the scope files:write"
        in _ask(reader, "completion/complete", completing)["error"]["message"]
    )
    assert "completion" in _ask(writer, "completion/complete", completing)["result"]
    if make is _stateful:  # (the 2026-07-28 era has no resources/subscribe)
        subscribed = _ask(reader, "resources/subscribe", {"uri": "notes://secret"})
        assert "needs the scope notes:read" in subscribed["error"]["message"]
        assert _ask(writer, "resources/subscribe", {"uri": "notes://secret"})["result"] == {}
    assert isinstance(_ask(writer, "tools/call", {"name": "save", "arguments": {}}), Call)
    assert isinstance(_ask(writer, "resources/read", {"uri": "notes://x/private"}), Forward)
    assert isinstance(_ask(local, "tools/call", {"name": "purge", "arguments": {}}), Call)
    assert isinstance(_ask(local, "prompts/get", {"name": "draft"}), Forward)


def test_a_filtered_modern_listing_is_private() -> None:
    for method in ("tools/list", "resources/list", "prompts/list"):
        assert _ask(_modern(READER), method)["result"]["cacheScope"] == "private"
        assert _ask(_modern(None), method)["result"]["cacheScope"] == "public"


def test_granted_and_lacking() -> None:
    assert granted({"scope": "a  b"}) == {"a", "b"}
    assert granted({"scope": "a", "scp": ["b"]}) == {"a"}  # scope first (RFC 9068)
    assert granted({"scp": ["a", 1]}) == {"a"} and granted({"scope": 5}) == frozenset()
    assert lacking({"b", "a", "c"}, {"scope": "c"}) == ["a", "b"]
    assert lacking({"a"}, None) == [] and lacking(set(), {"scope": ""}) == []
