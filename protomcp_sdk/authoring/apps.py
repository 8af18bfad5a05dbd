"""MCP Apps (the extension ``io.modelcontextprotocol/ui``, spec 2026-01-26): a ``ui://``
resource holds an app's HTML, a tool names it in ``_meta.ui.resourceUri`` and the client renders
it beside the tool's result. What the tool file writes (``@tool(ui=..., visibility=...)``,
``@resource("ui://...", ui=UI(...))``) becomes the spec's ``_meta`` keys here, checked once when
the function is decorated."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from protomcp_sdk.wire.jsontypes import JSON, JSONObject

UI_EXTENSION = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"  # what a ui:// resource is served as by default
UI_SCHEME = "ui://"
LEGACY_URI_KEY = "ui/resourceUri"  # the spec's deprecated flat key, which older hosts read

Visibility = Literal["model", "app"]
Permission = Literal["camera", "microphone", "geolocation", "clipboard_write"]
VISIBILITIES = ("model", "app")
_PERMISSIONS = {
    "camera": "camera",
    "microphone": "microphone",
    "geolocation": "geolocation",
    "clipboard_write": "clipboardWrite",
}


@dataclass(frozen=True)
class UI:
    """How a client should host an app (the resource's ``_meta.ui``): the origins its Content
    Security Policy lets in (none by default: an app that loads nothing from the network needs
    none), the browser permissions it asks for, a dedicated sandbox origin (host-specific) and
    whether it wants a border."""

    connect_domains: Iterable[str] = ()  # fetch/XHR/WebSocket (CSP connect-src)
    resource_domains: Iterable[str] = ()  # scripts, styles, images, fonts, media
    frame_domains: Iterable[str] = ()  # nested iframes (frame-src)
    base_uri_domains: Iterable[str] = ()  # base-uri
    permissions: Iterable[Permission] = ()  # "camera", "microphone", "geolocation", "clipboard_write"
    domain: str | None = None
    prefers_border: bool | None = None

    def meta(self, label: str) -> JSONObject:
        """The spec's ``_meta.ui`` object of the resource."""
        csp: JSONObject = {}
        for key, value in (
            ("connectDomains", self.connect_domains),
            ("resourceDomains", self.resource_domains),
            ("frameDomains", self.frame_domains),
            ("baseUriDomains", self.base_uri_domains),
        ):
            domains = _strings(label, key, value)
            if domains:
                csp[key] = domains
        meta: JSONObject = {}
        if csp:
            meta["csp"] = csp
        permissions = _strings(label, "permissions", self.permissions)
        unknown = [p for p in permissions if p not in _PERMISSIONS]
        if unknown:
            raise ValueError(
                f"{label}: unknown permission {unknown[0]!r} (one of {', '.join(map(repr, _PERMISSIONS))})"
            )
        if permissions:
            meta["permissions"] = {_PERMISSIONS[p]: {} for p in permissions}
        if self.domain is not None:
            if not isinstance(self.domain, str) or not self.domain:
                raise TypeError(f"{label}: domain must be a non-empty string")
            meta["domain"] = self.domain
        if self.prefers_border is not None:
            meta["prefersBorder"] = bool(self.prefers_border)
        return meta


def _strings(label: str, key: str, values: Iterable[str]) -> list[str]:
    if isinstance(values, str) or not all(isinstance(v, str) and v for v in values):
        raise TypeError(f"{label}: {key} must be a list of strings, e.g. [{values!r}]")
    return list(values)


def resource_ui(
    uri: str, mime_type: str | None, ui: UI | None, meta: JSONObject | None
) -> tuple[str | None, JSONObject | None]:
    """A resource's mime type (a ui:// resource's default: the app profile) and the ``_meta.ui``
    its listing and its contents carry (None: not an app, or one with nothing to say)."""
    label = f"resource {uri!r}"
    is_app = uri.startswith(UI_SCHEME)
    if ui is not None and not isinstance(ui, UI):
        raise TypeError(
            f"{label}: ui must be a UI(...), e.g. ui=UI(connect_domains=['https://api.example.com'])"
        )
    if ui is not None and not is_app:
        raise ValueError(f"{label}: ui= is for apps, whose URI starts with {UI_SCHEME}")
    if ui is not None and meta and "ui" in meta:
        raise TypeError(f"{label}: give the app's settings once, as ui=UI(...) or as meta={{'ui': ...}}")
    if is_app and mime_type is None:
        mime_type = APP_MIME_TYPE
    ui_meta = ui.meta(label) if ui is not None else None
    return mime_type, ui_meta or None


def tool_ui(
    label: str, ui: str | None, visibility: Iterable[Visibility] | None, meta: JSONObject | None
) -> JSONObject | None:
    """A tool's ``_meta`` with the app it shows (``ui.resourceUri``, and the legacy flat key)
    and who may call it (``ui.visibility``) added."""
    if ui is None and visibility is None:
        return meta
    if meta and ("ui" in meta or LEGACY_URI_KEY in meta):
        raise TypeError(f"{label}: give the app once, as ui=/visibility= or in meta=")
    entry: JSONObject = {}
    extra: JSONObject = {}
    if ui is not None:
        if not isinstance(ui, str) or not ui.startswith(UI_SCHEME) or len(ui) == len(UI_SCHEME):
            raise ValueError(f"{label}: ui must name a resource whose URI starts with {UI_SCHEME}: {ui!r}")
        entry["resourceUri"] = ui
        # the official SDK's registerAppTool sets the deprecated flat key too, for the hosts
        # released before the spec nested it: so do we, until the spec drops it
        extra[LEGACY_URI_KEY] = ui
    if visibility is not None:
        entry["visibility"] = checked_visibility(label, visibility)
    return {**(meta or {}), "ui": entry, **extra}


def checked_visibility(label: str, visibility: Iterable[Visibility]) -> list[JSON]:
    if isinstance(visibility, str):
        raise TypeError(f"{label}: visibility must be a list, e.g. visibility=[{visibility!r}]")
    chosen = list(visibility)
    if not chosen or any(v not in VISIBILITIES for v in chosen):
        raise ValueError(
            f"{label}: visibility must list 'model' (the model may call it) and/or 'app' "
            f"(its app may call it), got {chosen!r}"
        )
    return [v for v in VISIBILITIES if v in chosen]


def declared_files(label: str, fn: object, files: Iterable[str] | None) -> tuple[Path, ...]:
    """``files=`` of ``@resource``: files beside the tool file that the resource serves from
    (an app's HTML, say), resolved against the tool file's folder; they must exist, inside it.
    ``protomcp pack`` puts them in the bundle."""
    if files is None:
        return ()
    if isinstance(files, str):
        raise TypeError(f"{label}: files must be a list of paths, e.g. files=[{files!r}]")
    code = getattr(fn, "__code__", None)
    folder = Path(code.co_filename).resolve().parent if code is not None else Path.cwd()
    found = []
    for name in files:
        relative = Path(name)
        if not isinstance(name, str) or relative.is_absolute() or ".." in relative.parts:
            raise ValueError(f"{label}: files must be paths relative to the tool file's folder, got {name!r}")
        path = folder / relative
        if not path.is_file():
            raise FileNotFoundError(f"{label}: files names {name!r}, which is not a file in {folder}")
        if not path.resolve().is_relative_to(folder):  # (a symlink out: pack would bundle its target)
            raise ValueError(f"{label}: files names {name!r}, a link to outside the tool file's folder")
        found.append(path)
    return tuple(found)


def names_app(meta: Mapping[str, JSON] | None) -> str | None:
    """The app a tool's ``_meta`` names (``ui.resourceUri``), if any."""
    ui = meta.get("ui") if meta else None
    uri = ui.get("resourceUri") if isinstance(ui, dict) else None
    return uri if isinstance(uri, str) else None


def supports(capabilities: Mapping[str, JSON], extension: str) -> bool:
    """Whether the client declared `extension` (under ``capabilities.extensions``)."""
    extensions = capabilities.get("extensions")
    return isinstance(extensions, dict) and extension in extensions
