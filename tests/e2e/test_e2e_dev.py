"""End to end: `protomcp dev` reloads, supervision and plugins, driven by the official client."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import TextResourceContents

from tests.support.hosts import HOST, RawHost, mcp_session, write_atomic

pytestmark = pytest.mark.anyio


def tool_source(*names: str, description: str = "A tool.") -> str:
    out = ["from protomcp_sdk import tool\n"]
    for name in names:
        out.append(f'@tool\ndef {name}(x: int = 0) -> int:\n    """{description}"""\n    return x\n')
    return "\n".join(out)


class Watcher:
    """Collects list_changed notifications and log messages from a session."""

    def __init__(self) -> None:
        self.changed = anyio.Event()
        self.count = 0
        self.logs: list[Any] = []
        self.logged = anyio.Event()

    async def on_message(self, message: Any) -> None:
        root = getattr(message, "root", message)
        if type(root).__name__ == "ToolListChangedNotification":
            self.count += 1
            self.changed.set()

    async def on_log(self, params: Any) -> None:
        self.logs.append(params)
        self.logged.set()

    async def wait_log(self, want: Callable[[Any], bool], timeout: float = 15) -> Any:
        """The first log message (received so far or later) that satisfies `want`."""
        with anyio.fail_after(timeout):
            while True:
                self.logged = anyio.Event()
                found = next((params for params in self.logs if want(params)), None)
                if found is not None:
                    return found
                await self.logged.wait()

    async def tools_after_change(
        self, session: Any, want: Callable[[dict[str, Any]], bool], timeout: float = 15
    ) -> dict[str, Any]:
        """Wait for list_changed notifications until the tool list satisfies `want`."""
        with anyio.fail_after(timeout):
            while True:
                await self.changed.wait()
                self.changed = anyio.Event()
                tools = {t.name: t for t in (await session.list_tools()).tools}
                if want(tools):
                    return tools


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def test_add_change_remove_tools(tmp_path: Path) -> None:
    file = tmp_path / "tools.py"
    write_atomic(file, tool_source("alpha"))
    watcher = Watcher()
    async with mcp_session("dev", str(file), message_handler=watcher.on_message) as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["alpha"]
        write_atomic(file, tool_source("alpha", "beta"))
        await watcher.tools_after_change(session, lambda t: set(t) == {"alpha", "beta"})
        write_atomic(file, tool_source("alpha", "beta", description="Changed."))
        tools = await watcher.tools_after_change(session, lambda t: t["beta"].description == "Changed.")
        assert tools["alpha"].description == "Changed."
        write_atomic(file, tool_source("beta", description="Changed."))
        await watcher.tools_after_change(session, lambda t: set(t) == {"beta"})
        assert text_of(await session.call_tool("beta", {"x": 5})) == "5"
        # A save that changes no tool sends no list_changed.
        seen = watcher.count
        write_atomic(file, tool_source("beta", description="Changed.") + "\n# a comment\n")
        write_atomic(file, tool_source("beta", description="Changed.") + "\nVALUE = 1\n")
        write_atomic(file, tool_source("beta", "gamma", description="Changed."))
        await watcher.tools_after_change(session, lambda t: "gamma" in t)
        assert watcher.count == seen + 1


async def test_calls_survive_many_reloads(tmp_path: Path) -> None:
    file = tmp_path / "tools.py"
    source = """
        import asyncio
        from protomcp_sdk import tool

        @tool
        def add(a: int, b: int) -> int:
            \"\"\"Version {n}.\"\"\"
            return a + b

        @tool
        async def nap(a: int) -> int:
            await asyncio.sleep(0.02)
            return a
    """
    write_atomic(file, source.replace("{n}", "0"))
    watcher = Watcher()
    failures: list[str] = []
    done = 0
    async with mcp_session("dev", str(file), message_handler=watcher.on_message) as session:
        await session.list_tools()  # answered once the file has loaded: saves from now on are reloads
        stop = anyio.Event()

        async def caller(k: int) -> None:
            nonlocal done
            i = 0
            while not stop.is_set():
                i += 1
                with anyio.fail_after(20):
                    if i % 2:
                        result = await session.call_tool("add", {"a": k, "b": i})
                        ok = not result.is_error and text_of(result) == str(k + i)
                    else:
                        result = await session.call_tool("nap", {"a": i})
                        ok = not result.is_error and text_of(result) == str(i)
                if not ok:
                    failures.append(text_of(result))
                done += 1

        async with anyio.create_task_group() as tg:
            for k in range(4):
                tg.start_soon(caller, k)
            for n in range(1, 23):
                write_atomic(file, source.replace("{n}", str(n)))
                await watcher.tools_after_change(
                    session, lambda t, n=n: t["add"].description == f"Version {n}."
                )
            stop.set()
    assert failures == []
    assert done > 22


BROKEN = {
    "syntax error": ("\ndef broken(:\n", "SyntaxError"),
    "import error": ("\nimport no_such_module_here\n", "ModuleNotFoundError"),
    "exception at import": ("\nraise RuntimeError('config missing')\n", "config missing"),
    "duplicate tool names": ("\n@tool\ndef alpha() -> int:\n    return 1\n", "'alpha' is registered twice"),
}


@pytest.mark.parametrize("kind", list(BROKEN))
async def test_failed_load_keeps_old_tools_then_fix_reloads(tmp_path: Path, kind: str) -> None:
    breakage, expected = BROKEN[kind]
    file = tmp_path / "tools.py"
    write_atomic(file, tool_source("alpha"))
    watcher = Watcher()
    async with mcp_session(
        "dev", str(file), message_handler=watcher.on_message, logging_callback=watcher.on_log
    ) as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["alpha"]  # loaded
        write_atomic(file, tool_source("alpha") + breakage)
        error = await watcher.wait_log(lambda p: p.level == "error")
        assert expected in str(error.data) and "tools.py" in str(error.data)
        stale = await session.call_tool("alpha", {"x": 3})
        assert stale.content[0].text == "3"  # old tools still serve, and their answers say why
        [block] = stale.content[1:]  # beside structured content: an embedded text resource
        assert block.type == "resource" and isinstance(block.resource, TextResourceContents)
        note = block.resource.text
        assert note.startswith("Note: tools.py failed to load at ") and expected in note
        assert "this answer came from the previous version of tools.py" in note.lower()
        write_atomic(file, tool_source("alpha", "fixed"))
        await watcher.tools_after_change(session, lambda t: "fixed" in t)
        assert text_of(await session.call_tool("alpha", {"x": 3})) == "3"  # a good save: no note


@pytest.mark.parametrize("processes", ["1", "2"])
async def test_a_file_broken_at_start_is_a_tool_that_says_why_until_it_loads(
    tmp_path: Path, processes: str
) -> None:
    """No previous version serves it: a placeholder tool, listed up front, names the error
    (the model reads tool lists, not log messages); a call answers the whole traceback at
    once; another failed save updates it; a good save replaces it with the file's tools."""
    file = tmp_path / "tools.py"
    write_atomic(file, tool_source("alpha") + "\ndef broken(:\n")
    watcher = Watcher()
    async with mcp_session(
        "dev", "--processes", processes, str(file), message_handler=watcher.on_message
    ) as session:
        [placeholder] = (await session.list_tools()).tools
        assert placeholder.name == "tools_py_failed_to_load"
        assert placeholder.description is not None
        assert placeholder.description.startswith("tools.py failed to load, so none of its tools are served:")
        assert "SyntaxError" in placeholder.description and "(line 8)" in placeholder.description
        assert placeholder.meta == {"anthropic/alwaysLoad": True}
        with anyio.fail_after(5):  # at once: no wait for a restart that only a save brings
            answer = await session.call_tool(placeholder.name, {})
        assert answer.is_error and "def broken(:" in text_of(answer) and "SyntaxError" in text_of(answer)
        write_atomic(file, tool_source("alpha") + "\nimport no_such_module_here\n")
        await watcher.tools_after_change(
            session, lambda t: "ModuleNotFoundError" in str(t[placeholder.name].description)
        )
        write_atomic(file, tool_source("alpha"))
        tools = await watcher.tools_after_change(session, lambda t: placeholder.name not in t)
        assert list(tools) == ["alpha"]
        assert text_of(await session.call_tool("alpha", {"x": 3})) == "3"


def test_a_tool_without_a_description_is_warned_about_once_at_load(tmp_path: Path) -> None:
    """The model reads a tool's description to choose it: none is worth a warning to the author
    (host stderr; not to the client), when the file loads and for each tool that loses it."""
    file = tmp_path / "tools.py"
    bare = "from protomcp_sdk import tool\n\n@tool\ndef bare(x: int = 0) -> int:\n    return x\n"
    write_atomic(file, bare)
    host = RawHost("dev", str(file))
    try:
        host.initialize()
        warning = "protomcp: warning: tools.py: tool 'bare' has no description, which is what the model reads"
        host.wait_stderr(warning)
        write_atomic(file, bare + tool_source("alpha").replace("from protomcp_sdk import tool\n", ""))
        host.wait_stderr("protomcp: loaded tools.py: 2 tools (added alpha)")  # documented: said nothing
        write_atomic(file, bare + "\n@tool\ndef blank() -> int:\n    \n    return 1\n")
        stderr = host.wait_stderr("tool 'blank' has no description")
        host.send({"jsonrpc": "2.0", "id": 9, "method": "ping"})  # after whatever the host sent the client
        sent = []
        while (message := host.recv()).get("id") != 9:
            sent.append(message)
    finally:
        host.close()
    assert stderr.count(warning) == 1  # not again for a reload that left it as it was
    assert not [m for m in sent if "description" in str(m.get("params"))]  # the author's, not the client's
    assert not [line for line in host.stderr if "alpha" in line and "description" in line]


def test_a_tool_naming_an_app_its_file_does_not_define_is_warned_about(tmp_path: Path) -> None:
    """The SDK's load warnings are said as the host's own: `protomcp: warning: FILE: ...` on
    stderr (dev, list; once while the file keeps it; not to the client), and among the file's
    warnings in `inspect`."""
    file = tmp_path / "tools.py"
    source = '@tool(ui="ui://missing/app")\ndef show() -> str:\n    """Show it."""\n    return "x"\n'
    write_atomic(file, "from protomcp_sdk import tool\n\n" + source)
    warning = (
        "protomcp: warning: tools.py: tool 'show' shows the app 'ui://missing/app', which this file "
        "does not define: define it with @resource('ui://missing/app')"
    )
    listed = subprocess.run([*HOST, "list", str(file)], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and warning in listed.stderr, listed.stderr
    inspected = subprocess.run([*HOST, "inspect", str(file)], capture_output=True, text=True, timeout=60)
    assert "  Warnings:\n    tool 'show' shows the app 'ui://missing/app'" in inspected.stdout
    host = RawHost("dev", str(file))
    try:
        host.initialize()
        host.wait_stderr(warning)
        write_atomic(file, tool_source("alpha") + "\n" + source)
        stderr = host.wait_stderr("protomcp: loaded tools.py: 2 tools (added alpha)")
        host.send({"jsonrpc": "2.0", "id": 9, "method": "ping"})  # after whatever the host sent the client
        sent = []
        while (message := host.recv()).get("id") != 9:
            sent.append(message)
    finally:
        host.close()
    assert stderr.count("shows the app 'ui://missing/app'") == 1  # not again for a reload that kept it
    assert not [
        m for m in sent if "ui://missing/app" in str(m.get("params"))
    ]  # the author's, not the client's


CRASHY = """
    import gc
    import os
    import subprocess
    import sys
    import threading
    from protomcp_sdk import tool

    @tool
    def ok(x: int) -> int:
        return x

    @tool
    def crash() -> str:
        print("about to crash", flush=True)
        print("last words on stderr", file=sys.stderr, flush=True)
        os._exit(3)

    @tool
    def crash_while_another_writes() -> str:
        [process] = [o for o in gc.get_objects() if type(o).__name__ == "ProcessRuntime"]
        held = threading.Event()

        def write_elsewhere():  # another thread writes frames while this call prints
            with process.writer.lock:
                held.set()
                threading.Event().wait(0.2)

        threading.Thread(target=write_elsewhere, daemon=True).start()
        held.wait(5)
        print("last words on stderr", file=sys.stderr, flush=True)
        os._exit(3)

    @tool
    def spawn_sleeper() -> int:
        return subprocess.Popen(["sleep", "1000"]).pid

    @tool
    def talk(text: str) -> str:
        print(text)
        return "said"

    @tool
    def big() -> str:
        return "x" * 1_000_000
"""


@pytest.mark.parametrize("crash", ["crash", "crash_while_another_writes"])
async def test_crash_mid_call_fails_that_call_and_restarts(tmp_path: Path, crash: str) -> None:
    """What the call printed before the process died is in its answer, even when another
    thread held the frame writer at that moment."""
    file = tmp_path / "crashy.py"
    write_atomic(file, CRASHY)
    async with mcp_session("run", str(file)) as session:
        with anyio.fail_after(10):
            result = await session.call_tool(crash, {})
        assert result.is_error
        assert "exited with status 3" in text_of(result)
        assert "last words on stderr" in text_of(result)
        with anyio.fail_after(15):
            assert text_of(await session.call_tool("ok", {"x": 7})) == "7"


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


async def test_processes_started_by_tools_are_gone_after_exit(tmp_path: Path) -> None:
    file = tmp_path / "crashy.py"
    write_atomic(file, CRASHY)
    async with mcp_session("dev", str(file)) as session:
        pid = int(text_of(await session.call_tool("spawn_sleeper", {})))
        assert alive(pid)
    with anyio.fail_after(10):
        while alive(pid):
            await anyio.sleep(0.05)


def test_host_exits_on_stdin_close_and_sigterm_leaving_nothing(tmp_path: Path) -> None:
    file = tmp_path / "crashy.py"
    write_atomic(file, CRASHY)
    for how in ("eof", "sigterm"):
        host = RawHost("dev", str(file))
        host.initialize()
        pid = host.request(1, "tools/call", {"name": "spawn_sleeper", "arguments": {}})["result"][
            "structuredContent"
        ]["result"]
        children = subprocess.run(
            ["pgrep", "-P", str(host.proc.pid)], capture_output=True, text=True
        ).stdout.split()
        assert children  # the tool process (and its standby)
        if how == "sigterm":
            host.proc.send_signal(signal.SIGTERM)
        assert host.close(timeout=15) == 0
        for child in [*map(int, children), pid]:
            assert not alive(child), f"{how}: process {child} left behind"


async def test_print_arrives_as_log_message(tmp_path: Path) -> None:
    file = tmp_path / "crashy.py"
    write_atomic(file, CRASHY)
    watcher = Watcher()
    async with mcp_session("run", str(file), logging_callback=watcher.on_log) as session:
        assert text_of(await session.call_tool("talk", {"text": "hello from print"})) == "said"
        message = await watcher.wait_log(lambda p: p.data == "hello from print")
        assert message.level == "info" and message.logger == "crashy.py"
        assert text_of(await session.call_tool("ok", {"x": 1})) == "1"


async def test_plugins_merge_and_a_crash_stays_contained(tmp_path: Path) -> None:
    write_atomic(tmp_path / "a.py", CRASHY)
    write_atomic(tmp_path / "b.py", tool_source("b_tool"))
    async with mcp_session("run", str(tmp_path)) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        crashy = {"ok", "crash", "crash_while_another_writes", "spawn_sleeper", "talk", "big"}
        assert names == crashy | {"b_tool"}
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.call_tool, "crash", {})
            for i in range(20):
                assert text_of(await session.call_tool("b_tool", {"x": i})) == str(i)
        with anyio.fail_after(15):
            assert text_of(await session.call_tool("ok", {"x": 2})) == "2"


def test_name_clash_is_a_startup_error(tmp_path: Path) -> None:
    write_atomic(tmp_path / "one.py", tool_source("same"))
    write_atomic(tmp_path / "two.py", tool_source("same"))
    proc = subprocess.run(
        [*HOST, "run", str(tmp_path)], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 1
    assert "'same'" in proc.stderr and "one.py" in proc.stderr and "two.py" in proc.stderr
    assert proc.stdout == ""


def test_python_without_sdk_is_a_clear_error(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    file = tmp_path / "t.py"
    write_atomic(file, tool_source("x"))
    proc = subprocess.run(
        [*HOST, "run", "--python", str(venv / "bin" / "python"), str(file)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 1
    assert "protomcp_sdk is not importable" in proc.stderr and "--python" in proc.stderr
    assert "install protomcp-tools there (" in proc.stderr and "-m pip install" in proc.stderr


def test_banner_only_on_a_terminal(tmp_path: Path) -> None:
    import pty

    file = tmp_path / "t.py"
    write_atomic(file, tool_source("x"))
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [*HOST, "dev", str(file)], stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        os.close(follower)
        stderr = b""
        assert proc.stderr is not None
        while b"Ctrl+C" not in stderr:
            chunk = os.read(proc.stderr.fileno(), 4096)
            assert chunk, stderr
            stderr += chunk
        proc.send_signal(signal.SIGINT)
        out, rest = proc.communicate(timeout=15)  # bounded: a slow shutdown fails here
    finally:
        os.close(leader)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert b'"mcpServers"' in stderr and str(file).encode() in stderr and b"Watching" in stderr
    assert out == b""
    assert proc.returncode == 0, stderr + rest  # a clean shutdown, not "Aborted!"
    assert b"Aborted" not in rest


async def test_watch_glob_reloads_on_data_changes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "motd.json").write_text('"first"')
    file = tmp_path / "tools.py"
    write_atomic(
        file,
        """
        import json
        from pathlib import Path
        from protomcp_sdk import tool

        MOTD = json.loads((Path(__file__).parent / "data" / "motd.json").read_text())

        @tool(description=f"Message of the day: {MOTD}")
        def motd() -> str:
            return MOTD
        """,
    )
    watcher = Watcher()
    glob = str(data / "*.json")
    async with mcp_session("dev", "--watch", glob, str(file), message_handler=watcher.on_message) as session:
        (tool,) = (await session.list_tools()).tools
        assert tool.description == "Message of the day: first"
        write_atomic(data / "motd.json", '"second"')
        await watcher.tools_after_change(
            session, lambda t: t["motd"].description == "Message of the day: second"
        )
        assert text_of(await session.call_tool("motd", {})) == "second"


async def test_a_save_of_a_file_an_app_declares_reloads_its_tool_file(tmp_path: Path) -> None:
    """An app whose HTML is read once, at import (`files=["chart.html"]` declares it): a save of
    the HTML reloads the tool process, though it is no Python file and no --watch names it, and
    the app's next read shows the new HTML."""
    (tmp_path / "chart.html").write_text("<p>first</p>")
    file = tmp_path / "tools.py"
    write_atomic(
        file,
        """
        from pathlib import Path
        from protomcp_sdk import resource, tool

        HTML = (Path(__file__).parent / "chart.html").read_text()

        @resource("ui://demo/chart", files=["chart.html"])
        def chart() -> str:
            return HTML

        @tool(ui="ui://demo/chart", description="Shows " + HTML)
        def show() -> str:
            return "shown"
        """,
    )
    watcher = Watcher()
    async with mcp_session("dev", str(file), message_handler=watcher.on_message) as session:
        (content,) = (await session.read_resource("ui://demo/chart")).contents  # type: ignore[arg-type]
        assert isinstance(content, TextResourceContents) and content.text == "<p>first</p>"
        write_atomic(tmp_path / "chart.html", "<p>second</p>")
        await watcher.tools_after_change(session, lambda t: t["show"].description == "Shows <p>second</p>")
        (content,) = (await session.read_resource("ui://demo/chart")).contents  # type: ignore[arg-type]
        assert isinstance(content, TextResourceContents) and content.text == "<p>second</p>"


async def test_spool_of_a_crashed_tool_process_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setenv("PROTOMCP_SPOOL_DIR", str(spool))
    file = tmp_path / "crashy.py"
    write_atomic(file, CRASHY)
    async with mcp_session("run", str(file)) as session:
        assert len(text_of(await session.call_tool("big", {}))) == 1_000_000
        assert len(list(spool.iterdir())) == 1  # the tool process's spool directory
        assert (await session.call_tool("crash", {})).is_error
        assert list(spool.iterdir()) == []  # removed by the host when the process died


def test_no_reload_runs_without_a_standby_process(tmp_path: Path) -> None:
    file = tmp_path / "tools.py"
    write_atomic(file, tool_source("alpha"))

    def children(host: RawHost) -> list[str]:
        return subprocess.run(
            ["pgrep", "-P", str(host.proc.pid)], capture_output=True, text=True
        ).stdout.split()

    for args, expected in ((["--no-reload"], 1), ([], 2)):
        host = RawHost("dev", *args, str(file))
        host.initialize()  # the standby is started before the first handshake completes
        assert (
            host.request(1, "tools/call", {"name": "alpha", "arguments": {"x": 4}})["result"]["isError"]
            is False
        )
        assert len(children(host)) == expected, args
        assert host.close() == 0


@pytest.mark.parametrize("processes", ["1", "2"])
def test_dev_keeps_one_idle_standby_and_replaces_a_killed_one(tmp_path: Path, processes: str) -> None:
    """dev (--processes 1 or 2): one warm standby for the file per host process (not one per member), and
    one killed while it idles is replaced (or the next save loads cold, and a soak ends with none)."""
    marks = tmp_path / "loaded"
    marks.mkdir()
    file = tmp_path / "tools.py"
    mark = f"\nimport os\nopen(os.path.join({str(marks)!r}, str(os.getpid())), 'w').close()\n"
    write_atomic(file, tool_source("alpha") + mark)  # a process that loaded the file says so

    def idle_standbys(host: RawHost) -> set[int]:
        """The host's tool processes started as standbys that have not loaded the file."""
        children = subprocess.run(["pgrep", "-P", str(host.proc.pid)], capture_output=True, text=True)
        found = set()
        for pid in children.stdout.split():
            try:
                standby = b"--standby" in Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if standby and not (marks / pid).exists():
                found.add(int(pid))
        return found

    def wait_idle(host: RawHost, dead: set[int], timeout: float = 30) -> set[int]:
        """Idle standbys other than `dead`, once there is one (polled: other processes)."""
        deadline = time.monotonic() + timeout
        while not (idle := idle_standbys(host) - dead):
            assert time.monotonic() < deadline, "no idle standby"
            time.sleep(0.02)
        return idle

    host = RawHost("dev", "--processes", processes, str(file))
    try:
        host.initialize()  # every member serves; a standby is started before its handshake ends
        answer = host.request(1, "tools/call", {"name": "alpha", "arguments": {"x": 4}})
        assert answer["result"]["isError"] is False
        idle = wait_idle(host, set())
        assert len(idle) == 1, idle
        victim = idle.pop()
        os.kill(victim, signal.SIGKILL)
        replacement = wait_idle(host, {victim})
        assert len(replacement) == 1, replacement
    finally:
        assert host.close() == 0
