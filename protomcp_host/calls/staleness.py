"""`protomcp dev`: while a saved tool file fails to load, the previous version keeps serving,
and each answer of that file's tools says so — the model (and through it the person) learns
of the broken save where they look, without asking for log messages."""

from __future__ import annotations

import re
import time
from dataclasses import replace
from urllib.parse import quote

import orjson

from protomcp_host.protocol.session import ToolAnswer

MAX_DETAIL = 240  # characters of the exception's own line kept in the note
_FRAME = re.compile(r'File "([^"]*)", line (\d+)')


def stale_note(label: str, error: str, at: float | None = None) -> str:
    """One line: which file failed, when, the exception and where, and what the answer is.
    `error` is the load failure as the host reports it (a traceback for an import error)."""
    clock = time.strftime("%H:%M:%S", time.localtime(at))
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    detail = lines[-1] if lines else "unknown error"
    if detail.startswith(f"{label} failed to load"):  # no traceback: the whole message is the first line
        detail = detail.split(":", 1)[-1].strip() or detail
    if len(detail) > MAX_DETAIL:
        detail = detail[: MAX_DETAIL - 1] + "…"
    frames = _FRAME.findall(error)
    own = [line for path, line in frames if path.replace("\\", "/").rsplit("/", 1)[-1] == label]
    where = f" (line {own[-1]})" if own else ""
    return (
        f"Note: {label} failed to load at {clock}: {detail}{where}. This answer came from the "
        f"previous version of {label}, which keeps serving until the file is fixed and saved."
    )


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
