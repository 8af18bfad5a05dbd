"""dev: the note a stale file's answers carry (calls/staleness.py)."""

from __future__ import annotations

import orjson
import pytest

from protomcp_host.calls.staleness import placeholder_tool, stale_note, with_note
from protomcp_host.protocol.session import ToolAnswer

pytestmark = pytest.mark.fast  # starts no process

SYNTAX = (
    'tools.py failed to load:\n  File "/home/me/tools.py", line 12\n    def broken(:\n'
    "               ^\nSyntaxError: invalid syntax\n"
)
RAISED = (
    'mytools.py failed to load:\nTraceback (most recent call last):\n  File "/home/me/mytools.py", line 4, '
    'in <module>\n    import helper\n  File "/home/me/helper.py", line 9, in <module>\n'
    "    raise RuntimeError('config missing')\nRuntimeError: config missing\n"
)


def test_the_note_names_the_file_time_exception_and_line() -> None:
    note = stale_note("tools.py", SYNTAX, at=0)
    assert note.startswith("Note: tools.py failed to load at ")
    assert "SyntaxError: invalid syntax (line 12)" in note
    assert "This answer came from the previous version of tools.py" in note


def test_the_line_is_the_files_own_frame_not_a_module_it_imports() -> None:
    note = stale_note("mytools.py", RAISED, at=0)
    assert "RuntimeError: config missing (line 4)" in note


def test_a_failure_without_traceback_is_said_as_is() -> None:
    note = stale_note("tools.py", "tools.py: tool 'alpha' is defined by tools.py and other.py", at=0)
    assert "tool 'alpha' is defined by tools.py and other.py." in note and "(line" not in note


def test_the_note_is_one_more_text_block() -> None:
    answer = ToolAnswer([b'[{"type":"text",', b'"text":"hi"}]'], trusted=True)
    noted = with_note(answer, "Note: stale", "tools.py")
    assert orjson.loads(b"".join(noted.content)) == [
        {"type": "text", "text": "hi"},
        {"type": "text", "text": "Note: stale"},
    ]
    assert noted.trusted
    empty = with_note(ToolAnswer([b"[]"]), "Note: stale", "tools.py")
    assert orjson.loads(b"".join(empty.content)) == [{"type": "text", "text": "Note: stale"}]


def test_beside_structured_content_the_note_is_an_embedded_resource() -> None:
    """Clients hand the model a structured result's structuredContent and non-text blocks
    only (Claude Code does); the structured content itself stays as the tool made it."""
    answer = ToolAnswer([b'[{"type":"text",', b'"text":"3"}]'], b'{"result":3}', trusted=True)
    noted = with_note(answer, "Note: stale", "my tools.py")
    uri = "protomcp://dev/load-error/my%20tools.py"
    resource = {"uri": uri, "mimeType": "text/plain", "text": "Note: stale"}
    assert orjson.loads(b"".join(noted.content)) == [
        {"type": "text", "text": "3"},
        {"type": "resource", "resource": resource},
    ]
    assert noted.structured == answer.structured and noted.trusted
    typed = with_note(ToolAnswer([b"[]"], structured_proto=b"\x08\x03"), "Note: stale", "t.py")
    assert orjson.loads(b"".join(typed.content))[0]["type"] == "resource"


def test_malformed_content_is_left_for_the_session_to_refuse() -> None:
    answer = ToolAnswer([b'{"not": "a list"}'])
    assert with_note(answer, "Note: stale", "tools.py") is answer


def test_a_file_that_never_loaded_has_a_placeholder_tool_naming_the_error() -> None:
    tool = placeholder_tool("my-tools.v2.py", SYNTAX.replace("tools.py", "my-tools.v2.py"))
    assert tool.name == "my-tools_v2_py_failed_to_load" and tool.owner == "my-tools.v2.py"
    assert tool.pinned and tool.mcp["_meta"] == {"anthropic/alwaysLoad": True}
    assert "SyntaxError: invalid syntax (line 12)" in tool.mcp["description"]
    assert tool.validate({}) is None
