"""What a new user trips over on the first steps: each test does what the user did."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.hosts import HOST

ADD = """from protomcp_sdk import tool

@tool
def add(a: int, b: int) -> int:
    return a + b
"""


@pytest.fixture
def add_file(tmp_path: Path) -> Path:
    file = tmp_path / "adding.py"
    file.write_text(ADD)
    return file


def run_host(*args: str, timeout: float = 60, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run `protomcp ARGS` to completion; on a hang, stop its whole process group and fail."""
    proc = subprocess.Popen(
        [*HOST, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **kwargs,  # type: ignore[call-overload]
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"protomcp {' '.join(args)} did not exit")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_run_with_stdin_from_dev_null_exits_quietly(add_file: Path) -> None:
    with open(os.devnull, "rb") as devnull:
        done = run_host("run", str(add_file), stdin=devnull)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "PermissionError" not in done.stderr
    assert done.stdout == ""


async def test_http_banner_with_a_token_prints_entries_that_authenticate(add_file: Path) -> None:
    import re
    import shlex

    import orjson

    from tests.support.http import HttpHost, http_session

    host = HttpHost("run", str(add_file), "--auth-token-env", "MY_TOKEN", env={"MY_TOKEN": "s3cret"})
    try:
        line = host.wait_stderr(lambda text: text.startswith('  {"adding"'))
        claude = host.wait_stderr(lambda text: text.startswith("Claude Code: claude mcp add"))
        entry = orjson.loads(line)["adding"]
        # What Cursor and VS Code do with ${env:NAME} in mcp.json, in an environment that has it:
        headers = {
            key: re.sub(r"\$\{env:(\w+)\}", lambda m: {"MY_TOKEN": "s3cret"}[m.group(1)], value)
            for key, value in entry["headers"].items()
        }
        async with http_session(entry["url"], headers=headers) as session:
            assert (await session.call_tool("add", {"a": 1, "b": 2})).content[0].text == "3"
    finally:
        host.terminate()
    # The Claude Code command, as a shell with MY_TOKEN set expands it:
    words = shlex.split(claude.removeprefix("Claude Code: ").replace("$MY_TOKEN", "s3cret"))
    assert words[words.index("--header") + 1] == "Authorization: Bearer s3cret"


SERVED = '''from protomcp_sdk import prompt, resource, tool

@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

@resource("notes://index", name="index")
def index() -> str:
    """All notes."""
    return "a, b"

@resource("notes://{id}", name="note")
def note(id: str) -> str:
    """One note."""
    return id

@prompt
def summarize(topic: str, style: str = "short") -> str:
    """Summarize a topic."""
    return topic
'''

MIDDLEWARE_ONLY = """from protomcp_sdk import middleware

@middleware
async def passing(call, call_next):
    return await call_next(call)
"""


def test_list_shows_resources_templates_and_prompts(tmp_path: Path) -> None:
    import orjson

    file = tmp_path / "served.py"
    file.write_text(SERVED)
    done = run_host("list", str(file))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "add(a: int, b: int)",
        "    Add two numbers.",
        "",
        "Resources:",
        "notes://index  index",
        "    All notes.",
        "",
        "Resource templates:",
        "notes://{id}  note",
        "    One note.",
        "",
        "Prompts:",
        "summarize(topic, style?)",
        "    Summarize a topic.",
    ]
    listed = orjson.loads(run_host("list", str(file), "--json").stdout)
    assert [len(listed[key]) for key in ("tools", "resources", "resourceTemplates", "prompts")] == [
        1,
        1,
        1,
        1,
    ]


def test_a_middleware_file_is_not_warned_about(add_file: Path, tmp_path: Path) -> None:
    guard = tmp_path / "guard.py"
    guard.write_text(MIDDLEWARE_ONLY)
    done = run_host("list", str(add_file), str(guard))
    assert done.returncode == 0 and done.stdout.startswith("add("), done.stderr
    assert "defines no tools" not in done.stderr
    empty = tmp_path / "empty.py"
    empty.write_text("from protomcp_sdk import tool\n\ndef forgot() -> int:\n    return 1\n")
    done = run_host("list", str(add_file), str(empty))
    assert "empty.py defines no tools" in done.stderr  # a file with nothing at all still is


def test_doctor_fix_names_the_tool_file_it_knows(add_file: Path, tmp_path: Path) -> None:
    import orjson

    config = tmp_path / ".cursor" / "mcp.json"
    config.parent.mkdir()
    gone = tmp_path / "old-venv" / "bin" / "protomcp"
    config.write_bytes(
        orjson.dumps({"mcpServers": {"adding": {"command": str(gone), "args": ["run", str(add_file)]}}})
    )
    env = {k: v for k, v in os.environ.items() if k != "XDG_CONFIG_HOME"} | {"HOME": str(tmp_path)}
    done = run_host("doctor", env=env, stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    assert f"reinstall it: protomcp install cursor {add_file} --name adding --force" in done.stdout, (
        done.stdout
    )


BOOM = """from protomcp_sdk import tool

@tool
def boom(x: int) -> int:
    return 1 // x
"""


async def test_one_tool_exception_is_reported_once(tmp_path: Path) -> None:
    """The client gets the error result and one log message; stderr has the traceback once."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    file = tmp_path / "booming.py"
    file.write_text(BOOM)
    logs: list[object] = []

    async def on_log(params: object) -> None:
        logs.append(params)

    params = StdioServerParameters(command=HOST[0], args=[*HOST[1:], "run", str(file)], env=dict(os.environ))
    with (tmp_path / "stderr.txt").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, logging_callback=on_log) as session,
        ):
            await session.initialize()
            result = await session.call_tool("boom", {"x": 0})
            assert result.is_error and "ZeroDivisionError" in result.content[0].text  # type: ignore[union-attr]
            assert (await session.call_tool("boom", {"x": 1})).content[0].text == "1"  # type: ignore[union-attr]
    stderr = (tmp_path / "stderr.txt").read_text()
    assert stderr.count("Traceback") == 1 and stderr.count("ZeroDivisionError") == 1, stderr
    assert len(stderr.splitlines()) <= 8, stderr
    assert len(logs) == 1 and logs[0].level == "debug", logs  # type: ignore[attr-defined]
    assert "ZeroDivisionError" in str(logs[0].data) and "line 5, in boom" in str(logs[0].data)  # type: ignore[attr-defined]


def test_an_unsupported_parameter_type_is_explained_in_our_words(tmp_path: Path) -> None:
    file = tmp_path / "typed.py"
    file.write_text(
        "from protomcp_sdk import tool\n\nclass Point:\n    pass\n\n"
        "@tool\ndef move(to: list[Point]) -> int:\n    return 1\n"
    )
    done = run_host("list", str(file))
    assert done.returncode == 1
    assert "parameter 'to' has type list[Point], which has no JSON Schema" in done.stderr, done.stderr
    assert "a dataclass, a TypedDict or a pydantic model" in done.stderr
    assert "arbitrary_types_allowed" not in done.stderr and "__protomcp_tools__" not in done.stderr


def test_the_guides_testing_example_passes_as_copied(tmp_path: Path) -> None:
    """Copied into a project with no pytest configuration (pytest-asyncio in strict mode), next
    to the guide's own tools.py (it once listed a tool the example did not expect)."""
    snippet = _doc_block("docs/guide/testing.md", "# Testing your tools")
    project = tmp_path / "project"
    project.mkdir()
    (project / "tools.py").write_text(_doc_block("docs/guide/tools.md", "# Writing a tool file") + "\n")
    (project / "test_tools.py").write_text(snippet + "\n")
    env = {**os.environ, "PYTEST_ADDOPTS": ""}
    done = subprocess.run(
        [HOST[0], "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(project), "test_tools.py"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_run_with_stdin_from_dev_null_and_a_broken_file_exits_with_the_error(tmp_path: Path) -> None:
    (tmp_path / "one.py").write_text(ADD)
    (tmp_path / "two.py").write_text(ADD)  # the same tool name: the files do not load
    with open(os.devnull, "rb") as devnull:
        done = run_host("run", str(tmp_path), stdin=devnull, timeout=30)
    assert done.returncode == 1 and "'add' is defined in both" in done.stderr, done.stderr


def test_a_folders_helper_modules_are_served_through_the_files_that_import_them(tmp_path: Path) -> None:
    folder = tmp_path / "served"
    folder.mkdir()
    (folder / "helpers.py").write_text("def double(x: int) -> int:\n    return 2 * x\n")
    (folder / "common.py").write_text(
        "from protomcp_sdk import tool\n\n@tool\ndef shared(x: int) -> int:\n    return x\n"
    )
    (folder / "tools.py").write_text(
        "from protomcp_sdk import tool\nfrom helpers import double\nimport common\n\n"
        "@tool\ndef twice(x: int) -> int:\n    return double(x)\n"
    )
    (folder / "forgotten.py").write_text("def nothing() -> None:\n    pass\n")
    done = run_host("list", str(folder))
    assert done.returncode == 0, done.stderr
    assert [line.split("(")[0] for line in done.stdout.splitlines() if "(" in line] == ["shared", "twice"]
    assert "helpers.py" not in done.stderr and "common.py" not in done.stderr
    assert "forgotten.py defines no tools" in done.stderr  # imported by no one: still a mistake


def test_helper_detection_follows_imports_and_keeps_cycles() -> None:
    import tempfile

    from protomcp_host.processes.folders import without_helpers

    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        sources = {
            "a.py": "from . import b\n",
            "b.py": "import c.sub\n",
            "c.py": "",
            "x.py": "import y\n",
            "y.py": "import x\n",  # a cycle nobody else imports: both served
        }
        for file, text in sources.items():
            (folder / file).write_text(text)
        files = sorted(folder.glob("*.py"))
        assert [f.name for f in without_helpers(files)] == ["a.py", "x.py", "y.py"]


def _doc_block(page: str, heading: str) -> str:
    """The first Python block after `heading` in the documentation page `page`."""
    from tests.support.hosts import ROOT

    text = (ROOT / page).read_text()
    section = text[text.index(heading) :]
    return section[section.index("```python\n") + len("```python\n") : section.index("\n```\n")]


def test_the_guides_lifespan_example_serves_its_state(tmp_path: Path) -> None:
    file = tmp_path / "greeting.py"
    file.write_text(_doc_block("docs/guide/tools.md", "## Lifespan") + "\n")
    done = run_host("call", str(file), "greet", "name=Ada", stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "Hello, Ada!" in done.stdout


def test_the_inspect_json_shape_the_cli_guide_describes(add_file: Path) -> None:
    import json

    done = run_host("inspect", "--json", str(add_file), stdin=subprocess.DEVNULL)
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["version"] == 1 and report["ok"]
    (entry,) = report["files"]
    for key in (
        "label",
        "file",
        "ok",
        "error",
        "tools",
        "resources",
        "resourceTemplates",
        "prompts",
        "completions",
        "middleware",
        "lifespan",
        "rootsHooks",
        "warnings",
    ):
        assert key in entry, key
    assert entry["tools"][0]["name"] == "add"
