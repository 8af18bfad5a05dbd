"""`protomcp doctor`: check the interpreter, tool files and client configs, and say what to do
about every problem found."""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protomcp_host import __version__
from protomcp_host.cli.install import (
    CONFIG_FILES,
    ConfigFile,
    InstallError,
    Place,
    is_protomcp_entry,
    read_config,
)
from protomcp_host.processes.distribution import DIST_NAME, install_command

# Claude Code keeps user-scope servers in ~/.claude.json ("mcpServers"); doctor only reads it.
CLAUDE_CODE = ConfigFile("claude-code", "Claude Code", "mcpServers", lambda p: p.home / ".claude.json")


@dataclass
class Finding:
    ok: bool
    text: str
    fix: str = ""
    detail: str = ""


def check_python(python: str) -> list[Finding]:
    """The interpreter that runs the tools: its version, and whether protomcp_sdk imports there."""
    probe = "import sys, protomcp_sdk; print(sys.version.split()[0], protomcp_sdk.__version__)"
    try:
        done = subprocess.run(
            [python, "-c", probe], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [Finding(False, f"cannot run {python}: {exc}", "pass --python the path of a Python 3.11+")]
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return [
            Finding(
                False,
                f"protomcp_sdk is not importable by {python} ({last})",
                f"install {DIST_NAME} there: {install_command(python)}",
            )
        ]
    version, sdk = done.stdout.split()
    findings = [Finding(True, f"{python}: Python {version}, protomcp_sdk {sdk} (host {__version__})")]
    if tuple(int(part) for part in version.split(".")[:2]) < (3, 11):
        findings.append(Finding(False, f"Python {version} is too old", "use Python 3.11 or newer"))
    return findings


@contextlib.contextmanager
def environment(env: Mapping[str, str] | None) -> Iterator[None]:
    """os.environ with `env` over it (the tool processes inherit it), restored afterwards."""
    saved = {key: os.environ.get(key) for key in env or {}}
    os.environ.update(env or {})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


async def check_file(file: Path, python: str, env: Mapping[str, str] | None = None) -> list[Finding]:
    """Load a tool file in the real host and tool process (with `env` set, as a client would);
    time it, count tools, keep warnings."""
    with environment(env):
        return await _check_file(file, python)


async def _check_file(file: Path, python: str) -> list[Finding]:
    from protomcp_host.app import Host
    from protomcp_host.calls.advice import no_description
    from protomcp_host.processes.launch import StartupError, label_of, tool_files
    from protomcp_host.settings import RunSettings
    from protomcp_host.transports.direct import RequestFailed, direct_client, list_tools

    lines: list[str] = []
    start = time.perf_counter()
    try:
        host = Host(tool_files([file]), RunSettings(python=python), stderr=lines.append)
        async with direct_client(host) as request:
            tools = await list_tools(request)
    except (StartupError, RequestFailed) as exc:
        return [
            Finding(
                False,
                f"{file} does not load",
                "fix the error above, then run `protomcp doctor` again",
                detail=str(exc),
            )
        ]
    elapsed = (time.perf_counter() - start) * 1000
    noun = "tool" if len(tools) == 1 else "tools"
    findings = [Finding(True, f"{file}: {len(tools)} {noun} loaded in {elapsed:.0f} ms")]
    said = f"protomcp: warning: {label_of(file)}: "  # how the host says the load warnings
    advice = no_description("\0").split("\0")[1]  # a tool without a description: advice, no problem
    for line in lines:
        if line.startswith(said) and not line.endswith(advice):  # likely mistakes (the SDK's)
            text = "warning: " + line[len(said) :]
            findings.append(Finding(False, f"{file.name}: {text}", "see the suggestion in the warning"))
    return findings


async def check_installed(
    place: Place, python: str, checked: dict[Path, list[Finding]]
) -> AsyncIterator[Finding]:
    """Every protomcp entry in every known client config (command, interpreter, tool files),
    and the tool files it starts loaded as the client would (its environment, its interpreter):
    an entry is ok only once they load. `checked`: files checked already (with `python`)."""
    loads: dict[tuple[Path, str, tuple[tuple[str, str], ...]], list[Finding]] = {}
    for client in [*CONFIG_FILES.values(), CLAUDE_CODE]:
        path = client.path(place)
        if not path.exists():
            continue
        try:
            servers = read_config(path, client.yaml).get(client.key) or {}
        except InstallError as exc:
            yield Finding(False, str(exc), "fix the file by hand")
            continue
        for name, stored in servers.items() if isinstance(servers, dict) else ():
            entry = client.entry(stored)
            if not is_protomcp_entry(entry):
                continue
            findings = _check_entry(client, path, name, entry)
            if not all(f.ok for f in findings):
                for finding in findings:
                    yield finding
                continue
            where = f"{client.title} '{name}' ({path})"
            given_env = entry.get("env")
            env = {str(k): str(v) for k, v in given_env.items()} if isinstance(given_env, dict) else {}
            interpreter = _entry_python(entry) or python
            failed = False
            for file in map(Path, _entry_files(entry)):
                key = (file, interpreter, tuple(sorted(env.items())))
                if key not in loads:
                    given = checked.get(file) if interpreter == python and not env else None
                    loads[key] = given if given is not None else await check_file(file, interpreter, env)
                for finding in loads[key]:
                    if not finding.ok:
                        failed = True
                        fix = finding.fix.replace("run `protomcp doctor` again", "restart the client")
                        yield Finding(False, f"{where}: {finding.text}", fix, finding.detail)
            if not failed:
                yield findings[0]  # the entry's one "ok" line


def _entry_python(entry: dict[str, Any]) -> str | None:
    """The interpreter an entry runs its tool files with: its --python, else the one that runs
    protomcp (`python -m protomcp_host`, or a console script's #! line)."""
    args = [str(a) for a in entry.get("args", [])]
    if "--python" in args[:-1]:
        return args[args.index("--python") + 1]
    command = Path(str(entry.get("command", "")))
    if args[:2] == ["-m", "protomcp_host"]:
        return str(command)
    return _script_interpreter(command) if command.is_file() else None


def installed_upstreams(place: Place) -> list[tuple[str, Any]]:
    """The upstreams the protomcp entries of client configs serve, with where each is."""
    found: list[tuple[str, Any]] = []
    for client in [*CONFIG_FILES.values(), CLAUDE_CODE]:
        path = client.path(place)
        try:
            servers = read_config(path, client.yaml).get(client.key) or {} if path.exists() else {}
        except InstallError:
            continue
        for name, stored in servers.items() if isinstance(servers, dict) else ():
            if is_protomcp_entry(entry := client.entry(stored)):
                found += [(f"{client.title} '{name}' ({path})", spec) for spec in entry_upstreams(entry)]
    return found


def _valued_options(verb: str) -> set[str]:
    """The options of `run` or `dev` that take a value (which is then not a tool file)."""
    import click

    from protomcp_host.cli.serve_commands import dev, run

    command = run if verb == "run" else dev
    return {
        name
        for param in command.params
        if isinstance(param, click.Option) and not param.is_flag and not param.count
        for name in param.opts
    }


def _entry_files(entry: dict[str, Any]) -> list[str]:
    args = [str(a) for a in entry.get("args", [])]
    verb = next((i for i, a in enumerate(args) if a in ("run", "dev")), None)
    if verb is None:
        return []
    rest = args[verb + 1 :]
    valued = _valued_options(args[verb])
    return [a for i, a in enumerate(rest) if not a.startswith("-") and (i == 0 or rest[i - 1] not in valued)]


def _check_entry(client: ConfigFile, path: Path, name: str, entry: dict[str, Any]) -> list[Finding]:
    where = f"{client.title} '{name}' ({path})"
    known = _entry_files(entry)
    sources = " ".join(known) if known and all(Path(f).exists() for f in known) else "FILE..."
    reinstall = f"reinstall it: protomcp install {client.name} {sources} --name {name} --force"
    problems: list[Finding] = []
    command = Path(entry["command"])
    if not command.is_absolute():
        problems.append(Finding(False, f"{where}: command {command} is not an absolute path", reinstall))
    elif not command.exists():
        problems.append(Finding(False, f"{where}: command {command} does not exist", reinstall))
    else:
        interpreter = _script_interpreter(command)
        if interpreter is not None and not Path(interpreter).exists():
            problems.append(
                Finding(False, f"{where}: {command} runs {interpreter}, which no longer exists", reinstall)
            )
    args = [str(a) for a in entry.get("args", [])]
    for file in _entry_files(entry):
        if not Path(file).is_absolute():
            problems.append(Finding(False, f"{where}: tool file {file} is not an absolute path", reinstall))
        elif not Path(file).exists():
            problems.append(Finding(False, f"{where}: tool file {file} does not exist", reinstall))
    return problems or [Finding(True, f"{where}: {' '.join([str(command), *args])}")]


def _script_interpreter(command: Path) -> str | None:
    """The interpreter on a console script's #! line (None for binaries and other files)."""
    try:
        with command.open("rb") as f:
            first = f.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    parts = first[2:].decode(errors="replace").split()
    if not parts or parts[0].endswith("/env"):
        return None
    return parts[0]


def entry_upstreams(entry: dict[str, Any]) -> list[Any]:
    """The upstreams (UpstreamSpec) a client config entry serves; [] when it names none or
    they do not parse."""
    from protomcp_host.upstream.spec import SpecError, parse_specs

    args = [str(a) for a in entry.get("args", [])]
    found: dict[str, list[str]] = {"--upstream": [], "--upstream-token-env": [], "--upstream-prefix": []}
    for flag, value in itertools.pairwise(args):
        if flag in found:
            found[flag].append(value)
    try:
        return parse_specs(*found.values())
    except SpecError:
        return []


async def diagnose(
    files: list[Path],
    python: str,
    place: Place,
    out: Callable[[Finding], None],
    upstreams: Sequence[Any] = (),
) -> int:
    """Run every check, report each finding as it is made; return the number of problems."""
    from protomcp_host.cli.upstreams import check_upstream

    checks: list[Finding] = [*check_python(python)]
    for finding in checks:
        out(finding)
    loaded: dict[Path, list[Finding]] = {}
    for file in files:
        loaded[file.resolve()] = await check_file(file.resolve(), python)
        for finding in loaded[file.resolve()]:
            out(finding)
            checks.append(finding)
    for spec in upstreams:
        finding = Finding(*await check_upstream(spec))
        out(finding)
        checks.append(finding)
    async for finding in check_installed(place, python, loaded):  # what the clients start must load
        out(finding)
        checks.append(finding)
    checked = {spec for spec in upstreams}
    for where, spec in installed_upstreams(place):  # the upstreams clients start must answer too
        if spec in checked:
            continue
        checked.add(spec)
        finding = Finding(*await check_upstream(spec))
        if not finding.ok:
            finding.text = f"{where}: {finding.text}"
            out(finding)
            checks.append(finding)
    return sum(not f.ok for f in checks)


def interpreter_line() -> str:
    return f"protomcp {__version__} on Python {sys.version.split()[0]} ({sys.executable})"
