"""`protomcp logs`: what a dev host started by a client does, followed from another terminal
(cli/devjournal.py writes it, cli/logs.py reads it)."""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from protomcp_host.cli import devjournal
from protomcp_host.cli.devjournal import DevJournal, Follower, running_or_not, sweep
from protomcp_host.cli.logs import describe_hosts
from tests.support.hosts import HOST, mcp_session, write_atomic

TOOLS = """
    import os
    from protomcp_sdk import Context, tool

    @tool
    def add(a: int, b: int, ctx: Context) -> int:
        print("adding", a, b)
        ctx.info(f"the sum is {a + b}")
        return a + b

    @tool
    def crash() -> str:
        os._exit(3)
"""


class Lines:
    """A command's stdout, line by line, waited on with a timeout."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [*HOST, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, text: str, timeout: float = 20) -> str:
        """The first line from now on that contains `text` (within `timeout` in all)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"{text!r} not printed; so far:\n" + "\n".join(self.seen)) from None
            if line is None:
                raise AssertionError(f"{text!r} not printed before exit:\n" + "\n".join(self.seen))
            self.seen.append(line)
            if text in line:
                return line

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)
        self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A runtime folder of this test's own, for the hosts it starts and for this process."""
    folder = tmp_path / "runtime"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    return folder / "protomcp" / "dev"


@pytest.fixture
def logs() -> Iterator[Any]:
    started: list[Lines] = []

    def start(*args: str) -> Lines:
        started.append(Lines("logs", *args))
        return started[-1]

    yield start
    for lines in started:
        lines.close()


@pytest.mark.anyio
async def test_logs_follows_calls_output_load_errors_and_restarts(
    tmp_path: Path, runtime: Path, logs: Any
) -> None:
    file = tmp_path / "tools.py"
    write_atomic(file, TOOLS)
    follower = logs(str(file))  # started before any host: it waits for one
    follower.wait_for(f"waiting for a dev host serving {file}")
    async with mcp_session("dev", str(file)) as session:
        follower.wait_for("loaded tools.py: add, crash")
        with anyio.fail_after(10):
            await session.call_tool("add", {"a": 1, "b": 2})
        assert follower.wait_for("call #").endswith('add {"a":1,"b":2}')
        follower.wait_for("[tools.py] adding 1 2")  # what the call printed
        follower.wait_for("[tools.py] info add: the sum is 3")  # what it logged
        assert "add ok in" in follower.wait_for("answer #")
        with anyio.fail_after(10):
            await session.call_tool("crash", {})
        assert "exited with status 3" in follower.wait_for("crash error in")
        assert "exited with status 3" in follower.wait_for("problem: ")  # the crash, and its restart
        follower.wait_for("restarting in")
        follower.wait_for("reloaded tools.py: add, crash")  # restarted: now a save is a reload
        write_atomic(file, textwrap.dedent(TOOLS) + "\ndef broken(:\n")
        follower.wait_for("problem: tools.py failed to load")
        follower.wait_for(f'File "{file}", line 15')  # the traceback, whole
        follower.wait_for("SyntaxError")
        follower.wait_for("the previous version of tools.py keeps serving")
    follower.wait_for("stopped")
    follower.wait_for("waiting for a dev host")
    write_atomic(file, TOOLS)
    async with mcp_session("dev", str(file)):  # the client starts it again: followed too
        follower.wait_for("started")
        follower.wait_for("loaded tools.py: add")


def test_logs_lists_running_dev_hosts_with_their_playground(tmp_path: Path, runtime: Path, logs: Any) -> None:
    from tests.support.hosts import RawHost

    file = tmp_path / "tools.py"
    write_atomic(file, TOOLS)
    assert "No dev host is running" in logs().wait_for("No dev host")
    host = RawHost("dev", str(file), "--ui", "--ui-port", "0", read_stdout=False)  # no client yet
    try:
        url = host.wait_stderr("protomcp playground: ").split("protomcp playground: ")[1].split()[0]
        listing = logs()
        assert str(file) in listing.wait_for("pid ")
        assert listing.wait_for("playground: ").endswith(url)
        follower = logs(str(file))
        assert follower.wait_for("playground: ").endswith(url)
    finally:
        host.close()


def test_a_journal_keeps_two_generations_and_is_followed_across_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(devjournal, "MAX_BYTES", 2000)
    journal = DevJournal(tmp_path, [tmp_path / "tools.py"], pid=4242)
    follower = Follower(journal.path)
    seen: list[int] = []
    for n in range(200):
        journal.add("printed", label="tools.py", line=f"line {n}")
        if n % 7 == 0:
            seen += [record["line"] for record in follower.read() if record["kind"] == "printed"]  # type: ignore[misc]
    journal.close()
    seen += [record["line"] for record in follower.read() if record["kind"] == "printed"]  # type: ignore[misc]
    assert seen == [f"line {n}" for n in range(200)]  # nothing lost or repeated over rotations
    sizes = [path.stat().st_size for path in tmp_path.glob("4242.jsonl*")]
    assert len(sizes) == 2 and all(size <= 2000 for size in sizes)
    follower.close()


def test_a_host_that_stopped_is_not_running_and_is_swept_later(tmp_path: Path) -> None:
    journal = DevJournal(tmp_path, [tmp_path / "tools.py"], pid=4243)
    [host] = running_or_not(tmp_path)
    assert host.running and host.files == [str((tmp_path / "tools.py").resolve())]
    journal.close()  # (a killed host's lock is released by the kernel the same way)
    [host] = running_or_not(tmp_path)
    assert not host.running
    assert describe_hosts(tmp_path)[0].startswith("No dev host is running")
    sweep(tmp_path)
    assert running_or_not(tmp_path)  # kept a while: `logs FILE` shows how it ended
    sweep(tmp_path, now=host.last_seen + devjournal.KEEP_STOPPED + 1)
    assert not list(tmp_path.iterdir())


def test_a_closed_journal_writes_nothing_more(tmp_path: Path) -> None:
    """A session's wire tap may outlive the journal: what it shows then is dropped, and the
    descriptor the journal had (perhaps another file's now) is not written to."""
    journal = DevJournal(tmp_path, [tmp_path / "tools.py"], pid=4244)
    journal.close()
    written = journal.path.read_bytes()
    call = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add"}}'
    journal.wire(1, "in", call, None)
    journal.host_event("problem", {"message": "late"})
    journal.close()
    assert journal.path.read_bytes() == written


def test_ui_without_a_port_takes_any_free_one_when_the_default_is_taken(
    tmp_path: Path, runtime: Path
) -> None:
    """Each client starts its own dev host: a second `dev --ui` must not fail on port 6280."""
    from protomcp_host.cli.serving import UI_PORT
    from tests.support.hosts import RawHost

    file = tmp_path / "tools.py"
    write_atomic(file, TOOLS)
    holder = socket.socket()
    try:
        try:
            holder.bind(("127.0.0.1", UI_PORT))
            holder.listen()
        except OSError:
            pass  # taken already: the same situation
        host = RawHost("dev", str(file), "--ui", read_stdout=False)
        try:
            line = host.wait_stderr("protomcp playground: http://127.0.0.1:")
            assert f"127.0.0.1:{UI_PORT}/" not in line
        finally:
            host.close()
    finally:
        holder.close()


def test_install_dev_ui_writes_a_dev_host_with_its_playground(tmp_path: Path) -> None:
    file = tmp_path / "tools.py"
    write_atomic(file, TOOLS)
    argv = [*HOST, "install", "mcp-json", str(file), "--dev", "--ui"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    entry = orjson.loads(done.stdout)["mcpServers"]["tools"]
    assert entry["args"][-3:] == ["dev", str(file.resolve()), "--ui"]
    done = subprocess.run([*argv[:-2], "--ui"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--ui: only with --dev" in done.stderr


def test_logs_names_the_host_of_each_line_while_two_serve_the_file(tmp_path: Path) -> None:
    """Two clients, each with its dev host of one file: each line says whose it is."""
    from protomcp_host.cli.logs import follow

    file = tmp_path / "tools.py"
    running = [DevJournal(tmp_path, [file], pid=pid) for pid in (5001, 5002)]

    def calls_then_stop(number: int) -> Callable[[], bool]:
        """keep_going for follow: first each running host makes call #number, then it stops."""
        turns = iter([True, False])

        def keep_going() -> bool:
            going = next(turns)
            if going:
                for journal in running:
                    journal.add("call", id=number, tool="add", arguments=f'{{"pid":{journal.pid}}}')
            return going

        return keep_going

    said: list[str] = []
    follow(tmp_path, file, said.append, keep_going=calls_then_stop(1), poll=0)
    calls = sorted(line.split(" ", 1)[1] for line in said if "call #1" in line)
    assert calls == [f'[host {pid}] call #1 add {{"pid":{pid}}}' for pid in (5001, 5002)]
    running.pop(0).close()
    said.clear()
    follow(tmp_path, file, said.append, tail=0, keep_going=calls_then_stop(2), poll=0)
    calls = [line.split(" ", 1)[1] for line in said if "call #2" in line]
    assert calls == ['call #2 add {"pid":5002}']  # one host runs: no tag
    running.pop().close()
