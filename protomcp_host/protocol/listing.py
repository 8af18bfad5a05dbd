"""One merged, paged list of named entries, each owned by a tool file (sans-IO).

Tools, resources, resource templates and prompts are all kept this way: every tool process
("owner") replaces its own entries as a unit, a name another owner already has is a clash
that names both files, the order is stable across replacements (paging clients see the same
order), and a replacement says whether the owner's entries really changed. Pages are JSON
bytes, cut by an opaque cursor, cached until the entries change.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, Generic, Protocol, TypeVar

import orjson


class NameClash(ValueError):
    """Two tool files offer an entry with the same name (or one file offers it twice)."""


class InvalidCursor(ValueError):
    """A cursor this server did not hand out (answered with -32602)."""


class Owned(Protocol):
    """An entry of a listing: its name, the tool file that owns it and its MCP object."""

    @property
    def key(self) -> str: ...

    @property
    def owner(self) -> str: ...

    @property
    def mcp(self) -> dict[str, Any]: ...


E = TypeVar("E", bound=Owned)


class Listing(Generic[E]):
    def __init__(self, kind: str, page_size: int) -> None:
        if page_size < 1:
            raise ValueError("page size must be at least 1")
        self.kind = kind  # "tool name", "resource", ...: for clash messages
        self.page_size = page_size
        self.entries: dict[str, E] = {}  # in listing order
        self._ordered: list[E] | None = None
        self._pages: dict[Hashable, bytes] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    def get(self, key: str) -> E | None:
        return self.entries.get(key)

    def ordered(self) -> list[E]:
        """Every entry, in listing order (the same list until the entries change)."""
        if self._ordered is None:
            self._ordered = list(self.entries.values())
        return self._ordered

    def of(self, owner: str) -> list[E]:
        return [entry for entry in self.entries.values() if entry.owner == owner]

    def check(self, owner: str, entries: Iterable[E], owner_label: str | None = None) -> None:
        """Raise NameClash if `owner` may not have these entries (changes nothing)."""
        label = owner_label or owner
        seen: set[str] = set()
        for entry in entries:
            other = self.entries.get(entry.key)
            if other is not None and other.owner != owner:
                raise NameClash(
                    f"{self.kind} clash: '{entry.key}' is defined in both {other.owner} and {label}"
                )
            if entry.key in seen:
                raise NameClash(f"{self.kind} clash: '{entry.key}' is defined twice in {label}")
            seen.add(entry.key)

    def replace(
        self, owner: str, entries: Iterable[E], owner_label: str | None = None, *, check: bool = True
    ) -> bool:
        """Swap in `owner`'s entries; True when they changed (names or MCP objects).

        Checks first (NameClash, nothing changed) unless the caller already did (`check=False`:
        a name of another owner is then taken over)."""
        new = list(entries)
        if check:
            self.check(owner, new, owner_label)
        incoming = {entry.key: entry for entry in new}
        before = {key: e.mcp for key, e in self.entries.items() if e.owner == owner}
        # Keep every surviving entry where it was, so paging clients see a stable order.
        merged = {
            key: incoming.get(key, e)
            for key, e in self.entries.items()
            if e.owner != owner or key in incoming
        }
        for key, entry in incoming.items():
            merged.setdefault(key, entry)
        self.entries = merged
        self._ordered = None
        self._pages.clear()
        return before != {key: e.mcp for key, e in incoming.items()}

    def page(
        self,
        cursor: str | None,
        result_key: str,
        render: Callable[[E], Any],
        *,
        items: Sequence[E] | None = None,
        cache: Hashable = None,
    ) -> bytes:
        """The JSON result of one page: ``{result_key: [render(entry)...], "nextCursor"?}``.

        `items` is what is paged (default: every entry, in order). With a `cache` key the page
        is kept until the entries change (for `items` that depend only on the entries)."""
        if items is None:
            items = self.ordered()
        start = decode_cursor(cursor, len(items)) if cursor is not None else 0
        if cache is not None:
            cached = self._pages.get((cache, start))
            if cached is not None:
                return cached
        end = start + self.page_size
        result: dict[str, Any] = {result_key: [render(entry) for entry in items[start:end]]}
        if end < len(items):
            result["nextCursor"] = encode_cursor(end)
        data = orjson.dumps(result)
        if cache is not None:
            self._pages[(cache, start)] = data
        return data


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode()


def decode_cursor(cursor: Any, size: int) -> int:
    """The offset a cursor stands for; InvalidCursor if it is not one of ours or is past `size`."""
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        prefix, _, number = text.partition(":")
        offset = int(number)
    except (AttributeError, ValueError, binascii.Error, UnicodeError):
        raise InvalidCursor(f"Invalid cursor: {cursor!r}") from None
    if prefix != "offset" or not 0 <= offset <= size:
        raise InvalidCursor(f"Invalid cursor: {cursor!r}")
    return offset
