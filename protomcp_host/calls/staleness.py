"""`protomcp dev`: while a saved tool file fails to load, the previous version keeps serving,
and each answer of that file's tools says so — the model (and through it the person) learns
of the broken save where they look, without asking for log messages. A file that has not
loaded since the host started has no previous version: a placeholder tool says why instead."""

from __future__ import annotations

import re
import time
from dataclasses import replace
from urllib.parse import quote

import orjson

from protomcp_host.protocol.catalog import Tool
from protomcp_host.protocol.session import ToolAnswer

ALWAYS_LOAD = "anthropic/alwaysLoad"  # Claude Code: offer the tool up front, not behind its tool search
MAX_DETAIL = 240  # characters of the exception's own line kept in the note
_FRAME = re.compile(r'File "([^"]*)", line (\d+)')


def stale_note(label: str, error: str, at: float | None = None) -> str:
    """One line: which file failed, when, the exception and where, and what the answer is.
    `error` is the load failure as the host reports it (a traceback for an import error)."""
    clock = time.strftime("%H:%M:%S", time.localtime(at))
    return (
        f"Note: {label} failed to load at {clock}: {load_summary(label, error)}. This answer came from "
        f"the previous version of {label}, which keeps serving until the file is fixed and saved."
    )


def load_summary(label: str, error: str) -> str:
    """The exception's own line and the file's line it points at: "SyntaxError: ... (line 9)"."""
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    detail = lines[-1] if lines else "unknown error"
    if detail.startswith(f"{label} failed to load"):  # no traceback: the whole message is the first line
        detail = detail.split(":", 1)[-1].strip() or detail
    if len(detail) > MAX_DETAIL:
        detail = detail[: MAX_DETAIL - 1] + "…"
    frames = _FRAME.findall(error)
    own = [line for path, line in frames if path.replace("\\", "/").rsplit("/", 1)[-1] == label]
    return f"{detail} (line {own[-1]})" if own else detail


def placeholder_tool(label: str, error: str) -> Tool:
    """dev: the tool that stands for a file that has not loaded yet, so that the model (which
    reads tool lists, not log messages) learns why the file's tools are missing. Listed up
    front (pinned, and Claude Code's alwaysLoad); a call answers the whole error. The file's
    own tools replace it once it loads."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", label) + "_failed_to_load"
    description = (
        f"{label} failed to load, so none of its tools are served: {load_summary(label, error)}. "
        f"Fix the file and save it: its tools then replace this one. Call this tool for the "
        "whole error."
    )
    mcp = {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": True},
        "_meta": {ALWAYS_LOAD: True},
    }
    return Tool(name, label, mcp, pinned=True)


def with_note(answer: ToolAnswer, note: str, label: str) -> ToolAnswer:
    """The answer with `note` as one more content block (unchanged if its content is not a list:
    the session reports that malformed content itself). A text block, unless the answer has
    structured content: clients then hand the model the structured content and drop the text
    blocks (Claude Code does), but keep the other blocks, so the note is an embedded text
    resource there, which leaves the structured content valid against the output schema."""
    try:
        content = orjson.loads(b"".join(answer.content))
    except orjson.JSONDecodeError:
        return answer
    if not isinstance(content, list):
        return answer
    if answer.structured or answer.structured_proto:
        resource = {"uri": note_uri(label), "mimeType": "text/plain", "text": note}
        content.append({"type": "resource", "resource": resource})
    else:
        content.append({"type": "text", "text": note})
    content_json = orjson.dumps(content)
    return replace(answer, content=[content_json])


def note_uri(label: str) -> str:
    """The URI of the note's embedded resource (a name, not something to read)."""
    return f"protomcp://dev/load-error/{quote(label)}"
