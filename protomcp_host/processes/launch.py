"""Finding tool files and starting tool processes. Deliberately light on imports: the CLI
starts tool processes before it imports the rest of the host, so both boot in parallel."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from protomcp_host.processes.settings import LaunchSettings
from protomcp_sdk.wire import tracing
from protomcp_sdk.wire.env import FD_ENV, HOST_PID_ENV, SPOOL_DIR_ENV, SPOOL_ENV, SPOOL_PREFIX
from protomcp_sdk.wire.paths import package_of

# The requestState key (calls/rounds.py), a secret the hosts behind one name share so that each
# accepts the others' state: never passed on to the processes they start, which run code the host
# does not control.
STATE_KEY_ENV = "PROTOMCP_STATE_KEY"


class StartupError(Exception):
    """The host cannot start: a tool file failed to load, a name clash, a bad path..."""


def tool_files(paths: list[Path]) -> list[Path]:
    """Expand folders to the tool files in them (not `_*.py`, not the helper modules other files
    of the folder import: see folders.py); check that every file exists."""
    files: list[Path] = []
    for path in paths:
        path = path.resolve()
        if path.is_dir():
            found = sorted(p for p in path.glob("*.py") if not p.name.startswith(("_", ".")))
            if not found:
                raise StartupError(f"{path}: no tool files (*.py) in this folder")
            from protomcp_host.processes.folders import without_helpers

            files.extend(without_helpers(found))
        elif path.is_file():
            files.append(path)
        else:
            raise StartupError(f"{path}: no such file or folder")
    labels = [label_of(f) for f in files]
    if len(set(labels)) != len(labels):
        # Labels name tool processes in messages; keep them unambiguous.
        raise StartupError("two tool files share a file name: " + ", ".join(sorted(labels)))
    return files


def label_of(file: Path) -> str:
    """How messages name a tool file: its file name, or its module name inside a package
    (two plugins may both have a tools.py)."""
    package = package_of(file)
    return package[1] if package else file.name


PLAIN_LAUNCH = LaunchSettings()  # this interpreter, the host's whole environment (but the requestState key)


@dataclass(slots=True)
class Launched:
    """A started tool process and the host's ends of its two frame pipes."""

    process: subprocess.Popen[bytes]
    to_child: int
    from_child: int
    spool_dir: str = ""  # the only directory whose files the host accepts from it ("" = none)


def spool_dir_for_child() -> str:
    """A new, unguessable directory name on a memory file system (PROTOMCP_SPOOL_DIR, default
    /dev/shm) for one tool process to hand large results over in; it creates it on first use.
    "" when there is no such file system (results then travel inline). The name carries the
    host's pid, so folders left by a host that was killed are found and removed later."""
    root = os.environ.get(SPOOL_DIR_ENV, "/dev/shm")
    if not root or not os.path.isdir(root) or not os.access(root, os.W_OK):
        return ""
    root = os.path.abspath(root)
    global _swept
    if not _swept:
        _swept = True
        sweep_spool_dirs(root)
    return os.path.join(root, f"{SPOOL_PREFIX}{os.getpid()}-{os.urandom(8).hex()}")


_swept = False


def sweep_spool_dirs(root: str) -> None:
    """Remove spool folders of ours whose host is gone (a SIGKILLed host cannot clean up)."""
    import shutil
    import stat

    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        pid, dash, _ = name.removeprefix(SPOOL_PREFIX).partition("-")
        if not name.startswith(SPOOL_PREFIX) or not dash or not pid.isdigit() or _alive(int(pid)):
            continue
        path = os.path.join(root, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def child_environment(hidden: Collection[str] = ()) -> dict[str, str]:
    """The environment of the processes the host starts: its own, minus the variables it reads
    secrets from (`hidden`, e.g. what --auth-token-env names, and the requestState key)."""
    return {name: value for name, value in os.environ.items() if name not in hidden and name != STATE_KEY_ENV}


_prestarted: dict[Path, Launched] = {}


def prestart(paths: list[str]) -> None:
    """Start the tool processes of `protomcp run PATHS...` (with this interpreter) before the
    CLI is imported; the CLI's launch() takes them. Any problem is left to the CLI to report:
    it launches, and explains, as if nothing had been started (a process started here that
    it does not take dies with this one)."""
    try:
        for file in tool_files([Path(path) for path in paths]):
            _prestarted[file] = launch(file)
    except (StartupError, OSError):
        pass


def end_prestart() -> None:
    """Stop what prestart started and the CLI did not take (none, unless they disagree)."""
    while _prestarted:
        _, launched = _prestarted.popitem()
        launched.process.kill()
        launched.process.communicate()  # (reaps it, closes its output pipes)
        for fd in (launched.to_child, launched.from_child):
            os.close(fd)


def launch(file: Path, how: LaunchSettings = PLAIN_LAUNCH, *, standby: bool = False) -> Launched:
    """Start `python -m protomcp_sdk FILE` (`how.python`) with its frame pipes, without the
    variables `how.hidden_env` names in its environment; raises OSError."""
    if how == PLAIN_LAUNCH and not standby and file in _prestarted:
        return _prestarted.pop(file)  # (prestart hides only the requestState key)
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()
    env = child_environment(how.hidden_env)
    env[FD_ENV] = f"{to_child_r},{from_child_w}"
    passed = [to_child_r, from_child_w]
    if tracing.console_wanted():  # its console spans go where the host's own go, once (wire/tracing.py)
        try:
            passed.append(os.dup(2))
            env[tracing.CONSOLE_FD_ENV] = str(passed[-1])
        except OSError:  # no stderr at all: its own stderr then
            pass
    env["PYTHONUNBUFFERED"] = "1"
    env[HOST_PID_ENV] = str(os.getpid())
    env[SPOOL_ENV] = spool_dir = spool_dir_for_child()
    argv = [how.python, "-m", "protomcp_sdk", *(["--standby"] if standby else []), str(file)]
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=passed,
            env=env,
            start_new_session=True,
            cwd=str(file.parent),
        )
    except OSError:
        os.close(to_child_w)
        os.close(from_child_r)
        raise
    finally:
        for fd in passed:
            os.close(fd)
    return Launched(process, to_child_w, from_child_r, spool_dir)


def module_docstring(file: Path) -> str:
    """A tool file's module docstring, read without running the file ("" if none or unreadable).
    Only its first statement is tokenized: parsing the whole file costs ~30 ms at 1,000 tools."""
    import ast
    import inspect
    import tokenize

    strings: list[str] = []
    try:
        with file.open("rb") as source:
            for token in tokenize.tokenize(source.readline):
                if token.type == tokenize.STRING:
                    strings.append(token.string)  # (adjacent literals are one string)
                elif token.type in (tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.OP) or strings:
                    break
                elif token.type not in (tokenize.ENCODING, tokenize.COMMENT, tokenize.NL):
                    return ""  # the first statement is not a string
            if token.type == tokenize.OP:
                return ""  # an expression that starts with a string: not a docstring
            docstring = ast.literal_eval(" ".join(strings)) if strings else ""
    except (OSError, SyntaxError, ValueError, tokenize.TokenError):
        return ""  # the tool process reports a file that does not load
    return inspect.cleandoc(docstring) if isinstance(docstring, str) else ""
