"""MCP Apps (`io.modelcontextprotocol/ui`) through the real host, in raw JSON-RPC, in both eras
over stdio and Streamable HTTP: the extension declared in the capabilities, a ui tool's `_meta`
(with the legacy flat key and visibility), the ui:// resource listed and read with the app mime
type and its `_meta.ui`, and `ctx.client_supports` true only when the client declared the
extension (2025-11-25: at initialize; 2026-07-28: in the request) with the same result otherwise."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import orjson
import pytest

from tests.support.hosts import RawHost
from tests.support.http import ACCEPT, HttpHost, answer_of

UI = "io.modelcontextprotocol/ui"
APP_MIME = "text/html;profile=mcp-app"
MODERN = "2026-07-28"
STATEFUL = "2025-11-25"
DECLARES_UI = {"extensions": {UI: {"mimeTypes": [APP_MIME]}}}
HTML = "<!doctype html><html><body><p id=total>chart</p></body></html>"

SOURCE = f'''
from protomcp_sdk import UI, Context, resource, tool

@resource("ui://charts/bar", ui=UI(connect_domains=["https://api.example.com"], prefers_border=True))
def bar_chart() -> str:
    """The sales chart."""
    return {HTML!r}

@tool(ui="ui://charts/bar")
def sales(quarter: str, ctx: Context) -> dict:
    """Sales of a quarter, drawn as a chart where the client renders apps."""
    return {{"quarter": quarter, "total": 42, "apps": ctx.client_supports("{UI}")}}

@tool(ui="ui://charts/bar", visibility=["app"])
def refresh() -> str:
    """Only the chart calls this."""
    return "fresh"

@tool
def plain() -> str:
    """No app."""
    return "plain"
'''

ROUTED = {"tools/call": "name", "resources/read": "uri"}


class Raw:
    """One client speaking raw JSON-RPC to a host: `declared` are its capabilities."""

    def __init__(self, transport: str, era: str, file: Path, declared: dict[str, Any]) -> None:
        self.transport, self.era, self.declared = transport, era, declared
        self.ids = itertools.count(1)
        self.stdio: RawHost | None = None
        self.http: HttpHost | None = None
        self.client: httpx2.Client | None = None
        self.session_id = ""
        self.initialized: dict[str, Any] = {}
        if transport == "stdio":
            self.stdio = RawHost("run", str(file))
        else:
            self.http = HttpHost("run", str(file))
            self.client = httpx2.Client(timeout=30)
        if era == STATEFUL:
            info = {"name": "raw", "version": "1"}
            params = {"protocolVersion": STATEFUL, "capabilities": declared, "clientInfo": info}
            self.initialized = self.request("initialize", params)["result"]
            self.notify("notifications/initialized")

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        params = dict(params or {})
        if self.era == MODERN:
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": self.declared,
            }
        request_id = next(self.ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        if self.stdio is not None:
            self.stdio.send(message)
            answer: dict[str, Any] = self.stdio.recv_response(request_id, timeout=30)
            return answer
        assert self.http is not None and self.client is not None
        headers = self._headers(method, params)
        response = self.client.post(self.http.url, content=orjson.dumps(message), headers=headers)
        assert response.status_code == 200, response.text
        if method == "initialize":
            self.session_id = response.headers["mcp-session-id"]
        answered: dict[str, Any] = answer_of(response)
        return answered

    def notify(self, method: str) -> None:
        message = {"jsonrpc": "2.0", "method": method}
        if self.stdio is not None:
            self.stdio.send(message)
            return
        assert self.http is not None and self.client is not None
        headers = self._headers(method, {})
        response = self.client.post(self.http.url, content=orjson.dumps(message), headers=headers)
        assert response.status_code == 202, response.text

    def _headers(self, method: str, params: dict[str, Any]) -> dict[str, str]:
        headers = {"accept": ACCEPT, "content-type": "application/json"}
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
        if self.era == MODERN:
            headers.update({"mcp-protocol-version": MODERN, "mcp-method": method})
            if method in ROUTED:
                headers["mcp-name"] = str(params[ROUTED[method]])
        return headers

    def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        answer = self.request(method, params)
        assert "result" in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    def capabilities(self) -> dict[str, Any]:
        if self.era == STATEFUL:
            found: dict[str, Any] = self.initialized["capabilities"]
            return found
        discovered: dict[str, Any] = self.result("server/discover")["capabilities"]
        return discovered

    def close(self) -> None:
        if self.stdio is not None:
            self.stdio.close()
        if self.client is not None:
            self.client.close()
        if self.http is not None:
            self.http.terminate()


@pytest.fixture
def app_file(tmp_path: Path) -> Path:
    path = tmp_path / "charts.py"
    path.write_text(SOURCE)
    return path


CASES = [(transport, era) for transport in ("stdio", "http") for era in (STATEFUL, MODERN)]


@pytest.fixture(params=CASES, ids=[f"{t}-{e}" for t, e in CASES])
def case(request: pytest.FixtureRequest) -> tuple[str, str]:
    found: tuple[str, str] = request.param
    return found


@pytest.fixture
def connect(app_file: Path, case: tuple[str, str]) -> Iterator[Any]:
    opened: list[Raw] = []

    def open_client(declared: dict[str, Any]) -> Raw:
        client = Raw(*case, app_file, declared)
        opened.append(client)
        return client

    yield open_client
    for client in opened:
        client.close()


def test_the_extension_tool_meta_and_the_app_resource(connect: Any) -> None:
    client = connect(DECLARES_UI)
    assert client.capabilities()["extensions"][UI] == {}
    tools = {tool["name"]: tool for tool in client.result("tools/list")["tools"]}
    assert tools["sales"]["_meta"] == {
        "ui": {"resourceUri": "ui://charts/bar"},
        "ui/resourceUri": "ui://charts/bar",
    }
    # an app-only tool is still listed: the client keeps it from its model, the app may call it
    assert tools["refresh"]["_meta"]["ui"] == {"resourceUri": "ui://charts/bar", "visibility": ["app"]}
    assert "_meta" not in tools["plain"]
    ui_meta = {"csp": {"connectDomains": ["https://api.example.com"]}, "prefersBorder": True}
    [listed] = client.result("resources/list")["resources"]
    assert listed["uri"] == "ui://charts/bar" and listed["mimeType"] == APP_MIME
    assert listed["_meta"] == {"ui": ui_meta}
    [content] = client.result("resources/read", {"uri": "ui://charts/bar"})["contents"]
    assert content == {"uri": "ui://charts/bar", "mimeType": APP_MIME, "text": HTML, "_meta": {"ui": ui_meta}}
    assert client.result("tools/call", {"name": "refresh", "arguments": {}})["content"][0]["text"] == "fresh"


@pytest.mark.parametrize("declared", [DECLARES_UI, {}], ids=["declares-ui", "declares-nothing"])
def test_client_supports_tells_what_the_client_declared(connect: Any, declared: dict[str, Any]) -> None:
    client = connect(declared)
    result = client.result("tools/call", {"name": "sales", "arguments": {"quarter": "Q3"}})
    expected = {"quarter": "Q3", "total": 42, "apps": bool(declared)}
    assert result["structuredContent"] == expected
    assert orjson.loads(result["content"][0]["text"]) == expected  # the text a client without UIs shows
    assert result["isError"] is False
