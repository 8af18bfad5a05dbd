"""`--processes N`: a pool of tool processes per file, through the real host with the official
client: least-busy dispatch (every request answered exactly once), one tool list, middleware
once per call, a crash restarts one member, a reload replaces all of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from protomcp_host.processes.pool import Pool, busy
from protomcp_host.processes.settings import ProcessSettings
from tests.support.hosts import TOOLS, mcp_session

CPU = TOOLS / "scale" / "cpu.py"
MIDDLEWARE = TOOLS / "middleware"


async def _pids(session: Any, calls: int) -> set[int]:
    """The tool processes that answered `calls` concurrent whoami-like burns."""
    seen: list[dict[str, Any]] = []

    async def one(i: int) -> None:
        result = await session.call_tool("burn", {"n": 50_000, "tag": str(i)})
        assert not result.is_error, result
        seen.append(result.structured_content)

    async with anyio.create_task_group() as tg:
        for i in range(calls):
            tg.start_soon(one, i)
    assert sorted(int(r["tag"]) for r in seen) == list(range(calls))  # each answered exactly once
    return {r["pid"] for r in seen}


async def test_calls_spread_over_the_pool_and_each_is_answered_once() -> None:
    with anyio.fail_after(60):
        async with mcp_session("run", str(CPU), "--processes", "4") as session:
            names = [tool.name for tool in (await session.list_tools()).tools]
            assert sorted(names) == sorted(set(names)) and "burn" in names  # one list, not four
            pids = await _pids(session, 40)
            assert len(pids) == 4  # concurrent calls found idle members


async def test_a_crash_restarts_one_member_while_the_others_serve() -> None:
    with anyio.fail_after(60):
        async with mcp_session("run", str(CPU), "--processes", "3") as session:
            before = await _pids(session, 12)
            assert len(before) == 3
            crashed = await session.call_tool("crash", {})
            assert crashed.is_error and "exit" in crashed.content[0].text.lower()
            # the two others answer at once; the crashed one comes back with a new pid
            after: set[int] = set()
            while len(after) < 3:
                after = await _pids(session, 9)
            assert len(after & before) == 2


async def test_middleware_runs_once_per_call_with_every_file_pooled() -> None:
    with anyio.fail_after(60):
        async with mcp_session(
            "run", str(MIDDLEWARE / "tools.py"), str(MIDDLEWARE / "mw.py"), "--processes", "3"
        ) as session:
            results = []

            async def shout(i: int) -> None:
                results.append((await session.call_tool("shout", {"text": f"hi{i}"})).content[0].text)

            async with anyio.create_task_group() as tg:
                for i in range(9):
                    tg.start_soon(shout, i)
            assert sorted(results) == sorted(f"HI{i}[inner][outer]" for i in range(9))


class _Member:
    """A stand-in Supervisor for the dispatch unit tests."""

    def __init__(self, load: int | None) -> None:
        self.load = load
        self.current: Any = None  # (a Supervisor's serving process; these serve through `load`)
        self.load_error: str | None = None  # never failed to load
        self.started: list[Any] = []
        self.ready = anyio.Event()

    def start(self, envelope: Any, leg: Any) -> None:
        self.started.append(leg)

    async def wait_ready(self) -> None:
        await self.ready.wait()


class _Leg:
    live = True

    def __init__(self) -> None:
        self.failures: list[str] = []

    def failed(self, reason: str) -> None:
        self.failures.append(reason)


def test_pick_prefers_the_least_busy_serving_member(monkeypatch: pytest.MonkeyPatch) -> None:
    pool = Pool.__new__(Pool)
    members = [_Member(2), _Member(None), _Member(1), _Member(1)]
    pool.members = members  # type: ignore[assignment]
    pool._next = 0
    monkeypatch.setattr("protomcp_host.processes.pool.busy", lambda m: m.load)
    assert pool.pick() is members[2]  # 1 is the least; the dead one (None) is never picked
    assert pool.pick() is members[2]
    assert pool.pick() is members[2]
    assert pool.pick() is members[3]  # a tie goes to the first found: the search start rotates
    for member in members:
        member.load = None
    assert pool.pick() is None  # none serving: a call waits for the first one back
    assert busy.__name__ == "busy"


async def test_a_reload_replaces_every_member(tmp_path: Path) -> None:
    from tests.e2e.test_e2e_dev import write_atomic

    source = CPU.read_text()
    file = tmp_path / "cpu.py"
    file.write_text(source)
    with anyio.fail_after(90):
        async with mcp_session("dev", str(file), "--processes", "2") as session:
            before: set[int] = set()
            while len(before) < 2:
                before |= await _pids(session, 8)
            write_atomic(file, source + '\n\n@tool\ndef added() -> str:\n    return "new"\n')
            while "added" not in {tool.name for tool in (await session.list_tools()).tools}:
                await anyio.sleep(0.05)  # (the reload is seen through the list the client reads)
            after: set[int] = set()
            while len(after - before) < 2:  # both members were replaced, blue/green
                after |= await _pids(session, 8)
            assert (await session.call_tool("added", {})).content[0].text == "new"


POOLED = """
import os
from protomcp_sdk import tool

@tool
def version() -> dict[str, object]:
    return {"version": VERSION, "pid": os.getpid()}
"""


async def test_a_reload_the_host_rejects_leaves_every_member_on_the_served_version(tmp_path: Path) -> None:
    """A save that clashes with another file is rejected: no member switches to it (the host
    says the previous version keeps serving, and it does, on every member)."""
    from tests.e2e.test_e2e_dev import Watcher, write_atomic

    pooled, other = tmp_path / "pooled.py", tmp_path / "other.py"
    write_atomic(pooled, "VERSION = 1\n" + POOLED)
    write_atomic(other, "from protomcp_sdk import tool\n@tool\ndef taken() -> str:\n    return 'other'\n")
    watcher = Watcher()
    with anyio.fail_after(90):
        async with mcp_session(
            "dev", str(pooled), str(other), "--processes", "3", logging_callback=watcher.on_log
        ) as session:

            async def versions(calls: int) -> set[tuple[int, int]]:
                seen: set[tuple[int, int]] = set()

                async def one() -> None:
                    out = (await session.call_tool("version", {})).structured_content
                    seen.add((out["version"], out["pid"]))

                async with anyio.create_task_group() as tg:
                    for _ in range(calls):
                        tg.start_soon(one)
                return seen

            before: set[tuple[int, int]] = set()
            while len(before) < 3:  # every member answered
                before |= await versions(12)
            clash = "@tool\ndef taken() -> str:\n    return 'clash'\n"
            write_atomic(pooled, "VERSION = 2\n" + POOLED + clash)
            await watcher.wait_log(lambda p: "keeps serving" in str(p.data), timeout=30)
            after = await versions(30)
            assert {version for version, _ in after} == {1}, after
            assert {pid for _, pid in after} <= {pid for _, pid in before}
            write_atomic(pooled, "VERSION = 3\n" + POOLED)  # a good save: the whole pool follows
            fresh: set[tuple[int, int]] = set()
            while len({pid for version, pid in fresh if version == 3}) < 3:
                fresh = {entry for entry in fresh | await versions(12) if entry[0] == 3}
            assert {version for version, _ in await versions(12)} == {3}


async def test_a_call_while_no_member_serves_goes_to_the_first_one_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every member restarting: a call waits for whichever member serves first (not member 0)."""
    members = [_Member(None), _Member(None), _Member(None)]
    pool = Pool.__new__(Pool)
    pool.members, pool._next, pool.label = members, 0, "t.py"  # type: ignore[assignment]
    pool.settings, pool._stopping = ProcessSettings(restart_wait=30.0), False
    monkeypatch.setattr("protomcp_host.processes.pool.busy", lambda m: m.load)
    leg = _Leg()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            pool._tg = tg
            pool.start(None, leg)  # type: ignore[arg-type]
            await anyio.sleep(0)
            assert not any(member.started for member in members)  # it waits
            members[2].load = 0
            members[2].ready.set()
    assert members[2].started == [leg] and not members[0].started and not leg.failures
