"""An in-memory notes store, showing the main features of a tool file.

- typed parameters with descriptions, constraints, defaults, an Enum and a Literal
- dataclass returns: JSON text plus structuredContent with an outputSchema
- an async tool that reports progress and logs to the client through Context
- ToolError with a suggestion the model can act on
- tool annotations: read-only readers, a destructive delete

Serve it:  protomcp run examples/tools/notes.py
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field

from protomcp_sdk import Context, ToolError, tool


class Priority(StrEnum):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"


@dataclass
class Note:
    id: int
    title: str
    body: str
    priority: Priority
    tags: list[str]
    created: datetime = field(default_factory=lambda: datetime.now(UTC))
    done: bool = False


NoteId = Annotated[int, Field(description="The note's id, as returned by add_note or list_notes", ge=1)]

_notes: dict[int, Note] = {}
_ids = itertools.count(1)


def _find(note_id: int) -> Note:
    note = _notes.get(note_id)
    if note is None:
        raise ToolError(
            f"There is no note with id {note_id}.",
            code="not_found",
            suggestion="Call list_notes with status='all' to see the ids that exist.",
        )
    return note


@tool
def add_note(
    title: Annotated[str, Field(description="A short title", min_length=1, max_length=120)],
    body: Annotated[str, Field(description="The note itself (Markdown is fine)")] = "",
    priority: Priority = Priority.NORMAL,
    tags: Annotated[list[str] | None, Field(description="Labels to filter on later")] = None,
) -> Note:
    """Create a note and return it, with its new id."""
    note = Note(next(_ids), title, body, priority, sorted(set(tags or [])))
    _notes[note.id] = note
    return note


@tool(read_only=True)
def list_notes(
    tag: Annotated[str | None, Field(description="Only notes carrying this tag")] = None,
    status: Literal["open", "done", "all"] = "open",
) -> list[Note]:
    """List notes, highest priority first."""
    order = list(Priority)
    found = [
        n
        for n in _notes.values()
        if (tag is None or tag in n.tags) and (status == "all" or n.done == (status == "done"))
    ]
    return sorted(found, key=lambda n: (-order.index(n.priority), n.id))


@tool(read_only=True)
def get_note(note_id: NoteId) -> Note:
    """Read one note."""
    return _find(note_id)


@tool(idempotent=True)
def complete_note(note_id: NoteId) -> Note:
    """Mark a note as done."""
    note = _find(note_id)
    note.done = True
    return note


@tool(destructive=True, idempotent=True)
def delete_note(note_id: NoteId) -> str:
    """Delete a note for good."""
    note = _find(note_id)
    del _notes[note.id]
    return f"Deleted note {note.id} ({note.title!r})."


@tool(title="Search notes", read_only=True)
async def search_notes(
    query: Annotated[str, Field(description="Text to look for in titles and bodies", min_length=1)],
    ctx: Context,
) -> list[Note]:
    """Search every note for a piece of text (case-insensitive), reporting progress."""
    notes = list(_notes.values())
    hits = []
    for done, note in enumerate(notes, start=1):
        if ctx.cancelled:
            break
        if query.casefold() in f"{note.title}\n{note.body}".casefold():
            hits.append(note)
        await ctx.report_progress(done, len(notes), f"searched {done} of {len(notes)} notes")
        await asyncio.sleep(0)  # a real search would await I/O here
    await ctx.info(f"{len(hits)} of {len(notes)} notes match {query!r}")
    return hits
