"""@lifespan end to end (issue 21, item 11), with the official client: it starts before the
process serves, its value is ctx.state, it ends after the calls drain, also across reloads."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from protomcp_sdk.authoring.lifespan import lifespan_spec
from protomcp_sdk.authoring.registry import DuplicateToolError, Registry
from protomcp_sdk.testing import RecordingContext
from tests.e2e.test_e2e_dev import Watcher, write_atomic
from tests.support.hosts import HOST, TOOLS, mcp_session

pytestmark = pytest.mark.anyio

POOLED = (TOOLS / "lifespan" / "pooled.py").read_text()


def events(log: Path) -> list[tuple[str, int, int]]:
    """(event, version, pid) in the order they happened."""
    rows = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
    return [(row[0], int(row[1]), int(row[2])) for row in rows]


async def wait_for_event(log: Path, event: str, version: int, timeout: float = 15) -> None:
    """The tool process writes the log; wait (bounded) for one line to appear in it."""
    with anyio.fail_after(timeout):
        while not any(e[:2] == (event, version) for e in events(log)):
            await anyio.sleep(0.02)


def text_of(result: object) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)  # type: ignore[attr-defined]


@pytest.fixture
def pooled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    file = tmp_path / "pooled.py"
    file.write_text(POOLED)
    log = tmp_path / "lifespan.log"
    monkeypatch.setenv("LIFESPAN_LOG", str(log))
    monkeypatch.delenv("LIFESPAN_FAIL", raising=False)
    return file, log


async def test_state_reaches_tools_and_the_end_runs_at_exit(pooled: tuple[Path, Path]) -> None:
    file, log = pooled
    async with mcp_session("run", str(file)) as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["state", "slow"]
        assert [e[0] for e in events(log)] == ["start"]  # before the process served
        result = await session.call_tool("state", {})
        assert result.structured_content["pool"] == "pool-1"
        assert result.structured_content["pid"] == events(log)[0][2]  # ran in the tool process
    await wait_for_event(log, "stop", 1)
    assert [e[0] for e in events(log)] == ["start", "stop"]


async def test_reload_starts_the_new_lifespan_first_and_ends_the_old_after_its_calls(
    pooled: tuple[Path, Path], tmp_path: Path
) -> None:
    file, log = pooled
    flag = tmp_path / "release"
    watcher = Watcher()
    async with mcp_session("dev", str(file), message_handler=watcher.on_message) as session:
        answers: list[str] = []

        async def slow_call() -> None:
            answers.append(text_of(await session.call_tool("slow", {"flag": str(flag)})))

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow_call)
            await wait_for_event(log, "slow-begin", 1)
            write_atomic(
                file,
                POOLED.replace("VERSION = 1", "VERSION = 2") + "\n@tool\ndef extra() -> int:\n    return 2\n",
            )
            await watcher.tools_after_change(session, lambda tools: "extra" in tools)
            now = await session.call_tool("state", {})
            assert now.structured_content["pool"] == "pool-2"  # the new process serves, its own state
            assert ("stop", 1) not in [e[:2] for e in events(log)]  # the old call still runs
            flag.touch()
        assert answers == ["pool-1"]  # the old call kept its pool to the end
        await wait_for_event(log, "stop", 1)
        order = [e[:2] for e in events(log)]
        assert order.index(("start", 2)) < order.index(("slow-end", 1)) < order.index(("stop", 1))


async def test_a_lifespan_that_fails_on_reload_keeps_the_old_tools(pooled: tuple[Path, Path]) -> None:
    file, _ = pooled
    watcher = Watcher()
    broken = POOLED.replace('if os.environ.get("LIFESPAN_FAIL") == "1":', "if True:")
    async with mcp_session(
        "dev", str(file), message_handler=watcher.on_message, logging_callback=watcher.on_log
    ) as session:
        assert (await session.call_tool("state", {})).structured_content["pool"] == "pool-1"  # loaded
        write_atomic(file, broken.replace("VERSION = 1", "VERSION = 2"))
        error = await watcher.wait_log(lambda p: p.level == "error")
        assert "failed to start" in str(error.data) and "database unreachable" in str(error.data)
        result = await session.call_tool("state", {})
        assert result.structured_content["pool"] == "pool-1"  # the old process and lifespan serve on


def test_a_lifespan_that_fails_at_start_is_a_load_error(pooled: tuple[Path, Path]) -> None:
    file, _ = pooled
    env = {**os.environ, "LIFESPAN_FAIL": "1"}
    done = subprocess.run([*HOST, "list", str(file)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode != 0
    assert (
        "@lifespan 'pool' failed to start" in done.stderr
        and "ConnectionError: database unreachable" in done.stderr
    )
    assert "protomcp_sdk" not in done.stderr.split("failed to start", 1)[1]  # the user's frames only


HANGS = """from protomcp_sdk import lifespan, tool
import asyncio

@lifespan
async def stuck():
    yield {"n": 1}
    await asyncio.sleep(3600)

@tool
def n() -> int:
    return 1
"""


def test_the_end_of_a_lifespan_is_bounded(tmp_path: Path) -> None:
    file = tmp_path / "hangs.py"
    file.write_text(HANGS)
    env = {**os.environ, "PROTOMCP_LIFESPAN_STOP_TIMEOUT": "0.2"}
    done = subprocess.run(
        [*HOST, "call", str(file), "n"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "@lifespan 'stuck' did not finish within 0.2s" in done.stderr


SLOW_END = """import asyncio, os
from protomcp_sdk import lifespan, tool

@lifespan
async def slow_end():
    yield {}
    await asyncio.sleep(0.3)  # longer than a client's SIGINT-to-SIGTERM gap
    open(os.environ["LIFESPAN_DONE"], "w").write("done")

@tool
def n() -> int:
    return 1
"""


def test_a_sigterm_after_sigint_lets_the_lifespan_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code stops a server with SIGINT, SIGTERM 100 ms later, then SIGKILL: the SIGTERM
    must not cut the stop short, or the @lifespan teardown never runs."""
    import signal
    import time

    from tests.support.hosts import RawHost

    file, done = tmp_path / "slow_end.py", tmp_path / "done"
    file.write_text(SLOW_END)
    monkeypatch.setenv("LIFESPAN_DONE", str(done))
    host = RawHost("run", str(file))
    try:
        era = "io.modelcontextprotocol/"
        modern = {era + "protocolVersion": "2026-07-28", era + "clientCapabilities": {}}
        host.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern}})
        assert "result" in host.recv()  # serving
        host.proc.send_signal(signal.SIGINT)
        time.sleep(0.1)  # (the client's gap, not a wait for an event)
        host.proc.send_signal(signal.SIGTERM)
        assert host.proc.wait(30) == 0
        assert done.read_text() == "done"
    finally:
        host.close()


def test_lifespan_misuse_is_explained() -> None:
    def plain():
        return 1

    async def coroutine():
        return 1

    for fn in (plain, coroutine):
        with pytest.raises(TypeError, match="must be an async generator"):
            lifespan_spec(fn)  # type: ignore[arg-type]

    async def one():
        yield 1

    async def two():
        yield 2

    registry = Registry()
    registry.set_lifespan(lifespan_spec(one))
    with pytest.raises(DuplicateToolError, match="two @lifespan functions"):
        registry.set_lifespan(lifespan_spec(two))


def test_recording_context_takes_a_state() -> None:
    assert RecordingContext(state={"pool": "fake"}).state == {"pool": "fake"}
