"""`protomcp call FILE URI` reads a resource, `protomcp call FILE PROMPT k=v` renders a prompt:
the requests, and how their results are shown."""

from __future__ import annotations

import binascii
from collections.abc import Awaitable, Callable
from typing import Any

Request = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


def is_uri(name: str) -> bool:
    return "://" in name


async def find_prompt(request: Request, name: str) -> dict[str, Any] | None:
    """The prompt called `name`, if the files offer one (every page of prompts/list)."""
    from protomcp_host.transports.direct import RequestFailed

    cursor: str | None = None
    while True:
        try:
            page = await request("prompts/list", {"cursor": cursor} if cursor else {})
        except RequestFailed:  # no prompts at all
            return None
        found = next((p for p in page.get("prompts") or [] if p.get("name") == name), None)
        cursor = page.get("nextCursor")
        if found is not None or not cursor:
            return found


def prompt_arguments(pairs: tuple[str, ...], given: dict[str, Any]) -> dict[str, str]:
    """A prompt's arguments are strings: KEY=VALUE as written, --args values as text."""
    arguments = {key: value if isinstance(value, str) else str(value) for key, value in given.items()}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"expected KEY=VALUE, got {pair!r}")
        arguments[key] = value
    return arguments


def contents_text(result: dict[str, Any]) -> list[str]:
    """A resources/read result for a person: text as it is, binary as its type and size."""
    lines = []
    for item in result.get("contents") or []:
        if "text" in item:
            lines.append(str(item["text"]))
        else:
            size = len(binascii.a2b_base64(item.get("blob", "")))
            lines.append(f"[{item.get('mimeType') or 'binary'} {item.get('uri', '')}, {size} bytes]")
    return lines


def messages_text(result: dict[str, Any], describe: Callable[[dict[str, Any]], str]) -> list[str]:
    """A prompts/get result for a person: one `role: content` per message."""
    return [f"{m.get('role', '?')}: {describe(m.get('content') or {})}" for m in result.get("messages") or []]
