"""The `protomcp` command line: version, help, list and call (each test runs the real command)."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[2]
HELLO = ROOT / "examples" / "tools" / "hello.py"
PROTOMCP = [sys.executable, "-m", "protomcp_host"]


def protomcp(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROTOMCP, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def failing_tools(tmp_path: Path) -> Path:
    path = tmp_path / "failing.py"
    path.write_text(
        "from protomcp_sdk import ToolError, tool\n"
        "\n"
        "@tool\n"
        "def boom(x: int) -> str:\n"
        '    """Always fails."""\n'
        '    raise ToolError("the boom went off", code="BOOM")\n'
        "\n"
        "@tool\n"
        "def divide(n: int) -> int:\n"
        '    """One divided by n."""\n'
        "    return 1 // n\n"
    )
    return path


def test_version_is_the_installed_distributions() -> None:
    """pyproject.toml writes the version once; everything else reads the installed metadata."""
    import protomcp_host
    import protomcp_sdk

    version = importlib.metadata.version("protomcp-tools")
    assert version == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"], (
        "the installed metadata is stale: reinstall (pip install -e .)"
    )
    assert protomcp_host.__version__ == protomcp_sdk.__version__ == version
    proc = protomcp("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"protomcp, version {version}\n"


def test_the_version_is_the_one_importlib_metadata_reads(tmp_path: Path) -> None:
    from protomcp_sdk.wire import version

    assert version._dist_info_version(sys.path) == importlib.metadata.version("protomcp-tools")
    (tmp_path / "protomcp_tools-9.8.7.dist-info").mkdir()
    (tmp_path / "protomcp_tools_extra-1.0.dist-info").mkdir()
    assert version._dist_info_version([str(tmp_path / "absent"), str(tmp_path)]) == "9.8.7"


def test_the_version_falls_back_when_the_distribution_is_not_installed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from protomcp_sdk.wire import version

    monkeypatch.setattr(version, "_dist_info_version", lambda entries: None)  # not installed
    expected = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    version.installed_version.cache_clear()
    try:
        assert version.installed_version() == expected  # a source checkout: its pyproject.toml
        version.installed_version.cache_clear()
        monkeypatch.setattr(version, "_PYPROJECT", tmp_path / "pyproject.toml")  # none at all
        assert version.installed_version() == version.UNKNOWN_VERSION
    finally:
        version.installed_version.cache_clear()


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ((), ["Commands:", "run", "list", "call", "dev", "install", "doctor", "plugins", "--version"]),
        (
            ("run",),
            ["[FILES]...", "Serve the tools in FILES", "--python", "--call-timeout", "--module", "--plugin"],
        ),
        (
            ("list",),
            ["[FILES]...", "name, description", "--json", "--python", "--module", "--plugin"],
        ),
        (
            ("call",),
            [
                "[FILE] TOOL",
                "Call TOOL from FILE",
                "--args",
                "JSON object",
                "--json",
                "exit status 1",
                "--plugin",
            ],
        ),
    ],
)
def test_help(command: tuple[str, ...], expected: list[str]) -> None:
    proc = protomcp(*command, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Usage: ")
    for text in expected:
        assert text in proc.stdout, f"{text!r} missing from `{' '.join(command)} --help`"


def test_list(tmp_path: Path) -> None:
    proc = protomcp("list", str(HELLO))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello(name: str)\n    Greet someone by name.\n"


def test_list_json() -> None:
    proc = protomcp("list", str(HELLO), "--json")
    assert proc.returncode == 0, proc.stderr
    assert orjson.loads(proc.stdout) == {
        "tools": [
            {
                "name": "hello",
                "description": "Greet someone by name.",
                "inputSchema": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            }
        ]
    }


def test_call_prints_the_greeting() -> None:
    proc = protomcp("call", str(HELLO), "hello", "--args", '{"name":"Ada"}')
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Hello, Ada!\n"


def test_call_json() -> None:
    proc = protomcp("call", str(HELLO), "hello", "--args", '{"name":"Ada"}', "--json")
    assert proc.returncode == 0, proc.stderr
    assert orjson.loads(proc.stdout) == {
        "content": [{"type": "text", "text": "Hello, Ada!"}],
        "isError": False,
    }


def test_tool_error_exits_1_with_the_text(failing_tools: Path) -> None:
    proc = protomcp("call", str(failing_tools), "boom", "--args", '{"x": 1}')
    assert proc.returncode == 1
    assert "the boom went off" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_exception_in_a_tool_exits_1_naming_it(failing_tools: Path) -> None:
    proc = protomcp("call", str(failing_tools), "divide", "--args", '{"n": 0}')
    assert proc.returncode == 1
    assert "ZeroDivisionError" in proc.stdout
    assert "divide" in proc.stdout


def test_invalid_arguments_exit_1_naming_the_field() -> None:
    proc = protomcp("call", str(HELLO), "hello")
    assert proc.returncode == 1
    assert proc.stdout == "Invalid arguments for tool 'hello': 'name' is a required property\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("{bad", "Invalid value for --args: not valid JSON"),
        ("[1, 2]", "Invalid value for --args: must be a JSON object"),
    ],
)
def test_bad_args_exit_2_with_a_clear_message(args: str, message: str) -> None:
    proc = protomcp("call", str(HELLO), "hello", "--args", args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr


def test_unknown_tool_is_a_one_line_error() -> None:
    proc = protomcp("call", str(HELLO), "nosuch")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == "Error: Unknown tool: nosuch"
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", ["list", "call"])
def test_missing_file(tmp_path: Path, command: str) -> None:
    missing = tmp_path / "nope.py"
    args = [command, str(missing)] + (["hello"] if command == "call" else [])
    proc = protomcp(*args)
    assert proc.returncode != 0
    assert "no such file" in proc.stderr
    assert str(missing) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_syntax_error_in_the_tool_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from protomcp_sdk import tool\n\ndef broken(:\n    pass\n")
    proc = protomcp("list", str(bad))
    assert proc.returncode != 0
    assert "SyntaxError" in proc.stderr
    assert "bad.py" in proc.stderr
    assert "line 3" in proc.stderr
    assert proc.stderr.startswith("Error: ")  # a readable error, not a host traceback
    assert "ExceptionGroup" not in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("files", [["tools.py"], ["a.py", "folder", "b.py"]])
def test_a_plain_run_is_served_with_the_settings_the_run_command_makes(
    files: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`protomcp run FILE...` is served without click (cli/entry.py -> serving.serve_plain): it
    makes the same RunSettings as the click command given the same words."""
    from click.testing import CliRunner

    from protomcp_host.cli import serving
    from protomcp_host.cli.main import main
    from protomcp_host.settings import RunSettings

    seen: list[RunSettings] = []
    monkeypatch.setattr(serving, "serve", seen.append)
    result = CliRunner().invoke(main, ["run", *files])
    assert result.exit_code == 0, result.output
    serving.serve_plain(files)
    assert len(seen) == 2 and seen[0] == seen[1]
    assert seen[0] == RunSettings(files=tuple(map(Path, files)))
