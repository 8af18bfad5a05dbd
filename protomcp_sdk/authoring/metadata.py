"""``meta=`` and ``icons=`` of ``@tool``, ``@resource`` and ``@prompt``: checked once when the
function is decorated, listed as the MCP ``_meta`` object and ``icons`` array."""

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


def as_json(value: JSON) -> str:
    return orjson.dumps(value).decode() if value else ""
