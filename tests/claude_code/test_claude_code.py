"""The real Claude Code CLI (pinned in tests/claude_code/package.json; `npm ci` there installs
it, as .ci/run does) driven end to end against protomcp with no model: `claude -p` talks to
tests/claude_code/fake_messages_api.py, whose scripted "model" calls the MCP tools, and which records what
Claude Code offered the model and sent back. Claude Code starts the host itself from an MCP
config, through tests/claude_code/stdio_tap.py, which records the MCP wire and the host's stderr.

What Claude Code 2.1.332 does with a protomcp host, as these tests pin it:
- it speaks 2026-07-28 (server/discover, every request's _meta naming the version), follows
  tools/list_changed, and answers input_required round trips (roots; elicitation: cancel);
- an MCP tool is deferred behind its ToolSearch tool (named in a prompt message only) unless
  the tool's _meta has "anthropic/alwaysLoad": true (`@tool(pinned=True)` sets it);
  "anthropic/searchHint" is searched, "anthropic/maxResultSizeChars" raises its own limit;
- a result whose _meta has "claude/endTurn": true ends the turn: the model is not asked again;
- an isError result reaches the model as its text, and the user as "Error: " + that text;
- what a tool prints reaches neither the model nor the user: Claude Code asks for no log
  messages and drains a server's stderr unread once connected (`protomcp logs` shows it);
- a @prompt is a slash command (/mcp__SERVER__NAME), a @resource is read by its
  ReadMcpResourceTool.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.claude_code.fake_messages_api import FakeMessagesAPI, tool_use
from tests.support.hosts import HOST, ROOT, write_atomic
from tests.support.installed import missing
from tests.support.ports import free_port

CLAUDE_CODE = Path(__file__).resolve().parent  # this folder: its package.json pins Claude Code
PINNED = json.loads((CLAUDE_CODE / "package.json").read_text())["devDependencies"][
    "@anthropic-ai/claude-code"
]
TAP = CLAUDE_CODE / "stdio_tap.py"
SERVER = "tools"  # the server's name in the MCP config: Claude Code calls its tools mcp__tools__NAME
VERSION_META = "io.modelcontextprotocol/protocolVersion"
RUN_TIMEOUT = 60.0
DEFERRED = "The following deferred tools are now available via ToolSearch."

TOOLS = """
    from protomcp_sdk import tool

    @tool
    def greet(name: str) -> str:
        \"\"\"Say hello to someone.\"\"\"
        print("greet printed this")
        return f"Hello, {name}!"
"""


@pytest.fixture(scope="module")
def claude() -> Path:
    binary = CLAUDE_CODE / "node_modules" / ".bin" / "claude"
    if not binary.exists():
        why = "npm is not installed" if shutil.which("npm") is None else "it is not installed"
        missing(f"needs Claude Code {PINNED} from npm ({why}): run `npm ci` in tests/claude_code")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
    assert version.stdout.startswith(PINNED), version.stdout + version.stderr
    return binary


@dataclass
class Run:
    """One `claude -p` run: its stream-json events, the MCP wire as the tap saw it, its debug log."""

    events: list[dict[str, Any]]
    wire: list[tuple[str, str]]  # (side, line) through the tap: "client", "server", "stderr"
    debug: str

    def result(self) -> dict[str, Any]:
        [result] = [event for event in self.events if event["type"] == "result"]
        return result

    def messages(self, side: str) -> list[dict[str, Any]]:
        """The JSON-RPC messages `side` ("client" or "server") sent."""
        return [json.loads(line) for who, line in self.wire if who == side]

    def request(self, method: str) -> dict[str, Any]:
        return next(m for m in self.messages("client") if m.get("method") == method)

    def stderr(self) -> str:
        return "\n".join(line for who, line in self.wire if who == "stderr")

    def shown_results(self) -> list[Any]:
        """What the user is shown of each MCP tool result (the stream's tool_use_result)."""
        return [
            event["tool_use_result"]
            for event in self.events
            if event["type"] == "user" and "tool_use_result" in event
        ]


def read_wire(path: Path) -> list[tuple[str, str]]:
    return [tuple(json.loads(line)) for line in path.read_text().splitlines()] if path.exists() else []


def claude_env(workdir: Path) -> dict[str, str]:
    """The environment of every `claude` here: a fresh HOME, no network but the fake API."""
    home = workdir / "home"
    home.mkdir(exist_ok=True)
    runtime = workdir / "runtime"  # where dev hosts keep their journals
    runtime.mkdir(mode=0o700, exist_ok=True)
    scratch = workdir / "tmp"  # Claude Code leaves a folder per project in $TMPDIR/claude-UID
    scratch.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    return env | {
        "HOME": str(home),
        "XDG_RUNTIME_DIR": str(runtime),
        "TMPDIR": str(scratch),
        "PATH": f"{CLAUDE_CODE / 'node_modules' / '.bin'}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),  # the hosts Claude Code starts import this checkout
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        # Claude Code's documented switches: no telemetry, error reports or update checks...
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        # ...and its MCP tool search on, as for the real API (a base URL not Anthropic's may
        # turn it off by default).
        "ENABLE_TOOL_SEARCH": "true",
    }


def run_claude(
    claude: Path, workdir: Path, api: FakeMessagesAPI, *host_args: str, prompt: str = "Use the tools."
) -> Run:
    """`claude -p PROMPT` with the one MCP server `protomcp HOST_ARGS` (through the tap)."""
    wire = workdir / "wire.jsonl"
    host = [sys.executable, "-m", "protomcp_host", *host_args]
    server = {"command": sys.executable, "args": [str(TAP), str(wire), *host]}
    config = workdir / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {SERVER: server}}))
    run = claude_print(
        claude, workdir, api, "--mcp-config", str(config), "--strict-mcp-config", prompt=prompt
    )
    run.wire = read_wire(wire)
    return run


def claude_print(
    claude: Path, workdir: Path, api: FakeMessagesAPI, *options: str, prompt: str = "Use the tools."
) -> Run:
    """`claude -p PROMPT OPTIONS` against `api`, the MCP tools of the server SERVER (and the
    reading of its resources) allowed."""
    debug = workdir / "claude-debug.log"
    argv = [str(claude), "-p", prompt, *options, "--allowedTools", f"mcp__{SERVER},ReadMcpResourceTool"]
    argv += ["--output-format", "stream-json", "--verbose", "--debug-file", str(debug)]
    env = claude_env(workdir) | {"ANTHROPIC_BASE_URL": api.url}
    proc = subprocess.Popen(
        argv,
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # claude, and the hosts it started
            proc.communicate()
    assert proc.returncode == 0, f"claude exited {proc.returncode}: {err[-2000:]}"
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return Run(events, [], debug.read_text() if debug.exists() else "")


def wait_for_wire(wire: Path, side: str, text: str, timeout: float = 30.0) -> None:
    """Until the tap has seen `side` send a line holding `text` (it writes each as it passes)."""
    deadline = time.monotonic() + timeout
    while not any(who == side and text in line for who, line in read_wire(wire)):
        assert time.monotonic() < deadline, f"{side} never sent {text!r}"
        time.sleep(0.05)


def deferred_tools(request: dict[str, Any]) -> list[str]:
    """The tools a request to the model names as loadable through ToolSearch (each list after
    DEFERRED, in the environment message of the first turn or a message of its own later)."""
    messages = request["messages"]
    texts = [m["content"] for m in messages if isinstance(m["content"], str)]
    texts += [
        b["text"] for m in messages if isinstance(m["content"], list) for b in m["content"] if "text" in b
    ]
    lists = [
        text.split(DEFERRED, 1)[1].split(":\n", 1)[1].split("\n\n", 1)[0]
        for text in texts
        if DEFERRED in text
    ]
    return [name for names in lists for name in names.splitlines()]


def tool_file(workdir: Path, source: str = TOOLS) -> Path:
    path = workdir / "tools.py"
    path.write_text(textwrap.dedent(source))
    return path


@pytest.mark.parametrize("verb", ["run", "dev"])
def test_a_call_reaches_the_model_as_a_tool_result(claude: Path, tmp_path: Path, verb: str) -> None:
    with FakeMessagesAPI([[tool_use("mcp__tools__greet", {"name": "Ada"})]]) as api:
        run = run_claude(claude, tmp_path, api, verb, str(tool_file(tmp_path)))
    assert run.result()["subtype"] == "success" and run.result()["result"] == "done"
    [result] = api.tool_results()
    assert result["tool_use_id"] == "toolu_fake1" and not result.get("is_error")
    assert result["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    assert len(api.agent_requests) == 2  # the model was asked again with the result
    # 2026-07-28, on both sides: Claude Code's requests name it, the host lists it first.
    assert '"negotiatedProtocolVersion":"2026-07-28"' in run.debug
    assert run.request("tools/call")["params"]["_meta"][VERSION_META] == "2026-07-28"
    discover = next(m for m in run.messages("server") if "supportedVersions" in m.get("result", {}))
    assert discover["result"]["supportedVersions"][0] == "2026-07-28"


def test_printed_output_reaches_neither_the_model_nor_the_user(claude: Path, tmp_path: Path) -> None:
    with FakeMessagesAPI([[tool_use("mcp__tools__greet", {"name": "Ada"})]]) as api:
        run = run_claude(claude, tmp_path, api, "run", str(tool_file(tmp_path)))
    assert api.tool_results()[0]["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    assert "greet printed this" in run.stderr()  # the host's stderr has it...
    assert "greet printed this" not in json.dumps(run.events)  # ...the user does not see it,
    assert "greet printed this" not in json.dumps(api.requests)  # nor does the model,
    assert "greet printed this" not in run.debug  # nor Claude Code's own debug log:
    # a 2026-07-28 call asks for log messages with a logLevel in its _meta; Claude Code's do not.
    assert "io.modelcontextprotocol/logLevel" not in run.request("tools/call")["params"]["_meta"]
    assert not any(m.get("method") == "notifications/message" for m in run.messages("server"))


GREETING = """
    import os

    from protomcp_sdk import tool

    @tool
    def greet(name: str) -> str:
        \"\"\"Say hello to someone.\"\"\"
        return f"{os.environ.get('GREETING', 'Hello')}, {name}!"
"""


def test_install_claude_code_then_claude_code_calls_the_tools(claude: Path, tmp_path: Path) -> None:
    """`protomcp install claude-code` registers the server with the real `claude mcp` (user
    scope); a plain `claude -p` then starts it, with the entry's --env, and calls its tools."""
    file = tool_file(tmp_path, GREETING)
    for again in ([], ["--force", "--env", "GREETING=Howdy"]):  # --force: replaces the entry
        install = [*HOST, "install", "claude-code", str(file), *again]
        done = subprocess.run(install, env=claude_env(tmp_path), capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
    with FakeMessagesAPI([[tool_use("mcp__tools__greet", {"name": "Ada"})]]) as api:
        claude_print(claude, tmp_path, api)
    assert api.tool_results()[0]["content"] == [{"type": "text", "text": "Howdy, Ada!"}]


SHOUT = """
    @tool
    def shout(word: str) -> str:
        \"\"\"Say it louder.\"\"\"
        return word.upper()
"""


def test_a_tool_added_in_dev_reaches_the_model(claude: Path, tmp_path: Path) -> None:
    file = tool_file(tmp_path)

    def add_a_tool(turn: int) -> None:
        if turn == 1:
            write_atomic(file, TOOLS + SHOUT)
            wait_for_wire(tmp_path / "wire.jsonl", "server", '"name":"shout"')  # Claude Code listed again

    greet = tool_use("mcp__tools__greet", {"name": "Ada"})
    calls = [[greet], [greet], [tool_use("mcp__tools__shout", {"word": "hi"})]]
    with FakeMessagesAPI(calls, before_turn=add_a_tool) as api:
        run_claude(claude, tmp_path, api, "dev", str(file))
    assert "mcp__tools__shout" not in deferred_tools(api.agent_requests[1])
    assert "mcp__tools__shout" in deferred_tools(api.agent_requests[2])  # announced to the model
    assert api.tool_results()[2]["content"] == [{"type": "text", "text": "HI"}]


FEATURES = """
    from protomcp_sdk import prompt, resource

    @resource("notes://today", description="Today's notes")
    def today() -> str:
        return "buy milk"

    @prompt
    def review(topic: str) -> str:
        \"\"\"Review something.\"\"\"
        return f"Please review {topic} carefully."
"""


def test_a_prompt_is_a_slash_command(claude: Path, tmp_path: Path) -> None:
    with FakeMessagesAPI([]) as api:
        run = run_claude(
            claude,
            tmp_path,
            api,
            "run",
            str(tool_file(tmp_path, FEATURES)),
            prompt="/mcp__tools__review milk",
        )
    assert run.request("prompts/get")["params"]["arguments"] == {"topic": "milk"}
    [user] = [m for m in api.agent_requests[0]["messages"] if m["role"] == "user"]
    assert user["content"][-1] == {"type": "text", "text": "Please review milk carefully."}


def test_a_resource_reaches_the_model(claude: Path, tmp_path: Path) -> None:
    load = tool_use("ToolSearch", {"query": "select:ReadMcpResourceTool"})  # deferred, as MCP tools
    read = tool_use("ReadMcpResourceTool", {"server": SERVER, "uri": "notes://today"})
    with FakeMessagesAPI([[load], [read]]) as api:
        run_claude(claude, tmp_path, api, "run", str(tool_file(tmp_path, FEATURES)))
    contents = json.loads(api.tool_results()[1]["content"])["contents"]
    assert contents == [{"uri": "notes://today", "mimeType": "text/plain", "text": "buy milk"}]


ASKING = """
    from protomcp_sdk import Context, tool

    @tool
    async def where(ctx: Context) -> str:
        \"\"\"The client's roots.\"\"\"
        return " ".join(root.uri for root in await ctx.list_roots())

    @tool
    async def ask(ctx: Context) -> str:
        \"\"\"Asks the user.\"\"\"
        name = {"type": "object", "properties": {"name": {"type": "string"}}}
        return (await ctx.elicit("Your name?", name)).action
"""


def test_a_tool_that_asks_gets_claude_codes_answers(claude: Path, tmp_path: Path) -> None:
    """The 2026-07-28 round trip (an input_required result, then the call again with the
    answers): Claude Code's roots are its working directory; in print mode, with nobody to
    ask, it cancels an elicitation."""
    with FakeMessagesAPI([[tool_use("mcp__tools__where")], [tool_use("mcp__tools__ask")]]) as api:
        run = run_claude(claude, tmp_path, api, "run", str(tool_file(tmp_path, ASKING)))
    roots, asked = api.tool_results()
    assert roots["content"] == [{"type": "text", "text": tmp_path.as_uri()}]
    assert asked["content"] == [{"type": "text", "text": "cancel"}]
    retries = [
        m["params"]
        for m in run.messages("client")
        if m.get("method") == "tools/call" and "inputResponses" in m["params"]
    ]
    assert [sorted(retry["inputResponses"]) for retry in retries] == [["roots-1"], ["elicit-1"]]


DEFERRAL = """
    from protomcp_sdk import tool

    @tool(pinned=True)
    def greet(name: str) -> str:
        \"\"\"Say hello to someone.\"\"\"
        return f"Hello, {name}!"

    @tool(meta={"anthropic/alwaysLoad": True})
    def wave(name: str) -> str:
        \"\"\"Wave at someone.\"\"\"
        return f"*waves at {name}*"

    @tool(meta={"anthropic/searchHint": "salute a person warmly"})
    def bow(name: str) -> str:
        \"\"\"A gesture.\"\"\"
        return name

    @tool
    def nod(name: str) -> str:
        \"\"\"A gesture.\"\"\"
        return name
"""


def test_pinned_and_always_load_tools_are_offered_up_front(claude: Path, tmp_path: Path) -> None:
    load_nod = tool_use("ToolSearch", {"query": "select:mcp__tools__nod"})
    with FakeMessagesAPI([[load_nod]]) as api:
        run_claude(claude, tmp_path, api, "run", str(tool_file(tmp_path, DEFERRAL)))
    offered = api.offered_tools(0)
    for name, description in [("greet", "Say hello to someone."), ("wave", "Wave at someone.")]:
        tool = offered[f"mcp__tools__{name}"]  # in the model's tools from the first turn
        assert tool["description"] == description and not tool.get("defer_loading")
    # The others are deferred: only named in the prompt, as ToolSearch can load them...
    deferred = {name for name in deferred_tools(api.agent_requests[0]) if name.startswith("mcp__")}
    assert deferred == {"mcp__tools__bow", "mcp__tools__nod"}
    assert "mcp__tools__nod" not in offered
    loaded = api.offered_tools(1)["mcp__tools__nod"]  # ...as the model did here
    assert loaded["description"] == "A gesture." and loaded["defer_loading"] is True


def test_a_search_hint_finds_a_deferred_tool(claude: Path, tmp_path: Path) -> None:
    search = tool_use("ToolSearch", {"query": "salute"})  # in bow's hint, in no description
    with FakeMessagesAPI([[search]]) as api:
        run_claude(claude, tmp_path, api, "run", str(tool_file(tmp_path, DEFERRAL)))
    [found] = api.tool_results()
    assert found["content"] == [{"type": "tool_reference", "tool_name": "mcp__tools__bow"}]


SIZES = """
    from protomcp_sdk import tool

    @tool(pinned=True, meta={"anthropic/maxResultSizeChars": 200_000})
    def roomy() -> str:
        \"\"\"Long text, allowed in full.\"\"\"
        return "x" * 60_000

    @tool(pinned=True)
    def capped() -> str:
        \"\"\"Long text.\"\"\"
        return "x" * 60_000
"""


def test_max_result_size_chars_keeps_a_long_answer_whole(claude: Path, tmp_path: Path) -> None:
    calls = [[tool_use("mcp__tools__roomy")], [tool_use("mcp__tools__capped")]]
    with FakeMessagesAPI(calls) as api:
        run_claude(claude, tmp_path, api, "run", str(tool_file(tmp_path, SIZES)))
    roomy, capped = api.tool_results()
    assert roomy["content"] == [{"type": "text", "text": "x" * 60_000}]
    # Above Claude Code's own limit the model gets a preview and the path of a saved copy.
    assert capped["content"].startswith("<persisted-output>\nOutput too large")


ENDINGS = """
    from protomcp_sdk import ToolError, ToolResult, tool

    @tool(pinned=True)
    def refuse(why: str) -> str:
        \"\"\"Always refuses.\"\"\"
        raise ToolError(f"refused: {why}")

    @tool(pinned=True)
    def finish() -> ToolResult:
        \"\"\"Ends the turn.\"\"\"
        return ToolResult("all done", meta={"claude/endTurn": True})
"""


def test_a_tool_error_reads_error_once(claude: Path, tmp_path: Path) -> None:
    with FakeMessagesAPI([[tool_use("mcp__tools__refuse", {"why": "no reason"})]]) as api:
        run = run_claude(claude, tmp_path, api, "run", str(tool_file(tmp_path, ENDINGS)))
    [result] = api.tool_results()
    assert result["is_error"] is True and result["content"] == "refused: no reason"  # the model's
    assert run.shown_results()[0]["content"] == "Error: refused: no reason"  # the user's


def test_end_turn_meta_ends_the_turn(claude: Path, tmp_path: Path) -> None:
    twice = [[tool_use("mcp__tools__finish")], [tool_use("mcp__tools__finish")]]
    with FakeMessagesAPI(twice) as api:
        run = run_claude(claude, tmp_path, api, "run", str(tool_file(tmp_path, ENDINGS)))
    assert len(api.agent_requests) == 1  # the model is not asked again after the result
    assert run.shown_results()[0]["content"] == [{"type": "text", "text": "all done"}]
    assert run.result()["subtype"] == "success"
    assert len([m for m in run.messages("client") if m.get("method") == "tools/call"]) == 1


def test_a_broken_save_in_dev_reaches_the_model(claude: Path, tmp_path: Path) -> None:
    file = tool_file(tmp_path)

    def break_the_file(turn: int) -> None:
        if turn == 1:  # between the two calls
            write_atomic(file, TOOLS + "\n    def broken(:\n")
            wait_for_wire(tmp_path / "wire.jsonl", "stderr", "failed to load")

    greet = tool_use("mcp__tools__greet", {"name": "Ada"})
    with FakeMessagesAPI([[greet], [greet]], before_turn=break_the_file) as api:
        run_claude(claude, tmp_path, api, "dev", str(file))
    before, after = api.tool_results()
    assert before["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    answer, note = after["content"]
    assert answer == {"type": "text", "text": "Hello, Ada!"}  # the previous version still serves
    assert note["text"].startswith("Note: tools.py failed to load at ")
    assert "SyntaxError" in note["text"] and "(line 10)" in note["text"]


def output_until(argv: list[str], env: dict[str, str], text: str, timeout: float = 30.0) -> str:
    """What a command that does not end by itself (`protomcp logs` follows) printed up to the
    first line holding `text`; it is stopped then."""
    proc = subprocess.Popen(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []
    try:
        while not seen or text not in seen[-1]:
            line = lines.get(timeout=timeout)
            assert line is not None, f"it ended without printing {text!r}:\n" + "".join(seen)
            seen.append(line)
    finally:
        proc.kill()
        proc.wait()
    return "".join(seen)


def test_what_a_tool_prints_in_dev_shows_in_protomcp_logs(claude: Path, tmp_path: Path) -> None:
    """Claude Code shows no printed output (see above); `protomcp logs FILE` does."""
    file = tool_file(tmp_path)
    with FakeMessagesAPI([[tool_use("mcp__tools__greet", {"name": "Ada"})]]) as api:
        run_claude(claude, tmp_path, api, "dev", str(file))
    assert api.tool_results()[0]["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    output_until([*HOST, "logs", str(file), "-n", "100"], claude_env(tmp_path), "greet printed this")


def test_two_claude_code_sessions_each_get_a_dev_host_of_one_file(claude: Path, tmp_path: Path) -> None:
    """Two sessions in one project (two terminals): two `protomcp dev --ui` of one file, both
    running at once, both serve (the playground of the second on another port)."""
    file = tool_file(tmp_path)
    ui_port = str(free_port())  # both ask for it (not the default: other tests may hold that)
    both_connected = threading.Barrier(2, timeout=30)
    apis: list[FakeMessagesAPI] = []
    failures: list[BaseException] = []

    def session(workdir: Path) -> None:
        workdir.mkdir()
        greet = tool_use("mcp__tools__greet", {"name": workdir.name})
        # Claude Code asks the model only once its MCP servers are up: both hosts run now.
        with FakeMessagesAPI([[greet]], before_turn=lambda turn: turn == 0 and both_connected.wait()) as api:
            apis.append(api)
            run_claude(claude, workdir, api, "dev", "--ui", "--ui-port", ui_port, str(file))

    def guarded(workdir: Path) -> None:
        try:
            session(workdir)
        except BaseException as exc:  # reported by the test, not lost in the thread
            failures.append(exc)

    threads = [threading.Thread(target=guarded, args=(tmp_path / name,)) for name in ("Ada", "Bo")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=RUN_TIMEOUT + 30)
    assert not failures, failures
    contents = sorted((api.tool_results()[0]["content"] for api in apis), key=str)
    assert contents == [[{"type": "text", "text": f"Hello, {name}!"}] for name in ("Ada", "Bo")]


def test_discovery_search_meta_tools_are_offered_up_front(claude: Path, tmp_path: Path) -> None:
    call = tool_use("mcp__tools__call_tool", {"name": "greet", "arguments": {"name": "Ada"}})
    with FakeMessagesAPI([[call]]) as api:
        run_claude(claude, tmp_path, api, "run", "--discovery", "search", str(tool_file(tmp_path)))
    offered = {name for name in api.offered_tools(0) if name.startswith("mcp__")}
    assert offered == {"mcp__tools__find_tools", "mcp__tools__get_tool_schema", "mcp__tools__call_tool"}
    assert not [name for name in deferred_tools(api.agent_requests[0]) if name.startswith("mcp__")]
    assert api.tool_results()[0]["content"] == [{"type": "text", "text": "Hello, Ada!"}]
