"""Which tools one client session sees: the tool-list control state (sans-IO).

Three modes:
- default: every tool except hidden ones (``@tool(hidden=True)``) and disabled ones;
  ``enable`` shows a tool (hidden or not), ``disable`` hides it.
- allowlist (``set_allowed``): exactly the listed tools; ``enable`` adds to the list,
  ``disable`` removes from it.
- blocklist (``set_blocked``): every tool except the listed ones (and hidden ones not
  enabled); ``enable`` unlists and shows, ``disable`` lists.

The state belongs to a session and outlives reloads: ``prune`` drops names that no
longer exist, and a hidden tool that is new starts hidden. It holds only names of tools that
exist: a change names its tools among ``known`` (the catalog) and the others are ignored, so
a client cannot grow it with made-up names, and a tool that appears later (a reload) starts
as any new tool does — shown unless hidden in default and blocklist mode, absent from an
allowlist.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from typing import Literal

from protomcp_host.protocol.catalog import Tool

Mode = Literal["default", "allow", "block"]


@dataclass(slots=True)
class ToolVisibility:
    mode: Mode = "default"
    listed: set[str] = field(default_factory=set)  # the allowlist or blocklist
    enabled: set[str] = field(default_factory=set)  # shown although hidden
    disabled: set[str] = field(default_factory=set)  # not shown in default mode

    @property
    def is_default(self) -> bool:
        return self.mode == "default" and not self.enabled and not self.disabled

    def visible(self, tool: Tool) -> bool:
        name = tool.name
        if self.mode == "allow":
            return name in self.listed
        if name in self.disabled or (self.mode == "block" and name in self.listed):
            return False
        return not tool.hidden or name in self.enabled

    def update(
        self,
        known: Container[str],
        *,
        enable: Iterable[str] = (),
        disable: Iterable[str] = (),
        allow: Iterable[str] | None = None,
        block: Iterable[str] | None = None,
    ) -> None:
        """Apply one batch: a new allowlist or blocklist first, then enables, then disables.
        Names not in `known` are left out."""
        if allow is not None:
            self.mode, self.listed = "allow", {name for name in allow if name in known}
        if block is not None:
            self.mode, self.listed = "block", {name for name in block if name in known}
        enable = [name for name in enable if name in known]
        disable = [name for name in disable if name in known]
        for name in enable:
            self.disabled.discard(name)
            self.enabled.add(name)
            if self.mode == "allow":
                self.listed.add(name)
            elif self.mode == "block":
                self.listed.discard(name)
        for name in disable:
            self.enabled.discard(name)
            if self.mode == "allow":
                self.listed.discard(name)
            elif self.mode == "block":
                self.listed.add(name)
            else:
                self.disabled.add(name)

    def prune(self, names: set[str]) -> None:
        """Forget tools that no longer exist (after a reload)."""
        self.listed &= names
        self.enabled &= names
        self.disabled &= names
