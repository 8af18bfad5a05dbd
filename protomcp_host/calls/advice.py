"""What the author of a tool file hears when it loads, beyond what the SDK says itself: a tool
with no description, which is the text the model reads to know what the tool does and when to
use it. Said by the host (at load, on stderr and to the dev diagnostics; in `inspect`), so it
holds for any tool process, not only one written with our SDK."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def undescribed(tools: Iterable[Mapping[str, Any]]) -> list[str]:
    """The names of the MCP tools whose description is missing or blank."""
    return [str(tool["name"]) for tool in tools if not str(tool.get("description") or "").strip()]


def no_description(name: str) -> str:
    return (
        f"tool '{name}' has no description, which is what the model reads to know what it does and "
        "when to use it: give the function a docstring (or @tool(description=...))"
    )
