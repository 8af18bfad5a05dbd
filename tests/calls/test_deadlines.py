"""calls.deadlines: call timeouts on a shared tick."""

from __future__ import annotations

import asyncio

import pytest

from protomcp_host.calls.deadlines import Deadlines

pytestmark = pytest.mark.fast  # starts no process


def test_a_deadline_fires_once_never_early_and_a_removed_one_never() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        deadlines = Deadlines(tick=0.02)
        fired: list[tuple[str, float]] = []
        start = loop.time()
        done = asyncio.Event()

        def fire(name: str) -> None:
            fired.append((name, loop.time() - start))
            if name == "c":
                done.set()

        deadlines.add("a", 0.05, lambda: fire("a"))
        tick_b = deadlines.add("b", 0.05, lambda: fire("b"))
        deadlines.add("c", 0.12, lambda: fire("c"))
        deadlines.remove("b", tick_b)
        await asyncio.wait_for(done.wait(), 5)
        assert [name for name, _ in fired] == ["a", "c"]
        assert fired[0][1] >= 0.05 and fired[1][1] >= 0.12

    asyncio.run(main())


def test_calls_on_one_tick_share_one_timer_and_empty_old_ticks_are_cancelled() -> None:
    async def main() -> None:
        deadlines = Deadlines(tick=10.0)
        ticks = [deadlines.add(i, 30.0, lambda: None) for i in range(100)]
        assert len(set(ticks)) <= 2 and len(deadlines._handles) <= 2
        later = deadlines.add("later", 60.0, lambda: None)
        for i, tick in enumerate(ticks):
            deadlines.remove(i, tick)
        assert set(deadlines._handles) == {later}  # the emptied older tick let go of its timer
        deadlines.remove("later", later)
        assert set(deadlines._handles) == {later}  # the newest stays (calls keep arriving there)

    asyncio.run(main())
