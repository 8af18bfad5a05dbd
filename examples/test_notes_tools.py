"""Testing a tool file: copy this next to your own tool file and run `pytest`.

`Client` runs the file in the real protomcp host and tool process and calls it as an AI
client would; `load_tool_module` and `RecordingContext` let a unit test call a tool function directly.
(pytest-asyncio runs the async tests; this project sets `asyncio_mode = "auto"`.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from protomcp_sdk.testing import Client, RecordingContext, load_tool_module

NOTES = Path(__file__).parent / "tools" / "notes.py"


async def test_notes_end_to_end() -> None:
    async with Client(NOTES) as c:
        names = [tool["name"] for tool in await c.list_tools()]
        assert "add_note" in names and "search_notes" in names

        added = await c.call("add_note", title="Buy milk", tags=["home"])
        assert not added.is_error
        assert added.structured["title"] == "Buy milk"

        found = await c.call("search_notes", query="milk")
        assert [note["id"] for note in found.structured["result"]] == [added.structured["id"]]
        assert c.progress[-1].progress == c.progress[-1].total == 1  # progress was reported...
        assert any("1 of 1 notes match" in str(log["data"]) for log in c.logs)  # ...and a log line

        missing = await c.call("get_note", note_id=99)
        assert missing.is_error and "list_notes" in missing.text  # the ToolError's suggestion

        invalid = await c.call("add_note", title="")  # fails validation before the tool runs
        assert invalid.is_error and "title" in invalid.text


async def test_search_notes_directly() -> None:
    notes = load_tool_module(NOTES)  # a fresh copy of the module: its own empty notes store
    notes.add_note("Call Ada", body="about the engine")
    ctx = RecordingContext("search_notes")
    hits = await notes.search_notes("engine", ctx)
    assert [hit.title for hit in hits] == ["Call Ada"]
    assert ctx.progress == [(1, 1, "searched 1 of 1 notes")]
    assert ctx.logs == [("info", "1 of 1 notes match 'engine'")]


@pytest.mark.parametrize("query", ["", "   "])
async def test_search_rejects_empty_queries(query: str) -> None:
    async with Client(NOTES) as c:
        result = await c.call("search_notes", query=query)
    assert result.is_error == (query == "")
