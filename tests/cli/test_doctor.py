"""`protomcp doctor`: a good file, a broken file, client configs with good and stale entries."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import orjson

from protomcp_host.cli.doctor import Finding, check_installed
from protomcp_host.cli.install import Place, protomcp_command
from tests.support.hosts import EXAMPLES, HOST

HELLO = EXAMPLES / "hello.py"


def test_doctor_on_a_good_and_a_broken_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("from protomcp_sdk import tool\n\nraise ValueError('half-written file')\n")
    env = {**os.environ, "HOME": str(tmp_path)}  # no client configs in this home
    done = subprocess.run(
        [*HOST, "doctor", str(HELLO), str(broken)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert f"Python {sys.version.split()[0]}, protomcp_sdk" in out
    assert f"{HELLO}: 1 tool loaded in" in out
    assert f"{broken} does not load" in out and "ValueError: half-written file" in out
    assert "fix the error above" in out and "1 problem found." in out


def test_doctor_passes_when_everything_is_fine(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run(
        [*HOST, "doctor", str(HELLO)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout
    assert "No problems found." in done.stdout


def test_doctor_finds_stale_client_entries(tmp_path: Path) -> None:
    place = Place("linux", tmp_path, {})
    config = tmp_path / ".config" / "Claude" / "claude_desktop_config.json"
    config.parent.mkdir(parents=True)
    command = protomcp_command()
    gone_python = tmp_path / "old-venv" / "bin" / "protomcp"
    gone_python.parent.mkdir(parents=True)
    gone_python.write_text(f"#!{tmp_path / 'old-venv' / 'bin' / 'python'}\nimport sys\n")
    servers = {
        "good": {"command": command[0], "args": [*command[1:], "run", str(HELLO)]},
        "moved": {"command": command[0], "args": [*command[1:], "dev", str(tmp_path / "moved.py")]},
        "relative": {"command": "protomcp", "args": ["run", "tools.py"]},
        "old-venv": {"command": str(gone_python), "args": ["run", str(HELLO)]},
        "someone-else": {"command": "/usr/bin/other", "args": ["x.py"]},
    }
    config.write_bytes(orjson.dumps({"mcpServers": servers}))
    findings = installed_findings(place)
    texts = {f.text: f for f in findings}
    assert any(f.ok and "'good'" in f.text for f in findings)
    moved = next(f for t, f in texts.items() if "'moved'" in t)
    assert not moved.ok and f"{tmp_path / 'moved.py'} does not exist" in moved.text
    assert "protomcp install claude-desktop FILE... --name moved --force" in moved.fix
    assert any(not f.ok and "'relative'" in f.text and "not an absolute path" in f.text for f in findings)
    assert any(not f.ok and "'old-venv'" in f.text and "no longer exists" in f.text for f in findings)
    assert not any("someone-else" in f.text for f in findings)  # not ours: not judged


def installed_findings(place: Place) -> list[Finding]:
    async def collect() -> list[Finding]:
        return [finding async for finding in check_installed(place, sys.executable, {})]

    return anyio.run(collect)


def test_doctor_does_not_pass_a_vscode_entry_whose_file_does_not_load(tmp_path: Path) -> None:
    """Issue 30: the entry was reported "ok" (and the load failure apart, as another finding)."""
    broken = tmp_path / "broken.py"
    broken.write_text("from protomcp_sdk import tool\nimport not_a_module_anywhere\n")
    config = tmp_path / ".config" / "Code" / "User" / "mcp.json"
    config.parent.mkdir(parents=True)
    command = protomcp_command()
    entry = {"type": "stdio", "command": command[0], "args": [*command[1:], "run", str(broken)]}
    config.write_bytes(orjson.dumps({"servers": {"broken": entry}}))
    [finding] = installed_findings(Place("linux", tmp_path, {}))
    assert not finding.ok and finding.text.startswith(f"VS Code 'broken' ({config}): {broken} does not load")
    assert "No module named 'not_a_module_anywhere'" in finding.detail and "restart the client" in finding.fix


def test_doctor_loads_an_entry_with_its_own_interpreter(tmp_path: Path) -> None:
    """The entry's --python runs its tool files, not doctor's interpreter."""
    missing = tmp_path / "gone" / "python"
    config = tmp_path / ".cursor" / "mcp.json"
    config.parent.mkdir(parents=True)
    command = protomcp_command()
    entry = {"command": command[0], "args": [*command[1:], "run", "--python", str(missing), str(HELLO)]}
    config.write_bytes(orjson.dumps({"mcpServers": {"hello": entry}}))
    [finding] = installed_findings(Place("linux", tmp_path, {}))
    assert not finding.ok and f"{HELLO} does not load" in finding.text and str(missing) in finding.detail


def test_doctor_reports_load_warnings(tmp_path: Path) -> None:
    file = tmp_path / "loose.py"
    file.write_text("from protomcp_sdk import tool\n\n@tool\ndef f(x) -> str:\n    return str(x)\n")
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run(
        [*HOST, "doctor", str(file)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert "loose.py: 1 tool loaded" in done.stdout
    assert "loose.py: warning: tool 'f': parameter 'x' has no type annotation" in done.stdout
