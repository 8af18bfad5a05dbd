"""``meta=``, ``icons=`` and ``scopes=`` of ``@tool``, ``@resource`` and ``@prompt``: checked once
when the function is decorated; meta and icons are listed as the MCP ``_meta`` object and
``icons`` array, scopes are the host's to enforce (never listed)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import orjson

from protomcp_sdk.wire.jsontypes import JSON, JSONObject

ALWAYS_LOAD = "anthropic/alwaysLoad"  # Claude Code: list this tool up front, not behind its tool search


def checked_meta(label: str, meta: Mapping[str, JSON] | None) -> JSONObject | None:
    """``meta`` as a dict of JSON values keyed by strings (None when empty)."""
    if meta is None:
        return None
    if not isinstance(meta, Mapping) or not all(isinstance(key, str) for key in meta):
        raise TypeError(
            f"{label}: meta must be a dict with string keys, e.g. meta={{'anthropic/searchHint': '...'}}"
        )
    try:
        orjson.dumps(dict(meta))
    except TypeError as exc:
        raise TypeError(f"{label}: meta must hold JSON values ({exc})") from None
    return dict(meta) or None


def checked_icons(label: str, icons: Iterable[Mapping[str, JSON]] | None) -> list[JSONObject] | None:
    """``icons`` as MCP Icon objects: each has a ``src`` (a URL or a data: URI), and may have
    ``mimeType``, ``sizes`` (list of "48x48"...) and ``theme`` ("light" or "dark")."""
    if icons is None:
        return None
    if isinstance(icons, (str, Mapping)):
        raise TypeError(f"{label}: icons must be a list, e.g. icons=[{{'src': 'https://.../icon.png'}}]")
    checked = []
    for icon in icons:
        if not isinstance(icon, Mapping) or not isinstance(icon.get("src"), str) or not icon["src"]:
            raise TypeError(f"{label}: each icon must be a dict with a 'src' URL, got {icon!r}")
        checked.append(dict(icon))
    return checked or None


def checked_scopes(label: str, scopes: Iterable[str] | None) -> frozenset[str]:
    """``scopes`` as a set of OAuth scope tokens (RFC 6749 section 3.3: printable ASCII without
    spaces, double quotes or backslashes), e.g. ``scopes={"files:write"}``."""
    if scopes is None:
        return frozenset()
    if isinstance(scopes, str):
        raise TypeError(f"{label}: scopes must be a set of strings, e.g. scopes={{{scopes!r}}}")
    checked = frozenset(scopes)
    for scope in checked:
        if not isinstance(scope, str) or not scope or not all(_scope_char(c) for c in scope):
            raise ValueError(
                f"{label}: {scope!r} is not an OAuth scope (printable ASCII without spaces, "
                "double quotes or backslashes)"
            )
    return checked


def _scope_char(char: str) -> bool:
    return "!" <= char <= "~" and char not in '"\\'


def as_json(value: JSON) -> str:
    return orjson.dumps(value).decode() if value else ""
