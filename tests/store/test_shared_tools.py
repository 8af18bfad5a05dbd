"""shared.tool_lists.SharedToolLists without processes: two "hosts" on one in-memory store (its bus
delivers to every subscriber at once), each with its own principals' tool-list states."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import orjson
import pytest

from protomcp_host.protocol.visibility import ToolVisibility
from protomcp_host.shared.tool_lists import RECORD_PREFIX, TOOLS, SharedToolLists
from protomcp_host.store.memory import MemoryStore
from protomcp_sdk.wire.toollist import ToolListChange

pytestmark = pytest.mark.fast  # starts no process

KNOWN = {"secret", "admin", "echo"}


class FakeHost:
    """A host's principals and what SharedToolLists tells it."""

    def __init__(self, store: MemoryStore, name: str) -> None:
        self.principals: dict[str, ToolVisibility] = {}
        self.replaced: list[str] = []
        self.reports: list[str] = []
        self.shared = SharedToolLists(store, self.state, self.replace, self.reports.append, host_id=name)
        store.subscribe(self.shared.on_bus)

    def state(self, principal: str) -> ToolVisibility:
        return self.principals.setdefault(principal, ToolVisibility())

    def replace(self, principal: str, apply: Callable[[], None]) -> None:
        self.replaced.append(principal)
        apply()

    def change(self, principal: str, **change: list[str]) -> None:
        """What a call on this host does: change the principal's list here, then share it."""
        self.state(principal).update(KNOWN, ToolListChange.of(**change))
        self.shared.changed(principal)


def test_a_change_on_one_host_is_the_principals_state_on_the_other() -> None:
    store = MemoryStore()
    a, b = FakeHost(store, "a"), FakeHost(store, "b")
    a.change("alice", enable=["secret"])
    assert b.state("alice").enabled == {"secret"} and b.replaced == ["alice"]
    assert a.replaced == []  # its own message is not applied again
    b.change("alice", allow=["echo"])
    assert a.state("alice").mode == "allow" and a.state("alice").listed == {"echo"}
    assert b.state("bob").is_default and a.state("bob").is_default  # another principal's is its own


def test_two_hosts_changing_at_once_end_with_the_same_state() -> None:
    """Each applies its own change first and hears the other's after: the newer stamp wins on
    both (same counter: the host id breaks the tie), so they agree."""
    store = MemoryStore()
    a, b = FakeHost(store, "a"), FakeHost(store, "b")
    held: list[tuple[str, bytes]] = []
    store.publish = lambda topic, payload: held.append((topic, payload))  # type: ignore[method-assign]
    a.change("alice", enable=["secret"])
    b.change("alice", disable=["echo"])
    for topic, payload in held:  # delivered only now, to both
        a.shared.on_bus(topic, payload)
        b.shared.on_bus(topic, payload)
    assert a.state("alice") == b.state("alice") == ToolVisibility(disabled={"echo"})


def test_an_older_state_does_not_replace_a_newer_one() -> None:
    store = MemoryStore()
    a, b = FakeHost(store, "a"), FakeHost(store, "b")
    a.change("alice", enable=["secret"])
    first = orjson.dumps(
        {
            "p": "alice",
            "c": 1,
            "h": "a",
            "mode": "default",
            "listed": [],
            "enabled": ["secret"],
            "disabled": [],
        }
    )
    a.change("alice", disable=["secret"])
    b.shared.on_bus(TOOLS, first)  # a late copy of the first
    assert b.state("alice").disabled == {"secret"} and not b.state("alice").enabled
    b.shared.on_bus(TOOLS, b"{not json")
    b.shared.on_bus(
        TOOLS,
        orjson.dumps(
            {
                "p": "alice",
                "c": 9,
                "h": "x",
                "mode": "everything",
                "listed": [],
                "enabled": [],
                "disabled": [],
            }
        ),
    )
    assert b.state("alice").disabled == {"secret"}
    assert len(b.reports) == 2 and all("malformed" in line for line in b.reports)


async def test_a_host_that_starts_loads_the_stored_states() -> None:
    store = MemoryStore()
    a = FakeHost(store, "a")
    async with anyio.create_task_group() as tg:
        await tg.start(a.shared.run)
        a.change("alice", block=["admin"])
        await anyio.wait_all_tasks_blocked()  # (the writer has stored it)
        assert [key for key, _ in await store.scan(RECORD_PREFIX)] == ["tools:alice"]
        late = FakeHost(store, "late")
        await tg.start(late.shared.run)
        assert late.state("alice") == ToolVisibility(mode="block", listed={"admin"})
        tg.cancel_scope.cancel()


async def test_a_change_the_store_could_not_take_is_written_once_it_is_back() -> None:
    """A write during an outage is reported once and kept; after RECONNECTED it is published and
    written again, so a host that starts later still loads it."""
    from protomcp_host.store.base import RECONNECTED, StoreError

    class Failing(MemoryStore):
        down = True

        async def put(self, key: str, value: bytes, ttl: float, *, final: bool = False) -> bytes | None:
            if self.down:
                raise StoreError("redis is unreachable")
            return await super().put(key, value, ttl, final=final)

    store = Failing()
    a = FakeHost(store, "a")
    async with anyio.create_task_group() as tg:
        await tg.start(a.shared.run)
        a.change("alice", block=["admin"])
        a.change("alice", block=["admin", "echo"])
        await anyio.wait_all_tasks_blocked()
        assert await store.scan(RECORD_PREFIX) == [] and len(a.reports) == 1, a.reports
        store.down = False
        store.publish(RECONNECTED, b"")
        await anyio.wait_all_tasks_blocked()
        late = FakeHost(store, "late")
        await tg.start(late.shared.run)
        assert late.state("alice") == ToolVisibility(mode="block", listed={"admin", "echo"})
        tg.cancel_scope.cancel()
