"""Supervisor, ToolProcess, reloader and output forwarding with real tool processes, in-process."""

from __future__ import annotations

import os
import signal
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from protomcp_host.processes.output import LogLimiter, TokenBucket
from protomcp_host.processes.pool import Pool
from protomcp_host.processes.reloader import SourceFilter, targets, watch_roots
from protomcp_host.processes.settings import ProcessSettings
from protomcp_host.processes.supervisor import Backoff, Supervisor, ToolProcessError
from protomcp_sdk.wire import envelope_pb2 as pb
from tests.support.hosts import RawHost

pytestmark = pytest.mark.anyio


class Events:
    """ProcessEvents that only collect problems."""

    share_output = True

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems

    def loaded(self, label: str, offer: Any) -> None:
        pass

    def output(self, label: str, stream: str, line: str) -> None:
        pass

    def echo(self, label: str, line: str) -> None:
        pass

    def log(self, label: str, level: str, logger: str, data: Any) -> None:
        pass

    def logged(self, label: str, level: str, logger: str, data: Any) -> None:
        pass

    def problem(self, message: str) -> None:
        self.problems.append(message)

    def stale(self, label: str, error: str) -> None:
        pass

    def unloaded(self, label: str, error: str) -> None:
        pass

    def notice(self, label: str, envelope: Any) -> None:
        pass


def make_supervisor(file: Path, problems: list[str], **options: Any) -> Supervisor:
    return Supervisor(file, Events(problems), ProcessSettings(**options))


async def call(supervisor: Supervisor, name: str) -> Any:
    """Dispatch one call and wait for its answer."""
    done = anyio.Event()
    outcome: list[Any] = []

    def finish(value: Any) -> None:
        outcome.append(value)
        done.set()

    class Leg:
        live = True

        def sent(self, channel: Any, request_id: str) -> None:
            pass

        def answered(self, envelope: Any, raw: Any, trusted: bool) -> None:
            finish(envelope.call_result)

        def failed(self, reason: str) -> None:
            finish(reason)

    request = pb.CallToolRequest(name=name, arguments_json="{}")
    supervisor.start(pb.Envelope(call_tool=request), Leg())  # type: ignore[arg-type]
    with anyio.fail_after(10):
        await done.wait()
    return outcome[0]


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def test_handshake_timeout_kills_and_reports(tmp_path: Path) -> None:
    file = tmp_path / "stuck.py"
    file.write_text("import time\ntime.sleep(60)\n")
    supervisor = make_supervisor(file, [], startup_timeout=1)
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            with pytest.raises(ToolProcessError, match="did not finish its handshake within 1s"):
                await tg.start(supervisor.run)
    worker_pids = [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and _runs(p, str(file))]
    assert worker_pids == []


def _runs(proc: Path, needle: str) -> bool:
    try:
        return needle.encode() in (proc / "cmdline").read_bytes()
    except OSError:
        return False


async def test_reload_requests_during_a_reload_coalesce(tmp_path: Path) -> None:
    file = tmp_path / "t.py"
    file.write_text("from protomcp_sdk import tool\n@tool\ndef a() -> str:\n    return 'a'\n")
    supervisor = make_supervisor(file, [], standby=True)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(supervisor.run)
            for _ in range(5):
                supervisor.request_reload()
            # Poll until the supervisor is idle again: reloaded, nothing requested, nothing waking it.
            while supervisor.reloads == 0 or supervisor._reload_requested or supervisor._wake.is_set():
                await anyio.sleep(0.01)
            assert 1 <= supervisor.reloads <= 2
            assert (await call(supervisor, "a")).result_json == '[{"type":"text","text":"a"}]'
            await supervisor.stop(5)


async def test_a_save_while_a_crashed_process_is_replaced_is_not_lost(tmp_path: Path) -> None:
    """The file is saved while the replacement of a crashed process loads it: that load may have
    read the file before the save, so the save still reloads it."""
    file = tmp_path / "t.py"
    source = "import os\nfrom protomcp_sdk import tool\n@tool\ndef v() -> str:\n    return '{}'\n"
    source += "@tool\ndef crash() -> str:\n    os._exit(3)\n"
    file.write_text(source.format("one"))
    supervisor = make_supervisor(file, [])
    replace = supervisor._replace

    async def replace_then_save() -> None:
        await replace()  # the new process loaded version one ...
        if supervisor.reloads == 0 and "two" not in file.read_text():
            file.write_text(source.format("two"))  # ... and the file is saved right then
            supervisor.request_reload()

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(supervisor.run)
            supervisor._replace = replace_then_save  # type: ignore[method-assign]  # (the restart's)
            await call(supervisor, "crash")
            while supervisor.reloads == 0:  # the save reloads the file
                await anyio.sleep(0.02)
            assert "two" in (await call(supervisor, "v")).result_json
            await supervisor.stop(5)


async def test_standbys_prepared_at_once_leave_one_standby(tmp_path: Path) -> None:
    """A save and a crash in quick succession each ask for a standby: one is kept, none idles
    unowned until the host exits (each is a whole Python process)."""
    file = tmp_path / "t.py"
    file.write_text("from protomcp_sdk import tool\n@tool\ndef a() -> str:\n    return 'a'\n")
    supervisor = make_supervisor(file, [], standby=True)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(supervisor.run)
            async with anyio.create_task_group() as asking:
                for _ in range(3):
                    asking.start_soon(supervisor._prepare_standby)
            standbys = [
                p for p in Path("/proc").iterdir() if p.name.isdigit() and _runs(p, f"--standby\0{file}")
            ]
            assert len(standbys) == 1
            await supervisor.stop(5)


GARBAGE = """
    import os
    from protomcp_sdk import tool

    FRAME_FD = int(os.environ["PROTOMCP_FDS"].split(",")[1])

    @tool
    def oversized() -> str:
        os.write(FRAME_FD, b"\\xff\\xff\\xff\\xff")
        return "unreachable"

    @tool
    def undecodable() -> str:
        os.write(FRAME_FD, b"\\x00\\x00\\x00\\x03\\xff\\xff\\xff")
        return "unreachable"

    @tool
    def fine() -> str:
        return "fine"
"""


@pytest.mark.parametrize(
    ("tool", "expected"), [("oversized", "exceeds"), ("undecodable", "not a valid Envelope")]
)
def test_garbage_from_a_tool_process_is_one_readable_error(
    raw_host: Any, tmp_path: Path, tool: str, expected: str
) -> None:
    file = tmp_path / "garbage.py"
    file.write_text(textwrap.dedent(GARBAGE))
    host: RawHost = raw_host("run", str(file))
    host.initialize()
    reply = host.request(1, "tools/call", {"name": tool, "arguments": {}})
    assert reply["result"]["isError"] is True
    text = reply["result"]["content"][0]["text"]
    assert "protocol error from tool process" in text and expected in text
    assert (
        host.request(2, "tools/call", {"name": "fine", "arguments": {}})["result"]["content"][0]["text"]
        == "fine"
    )
    host.close()
    assert any("protocol error from tool process" in line for line in host.stderr)


def test_backoff_grows_caps_and_resets() -> None:
    backoff = Backoff(base=0.1, cap=1.0, stable=30)
    delays = [backoff.next_delay(uptime=0.5) for _ in range(6)]
    assert delays == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert backoff.next_delay(uptime=31) == 0.1


def test_log_messages_are_rate_limited_and_drops_are_reported() -> None:
    now = [0.0]
    logs: list[tuple[str, str, Any]] = []
    limit = LogLimiter("t.py", TokenBucket(2, 3, lambda: now[0]))

    def send(level: str, logger: str, data: Any) -> None:
        if limit.allow(lambda *entry: logs.append(entry)):
            logs.append((level, logger, data))

    for i in range(10):
        send("info", "t.py", f"line {i}")
    assert logs == [
        ("info", "t.py", "line 0"),
        ("info", "t.py", "line 1"),
        ("info", "t.py", "line 2"),
        ("warning", "t.py", "(too many log messages: dropping some for a while)"),
    ]
    now[0] = 1.0  # two more tokens
    send("warning", "t.py", "later")
    assert logs[4:] == [
        ("warning", "t.py", "(7 log messages not forwarded: too many)"),
        ("warning", "t.py", "later"),
    ]


def test_reload_targets(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = tmp_path / "a" / "tools.py", tmp_path / "b" / "tools.py"
    sa, sb = make_supervisor(a, []), make_supervisor(b, [])
    assert targets([a], [sa, sb]) == [sa]
    assert targets([tmp_path / "a" / "helper.py"], [sa, sb]) == [sa]
    assert set(map(id, targets([tmp_path / "elsewhere.py"], [sa, sb]))) == {id(sa), id(sb)}


def test_source_filter_and_roots(tmp_path: Path) -> None:
    from watchfiles import Change

    only_py = SourceFilter()
    assert only_py(Change.modified, str(tmp_path / "x.py"))
    assert not only_py(Change.modified, str(tmp_path / "x.txt"))
    assert not only_py(Change.modified, str(tmp_path / ".venv" / "lib" / "x.py"))
    assert not only_py(Change.modified, str(tmp_path / "node_modules" / "x.py"))
    assert not only_py(Change.modified, str(tmp_path / "__pycache__" / "x.py"))
    with_glob = SourceFilter([str(tmp_path / "data" / "*.json")])
    assert with_glob(Change.modified, str(tmp_path / "data" / "a.json"))
    declared = [tmp_path / "chart.html"]  # what the served resources declare (files=), asked each time
    with_files = SourceFilter([], lambda: declared)
    assert with_files(Change.modified, str(tmp_path / "chart.html"))
    assert not with_files(Change.modified, str(tmp_path / "notes.html"))
    declared.append(tmp_path / "notes.html")  # a reload declared another
    assert with_files(Change.added, str(tmp_path / "notes.html"))
    (tmp_path / "sub").mkdir()
    assert watch_roots([tmp_path / "t.py", tmp_path / "sub" / "u.py"], []) == [tmp_path]


def _idle_standbys(file: Path, serving: set[int]) -> set[int]:
    """This process's `--standby` tool processes of `file` that serve nothing (idle)."""
    me = str(os.getpid())
    found = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) in serving or not _runs(proc, f"--standby\0{file}"):
            continue
        try:
            parent = (proc / "stat").read_text().rsplit(")", 1)[1].split()[1]
        except OSError:
            continue
        if parent == me:
            found.add(int(proc.name))
    return found


def _serving(*supervisors: Supervisor) -> set[int]:
    return {s.current.child.pid for s in supervisors if s.current is not None}


async def test_a_standby_killed_while_it_idles_is_replaced(tmp_path: Path) -> None:
    """A standby that dies before any save needs it (kill -9, the OOM killer) is replaced: the next
    save must not find none and load cold (nor a soak end with no standby at all)."""
    file = tmp_path / "t.py"
    file.write_text("from protomcp_sdk import tool\n@tool\ndef a() -> str:\n    return 'a'\n")
    supervisor = make_supervisor(file, [], standby=True)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(supervisor.run)
            while not (first := _idle_standbys(file, _serving(supervisor))):
                await anyio.sleep(0.02)
            victim = first.pop()
            os.kill(victim, signal.SIGKILL)
            while victim in _idle_standbys(file, _serving(supervisor)):  # (until it is gone)
                await anyio.sleep(0.02)
            while not (_idle_standbys(file, _serving(supervisor)) - {victim}):  # a new one
                await anyio.sleep(0.02)
            assert len(_idle_standbys(file, _serving(supervisor))) == 1
            supervisor.request_reload()  # and it is the one the next save uses
            while supervisor.reloads == 0:
                await anyio.sleep(0.02)
            assert (await call(supervisor, "a")).result_json == '[{"type":"text","text":"a"}]'
            await supervisor.stop(5)


async def test_a_pool_keeps_one_idle_standby_per_file(tmp_path: Path) -> None:
    """dev with --processes N: one warm standby for the file, not one per member (N idle Python
    processes per file per host process piled up under a soak of saves and kills)."""
    file = tmp_path / "t.py"
    file.write_text("from protomcp_sdk import tool\n@tool\ndef a() -> str:\n    return 'a'\n")
    pool = Pool(file, Events([]), 3, ProcessSettings(standby=True))
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            await tg.start(pool.run)
            for round_ in range(1, 3):
                pool.request_reload()
                # settled: every member serves the new version and no standby is still starting
                while pool.reloads < round_ or any(
                    not m.ready or m._standby_starting or (m.settings.standby and m._standby is None)
                    for m in pool.members
                ):
                    await anyio.sleep(0.02)
                last = pool.members[-1]
                killed = _serving(last)
                os.kill(next(iter(killed)), signal.SIGKILL)  # a crash restart keeps the bound too
                while not last.ready or _serving(last) == killed or last._standby_starting:
                    await anyio.sleep(0.02)
                assert len(_idle_standbys(file, _serving(*pool.members))) == 1
            await pool.stop(5)


async def test_a_call_after_the_process_died_waits_for_its_replacement(tmp_path: Path) -> None:
    """kill -9 of a tool process: a call that comes once nothing more is read from it goes to its
    replacement, though the dead one is not reaped yet (its output drains first: here a child it
    forked holds its pipes, for 0.5 s). It used to be sent to the dead one and fail with its death."""
    file = tmp_path / "t.py"
    file.write_text(
        textwrap.dedent(
            """
            import os, time
            from protomcp_sdk import tool

            @tool
            def hold() -> int:
                child = os.fork()
                if child == 0:  # (in the tool's process group: killed with it)
                    time.sleep(30)
                    os._exit(0)
                return child

            @tool
            def a() -> str:
                return "a"
            """
        )
    )
    supervisor = make_supervisor(file, [])
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(supervisor.run)
            await call(supervisor, "hold")
            dead = supervisor.current
            assert dead is not None
            os.kill(dead.child.pid, signal.SIGKILL)
            await dead.unreachable.wait()
            assert not dead.exited.is_set()  # (still draining: the window this is about)
            answer = await call(supervisor, "a")
            assert not isinstance(answer, str), answer  # (a string: it failed, with this reason)
            assert answer.result_json == '[{"type":"text","text":"a"}]'
            assert supervisor.current is not dead
            await supervisor.stop(5)
