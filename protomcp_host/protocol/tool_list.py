"""The tools one session sees, and the list_changed notifications a change to them calls for.

Kept apart from the session's JSON-RPC rules: it is the one piece of session state a
tool-list change (enable / disable, a reload) touches, and it decides when one
notifications/tools/list_changed is due however many changes came in between.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from protomcp_host.protocol.catalog import Catalog, Tool
from protomcp_host.protocol.records import Event
from protomcp_host.protocol.scopes import allowed, restricts
from protomcp_host.protocol.visibility import ToolVisibility
from protomcp_sdk.wire.toollist import ToolListChange


class ToolsListed(Protocol):
    """What a session's tools/list shows when not every tool is listed (--discovery search)."""

    def listed(self, session: Any) -> dict[str, dict[str, Any]]: ...


class ListingEra(Protocol):
    """Whether and how the session's era tells a client its tool list changed (session.Era)."""

    def hears_list_changes(self, session: Any) -> bool: ...
    def list_changed(self, session: Any) -> list[Event]: ...


class ListingSession(Protocol):
    """What the tool list reads of its session (session.Session)."""

    catalog: Catalog
    visibility: ToolVisibility
    discovery: ToolsListed | None
    auth: Any  # the caller's verified claims (None without OAuth)

    @property
    def era(self) -> ListingEra: ...


class SessionToolList:
    """A session's visible tools and its pending list_changed (`session.tool_list`). It holds
    a weak reference to the session, so that a session made per request is still freed by
    reference counting."""

    __slots__ = ("seen", "session")

    def __init__(self, session: ListingSession) -> None:
        self.session = session
        # What tools/list showed at the last flush, while a tool-list change is pending.
        self.seen: dict[str, dict[str, Any]] | None = None

    def shows(self, tool: Tool) -> bool:
        """Whether this session's client sees (and may call) `tool`: tool-list control, and the
        scopes the caller's token grants (scopes.py)."""
        return self.session.visibility.visible(tool) and allowed(tool, self.session.auth)

    def shown(self) -> Callable[[Tool], bool] | None:
        session = self.session
        if session.visibility.is_default and not restricts(session.catalog.visible(), session.auth):
            return None  # (the default listing: its pages are cached)
        return self.shows

    @property
    def own(self) -> bool:
        """Whether this caller's tools/list is its own (shaped by tool-list control or scopes)."""
        return self.shown() is not None

    def active(self) -> list[str]:
        return [tool.name for tool in self.session.catalog.visible(self.shown())]

    def visible(self) -> dict[str, dict[str, Any]]:
        """What this session's tools/list shows (compare before and after a change)."""
        session = self.session
        if session.discovery is not None:
            return session.discovery.listed(session)
        return {tool.name: tool.mcp for tool in session.catalog.visible(self.shown())}

    def update(self, change: ToolListChange) -> None:
        """Apply a tool-list change (names the catalog does not have are ignored). The
        list_changed notification it may call for comes from flush()."""
        if self.seen is None:
            self.seen = self.visible()
        self.session.visibility.update(self.session.catalog, change)

    def catalog_changed(self, before: dict[str, dict[str, Any]]) -> list[Event]:
        """The catalog changed (a reload; `before` is this session's visible() from just
        before): forget vanished names, and flush — a list_changed if the list changed."""
        self.session.visibility.prune(set(self.session.catalog.names()))
        if self.seen is None:
            self.seen = before
        return self.flush()

    @property
    def pending(self) -> bool:
        """The tool list may have changed since the last flush()."""
        return self.seen is not None

    def flush(self) -> list[Event]:
        """The notifications/tools/list_changed due since the last flush: one if this session's
        visible tool list differs from what it was then, none otherwise (however many
        changes came in between). The driver calls this once per batch of events."""
        seen = self.seen
        if seen is None:
            return []
        self.seen = None
        session = self.session
        if not session.era.hears_list_changes(session) or self.visible() == seen:
            return []
        return session.era.list_changed(session)
