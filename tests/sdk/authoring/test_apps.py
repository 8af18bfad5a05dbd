"""MCP Apps in the SDK: `@tool(ui=..., visibility=...)` and `@resource("ui://...", ui=UI(...),
files=[...])` become the spec's `_meta` keys (checked when decorated), a ui:// resource's mime
type defaults to the app profile, a tool naming an app the file does not serve is warned about,
`inspect` reports the app, and `ctx.client_supports` reads the declared extensions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from protomcp_sdk import UI, Context, resource, tool
from protomcp_sdk.authoring.apps import APP_MIME_TYPE, UI_EXTENSION, declared_files
from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.runtime.inspection import resource_entry, tool_entry
from protomcp_sdk.testing import RecordingContext

pytestmark = [pytest.mark.fast, pytest.mark.usefixtures("clean_registry")]  # starts no process


def _meta(name: str) -> Any:
    return orjson.loads(REGISTRY.tools[name].definition().meta_json or "null")


def test_a_ui_tool_names_its_app_in_meta_with_the_legacy_key() -> None:
    @tool(ui="ui://charts/bar", meta={"anthropic/searchHint": "sales chart"})
    def sales() -> str:
        return "x"

    @tool(ui="ui://charts/bar", visibility=["app", "model"])
    def both() -> str:
        return "x"

    @tool(visibility=["app"])
    def refresh() -> str:
        return "x"

    @tool
    def plain() -> str:
        return "x"

    assert _meta("sales") == {
        "anthropic/searchHint": "sales chart",
        "ui": {"resourceUri": "ui://charts/bar"},
        "ui/resourceUri": "ui://charts/bar",
    }
    assert _meta("both")["ui"] == {"resourceUri": "ui://charts/bar", "visibility": ["model", "app"]}
    assert _meta("refresh") == {"ui": {"visibility": ["app"]}}  # an app-only tool needs no app of its own
    assert _meta("plain") is None
    assert REGISTRY.tools["sales"].app == "ui://charts/bar" and REGISTRY.tools["refresh"].app is None


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"ui": "https://example.com/chart.html"}, "starts with ui://"),
        ({"ui": "ui://"}, "starts with ui://"),
        ({"visibility": "app"}, "must be a list"),
        ({"visibility": []}, "'model'"),
        ({"visibility": ["user"]}, "'model'"),
        ({"ui": "ui://x", "meta": {"ui": {"resourceUri": "ui://y"}}}, "give the app once"),
    ],
)
def test_tool_app_options_are_checked_when_decorated(options: dict[str, Any], problem: str) -> None:
    with pytest.raises((TypeError, ValueError), match=problem):

        @tool(**options)
        def wrong() -> str:
            return "x"


def test_a_ui_resource_defaults_to_the_app_mime_type_and_carries_its_ui_meta() -> None:
    @resource(
        "ui://charts/bar",
        ui=UI(
            connect_domains=["https://api.example.com"],
            resource_domains=["https://cdn.example.com"],
            frame_domains=["https://www.youtube.com"],
            base_uri_domains=["https://cdn.example.com"],
            permissions=["camera", "clipboard_write"],
            domain="abc.example-content.com",
            prefers_border=False,
        ),
    )
    def bar() -> str:
        return "<html></html>"

    @resource("ui://charts/plain")
    def plain_app() -> str:
        return "<html></html>"

    @resource("ui://charts/svg", mime_type="image/svg+xml")
    def svg() -> str:
        return "<svg/>"

    @resource("notes://today")
    def notes() -> str:
        return "n"

    ui = {
        "csp": {
            "connectDomains": ["https://api.example.com"],
            "resourceDomains": ["https://cdn.example.com"],
            "frameDomains": ["https://www.youtube.com"],
            "baseUriDomains": ["https://cdn.example.com"],
        },
        "permissions": {"camera": {}, "clipboardWrite": {}},
        "domain": "abc.example-content.com",
        "prefersBorder": False,
    }
    spec = REGISTRY.resources["ui://charts/bar"]
    listed = spec.resource_definition()
    assert listed.mime_type == APP_MIME_TYPE and orjson.loads(listed.meta_json) == {"ui": ui}
    assert spec.contents("<html></html>", spec.uri) == [
        {"uri": "ui://charts/bar", "mimeType": APP_MIME_TYPE, "text": "<html></html>", "_meta": {"ui": ui}}
    ]
    plain = REGISTRY.resources["ui://charts/plain"]
    assert plain.mime_type == APP_MIME_TYPE and plain.resource_definition().meta_json == ""
    assert plain.contents("<p/>", plain.uri) == [
        {"uri": "ui://charts/plain", "mimeType": APP_MIME_TYPE, "text": "<p/>"}
    ]
    assert REGISTRY.resources["ui://charts/svg"].mime_type == "image/svg+xml"  # the author's choice stays
    assert REGISTRY.resources["notes://today"].mime_type is None  # only ui:// resources are apps


@pytest.mark.parametrize(
    ("uri", "options", "problem"),
    [
        ("notes://x", {"ui": UI(prefers_border=True)}, "URI starts with ui://"),
        ("ui://x", {"ui": {"prefersBorder": True}}, "must be a UI"),
        ("ui://x", {"ui": UI(permissions=["printer"])}, "unknown permission 'printer'"),  # type: ignore[list-item]
        ("ui://x", {"ui": UI(connect_domains="https://a.example")}, "must be a list of strings"),
        ("ui://x", {"ui": UI(prefers_border=True), "meta": {"ui": {}}}, "give the app's settings once"),
        ("ui://x", {"files": "chart.html"}, "must be a list of paths"),
        ("ui://x", {"files": ["../chart.html"]}, "relative to the tool file's folder"),
        ("ui://x", {"files": ["no-such-chart.html"]}, "not a file"),
    ],
)
def test_resource_app_options_are_checked_when_decorated(
    uri: str, options: dict[str, Any], problem: str
) -> None:
    with pytest.raises((TypeError, ValueError, FileNotFoundError), match=problem):

        @resource(uri, **options)
        def wrong() -> str:
            return "x"


def test_files_resolve_against_the_tool_files_folder(tmp_path: Path) -> None:
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "chart.html").write_text("<html></html>")
    namespace: dict[str, Any] = {}
    exec(compile("def chart():\n    return ''\n", str(tmp_path / "charts.py"), "exec"), namespace)
    assert declared_files("r", namespace["chart"], ["assets/chart.html"]) == (
        tmp_path / "assets" / "chart.html",
    )


def test_files_may_not_reach_outside_the_folder_through_a_symlink(tmp_path: Path) -> None:
    """A symlink beside the tool file (a file, or a folder on the way) once passed the check, and
    `pack` put what it points to (say ~/.ssh/id_rsa) in the bundle."""
    folder, secret = tmp_path / "tools", tmp_path / "secret.txt"
    folder.mkdir()
    secret.write_text("private")
    (folder / "style.css").symlink_to(secret)
    (folder / "assets").symlink_to(tmp_path)
    (folder / "inside.html").write_text("<html></html>")
    (folder / "alias.html").symlink_to(folder / "inside.html")  # (a link within the folder is fine)
    namespace: dict[str, Any] = {}
    exec(compile("def chart():\n    return ''\n", str(folder / "charts.py"), "exec"), namespace)
    for name in ("style.css", "assets/secret.txt"):
        with pytest.raises(ValueError, match="outside the tool file's folder"):
            declared_files("r", namespace["chart"], [name])
    assert declared_files("r", namespace["chart"], ["alias.html"]) == (folder / "alias.html",)


def test_a_tool_naming_an_app_the_file_does_not_serve_is_warned_about() -> None:
    @resource("ui://charts/{kind}")
    def chart(kind: str) -> str:
        return kind

    @tool(ui="ui://charts/bar")  # served by the template
    def sales() -> str:
        return "x"

    @tool(ui="ui://maps/world")
    def travel() -> str:
        return "x"

    [warning] = REGISTRY.warnings("charts.py")
    assert "tool 'travel' shows the app 'ui://maps/world', which this file does not define" in warning


def test_inspect_reports_a_tools_app_and_a_resources_ui() -> None:
    @resource("ui://charts/bar", ui=UI(prefers_border=True))
    def bar() -> str:
        return "<html></html>"

    @tool(ui="ui://charts/bar", visibility=["app"])
    def refresh() -> str:
        return "x"

    @tool
    def plain() -> str:
        return "x"

    assert tool_entry(REGISTRY.tools["refresh"])["ui"] == {
        "resourceUri": "ui://charts/bar",
        "visibility": ["app"],
    }
    assert "ui" not in tool_entry(REGISTRY.tools["plain"])
    entry = resource_entry(REGISTRY.resources["ui://charts/bar"])
    assert entry["mimeType"] == APP_MIME_TYPE and entry["ui"] == {"prefersBorder": True}


def test_client_supports_reads_the_declared_extensions() -> None:
    assert RecordingContext(extensions=[UI_EXTENSION]).client_supports(UI_EXTENSION) is True
    assert RecordingContext().client_supports(UI_EXTENSION) is False
    assert RecordingContext(extensions=["com.example/other"]).client_supports(UI_EXTENSION) is False

    def context(capabilities: dict[str, Any]) -> Context:
        return Context("1", "t", lambda _: None, capabilities_json=orjson.dumps(capabilities).decode())

    assert context({"extensions": {UI_EXTENSION: {"mimeTypes": [APP_MIME_TYPE]}}}).client_supports(
        UI_EXTENSION
    )
    assert not context({"extensions": [UI_EXTENSION]}).client_supports(UI_EXTENSION)  # not the spec's shape
    assert not context({"experimental": {UI_EXTENSION: {}}}).client_supports(UI_EXTENSION)
