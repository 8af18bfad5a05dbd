"""Each modern-era principal's tool-list state (`ctx.enable_tools`, ...) shared by every host of one
store (`--store redis://...`, and so by the workers of `--workers N`).

The host where a call changes a principal's tool list publishes the principal's whole state on
the store's bus and writes it as a record (`tools:PRINCIPAL`); every other host replaces its copy,
and a host that starts (a replaced worker) loads the records. Each state carries a Lamport stamp
(counter, host id) and a host keeps only a newer one, so when two hosts change one principal's
list at once every host ends with the same winner. Another host learns of a change within
milliseconds: a request it serves in that instant still sees the list from before. After a break
of the store (RECONNECTED) a host publishes and writes again the states it made (what it could
not write meanwhile included) and re-reads the records.
"""

from __future__ import annotations

import os
import socket
from collections import deque
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import orjson

from protomcp_host.protocol.visibility import ToolVisibility
from protomcp_host.store.base import RECONNECTED, Store, StoreError

TOOLS = "tools"  # bus topic
RECORD_PREFIX = "tools:"
RECORD_TTL = 7 * 86400.0  # seconds a principal's state is kept in the store after its last change

Stamp = tuple[int, str]


class SharedToolLists:
    def __init__(
        self,
        store: Store,
        state_of: Callable[[str], ToolVisibility],
        replace: Callable[[str, Callable[[], None]], None],
        report: Callable[[str], None],
        host_id: str | None = None,
    ) -> None:
        self.store = store
        self.state_of = state_of  # principal -> its ToolVisibility here (made when new)
        self.replace = replace  # (principal, apply): apply a state from elsewhere, telling listeners
        self.report = report
        self.host_id = host_id or f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"
        self.clock = 0
        self.stamps: dict[str, Stamp] = {}  # principal -> the stamp of the state held here
        self._writes: deque[tuple[str, bytes]] = deque()
        self._own: dict[str, bytes] = {}  # principal -> the latest state this host made
        self._reconnected = False
        self._unsaved = False  # a write failed since the store last came back (reported once)
        self._wake = anyio.Event()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Load the states in the store, then write records as changes come (one writer: in order)."""
        await self._load()
        task_status.started()
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            if self._reconnected:
                self._reconnected = False
                await self._catch_up()
            while self._writes:
                principal, payload = self._writes.popleft()
                try:
                    await self.store.put(RECORD_PREFIX + principal, payload, RECORD_TTL)
                except StoreError as exc:  # kept in _own: written again once the store is back
                    if not self._unsaved:
                        self.report(f"protomcp: a tool-list change was not stored (kept until it is): {exc}")
                    self._unsaved = True

    async def _load(self) -> None:
        for _, payload in await self.store.scan(RECORD_PREFIX):
            self._receive(payload)

    async def _catch_up(self) -> None:
        """The store is back: what was published or written meanwhile may be lost, here or there."""
        self._unsaved = False
        for principal, payload in self._own.items():
            if self.stamps.get(principal, (0, ""))[1] == self.host_id:  # (still the newest known)
                self.store.publish(TOOLS, payload)
                self._writes.append((principal, payload))
        try:
            await self._load()
        except StoreError:
            self._reconnected = True  # (the next break's end tries again)

    def changed(self, principal: str) -> None:
        """A call here changed `principal`'s tool list: tell the other hosts."""
        self.clock += 1
        stamp = self.stamps[principal] = (self.clock, self.host_id)
        state = self.state_of(principal)
        payload = orjson.dumps(
            {
                "p": principal,
                "c": stamp[0],
                "h": stamp[1],
                "mode": state.mode,
                "listed": sorted(state.listed),
                "enabled": sorted(state.enabled),
                "disabled": sorted(state.disabled),
            }
        )
        self._own[principal] = payload
        self.store.publish(TOOLS, payload)
        self._writes.append((principal, payload))
        self._wake.set()

    def on_bus(self, topic: str, payload: bytes) -> None:
        if topic == TOOLS:
            self._receive(payload)
        elif topic == RECONNECTED:
            self._reconnected = True
            self._wake.set()

    def _receive(self, payload: bytes) -> None:
        try:
            message: dict[str, Any] = orjson.loads(payload)
            principal, stamp = message["p"], (int(message["c"]), str(message["h"]))
            mode, listed = message["mode"], set(message["listed"])
            enabled, disabled = set(message["enabled"]), set(message["disabled"])
            if mode not in ("default", "allow", "block"):
                raise ValueError(mode)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            self.report("protomcp: a malformed tool-list state on the store's bus was ignored")
            return
        self.clock = max(self.clock, stamp[0])
        if stamp <= self.stamps.get(principal, (0, "")):
            return  # this host's own (echoed), or older than the state held here
        self.stamps[principal] = stamp

        def apply() -> None:
            state = self.state_of(principal)
            state.mode, state.listed, state.enabled, state.disabled = mode, listed, enabled, disabled

        self.replace(principal, apply)
