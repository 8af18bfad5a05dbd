"""`protomcp dev`'s live journal, for `protomcp logs`: what a dev host does (loads and load
errors with their tracebacks, calls and answers, printed output, crashes), as JSON lines in
a per-user runtime folder, because a host an AI client started has a stderr nobody sees.

Per host, named by its pid: `PID.json` (the files it serves, the playground URL once there is
one), `PID.jsonl` (the records; past MAX_BYTES it becomes `PID.jsonl.1`, replacing the one
before, so a host keeps at most twice that), and `PID.lock`, locked while the host runs
(so a host that was killed is not taken for a running one, whatever its pid became).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import orjson

from protomcp_host import __version__

MAX_BYTES = 1 << 20  # one generation of a host's journal
KEEP_STOPPED = 7 * 24 * 3600.0  # seconds the journal of a stopped host is kept
EXCERPT = 300  # characters of a call's arguments or answer kept in its record
MAX_PENDING = 1000  # calls waiting for their answer that a journal remembers


def runtime_dir() -> Path:
    """This user's folder of dev journals: $XDG_RUNTIME_DIR/protomcp/dev, else one in the
    temporary folder named for the user (created private; refused if another user owns it)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    root = Path(base) / "protomcp" if base else Path(tempfile.gettempdir()) / f"protomcp-{uid}"
    folder = root / "dev"
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    folder.mkdir(exist_ok=True, mode=0o700)
    if hasattr(os, "getuid") and root.stat().st_uid != uid:
        raise OSError(f"{root} belongs to another user: not using it for dev journals")
    return folder


# -- the writer: one per dev host ----------------------------------------------------------


class DevJournal:
    def __init__(self, folder: Path, files: list[Path], pid: int | None = None) -> None:
        self.folder = folder
        self.pid = pid or os.getpid()
        self.index = {
            "pid": self.pid,
            "files": [str(file.resolve()) for file in files],
            "started": time.time(),
            "version": __version__,
            "url": None,
        }
        self.path = folder / f"{self.pid}.jsonl"
        self._lock = _hold_lock(folder / f"{self.pid}.lock")
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        self._size = 0
        self._pending: dict[tuple[int, Any], tuple[str, float]] = {}
        self._write_index()
        self.add("start", **self.index)

    def add(self, kind: str, **data: Any) -> None:
        """One record; past MAX_BYTES the journal starts a new generation first. Once closed,
        nothing: a session's wire tap may outlive the journal, and its descriptor number may
        already be another file's."""
        if self._fd < 0:
            return
        line = orjson.dumps({"t": time.time(), "kind": kind, **data}, default=str) + b"\n"
        if self._size and self._size + len(line) > MAX_BYTES:
            os.close(self._fd)
            os.replace(self.path, self.path.with_name(self.path.name + ".1"))
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
            self._size = 0
        os.write(self._fd, line)
        self._size += len(line)

    def set_url(self, url: str) -> None:
        self.index["url"] = url
        self._write_index()

    def close(self) -> None:
        if self._fd < 0:
            return
        self.add("stop")
        self.index["stopped"] = time.time()
        self._write_index()
        os.close(self._fd)
        self._fd = -1
        if self._lock is not None:
            os.close(self._lock)  # (releases the lock)
            self._lock = None

    def _write_index(self) -> None:
        tmp = self.folder / f".{self.pid}.json.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, orjson.dumps(self.index))
        finally:
            os.close(fd)
        os.replace(tmp, self.folder / f"{self.pid}.json")

    # -- what the host tells it ---------------------------------------------------------------
    def host_event(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "playground":
            self.set_url(data["url"])
            self.add(kind, **data)
        elif kind == "loaded":  # the names, not the schemas the playground shows
            kept = {key: data[key] for key in ("label", "initial", "added", "changed", "removed")}
            self.add("loaded", **kept, tools=sorted(data["tools"]))
        else:
            self.add(kind, **data)

    def wire(self, session: int, direction: str, data: bytes, related: bytes | None) -> None:
        """An MCP message of a client session: its tools/call requests and their answers."""
        if (b"tools/call" not in data) if direction == "in" else not self._pending:
            return  # (nothing to record: not worth a parse)
        try:
            message = orjson.loads(data)
        except orjson.JSONDecodeError:
            return
        for one in message if isinstance(message, list) else [message]:
            if isinstance(one, dict):
                self._message(session, direction, one)

    def _message(self, session: int, direction: str, message: dict[str, Any]) -> None:
        key = (session, _hashable(message.get("id")))
        if direction == "in" and message.get("method") == "tools/call":
            params = message.get("params") or {}
            name = str(params.get("name"))
            arguments = _excerpt(orjson.dumps(params.get("arguments") or {}).decode())
            self.add("call", session=session, id=message.get("id"), tool=name, arguments=arguments)
            if len(self._pending) >= MAX_PENDING:
                self._pending.pop(next(iter(self._pending)))
            self._pending[key] = (name, time.monotonic())
        elif direction == "out" and "method" not in message and key in self._pending:
            name, started = self._pending.pop(key)
            ms = round((time.monotonic() - started) * 1000, 1)
            answer = _answer_text(message)
            self.add("answer", session=session, id=message.get("id"), tool=name, ms=ms, **answer)


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, type(None))) else repr(value)


def _excerpt(text: str) -> str:
    return text if len(text) <= EXCERPT else text[: EXCERPT - 1] + "…"


def _answer_text(message: dict[str, Any]) -> dict[str, Any]:
    """A response's outcome: error (bool) and an excerpt of its text."""
    if "error" in message:
        error = message["error"] if isinstance(message["error"], dict) else {}
        return {"error": True, "text": _excerpt(f"{error.get('code')}: {error.get('message')}")}
    result = message["result"] if isinstance(message.get("result"), dict) else {}
    texts = [
        str(block.get("text"))
        for block in result.get("content") or []
        if isinstance(block, dict) and block.get("type") == "text"
    ]
    return {"error": bool(result.get("isError")), "text": _excerpt("\n".join(texts))}


def _hold_lock(path: Path) -> int | None:
    """An exclusive lock held as long as the returned descriptor is open (None without fcntl)."""
    try:
        import fcntl
    except ImportError:
        return None
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def sweep(folder: Path, now: float | None = None) -> None:
    """Forget the journals of hosts that stopped more than KEEP_STOPPED ago."""
    now = time.time() if now is None else now
    for host in running_or_not(folder):
        if not host.running and now - host.last_seen > KEEP_STOPPED:
            for name in (f"{host.pid}.json", f"{host.pid}.jsonl", f"{host.pid}.jsonl.1", f"{host.pid}.lock"):
                with contextlib.suppress(OSError):
                    (folder / name).unlink()


async def journal_companion(
    host: Any, shutdown: anyio.Event, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """An `app.serve` companion of `dev`: the journal, from before the files load until the host
    stops. A journal that cannot be written is said once on stderr and the host serves anyway.

    On `shutdown` the journal says the host is stopping, and stays open: the calls in flight
    finish in the drain that follows, and their answers pass its wire tap. It closes when the
    host has stopped (the companion is cancelled then)."""
    try:
        folder = runtime_dir()
        sweep(folder)
        journal = DevJournal(folder, host.files)
    except OSError as exc:
        host.stderr(f"protomcp: no dev journal for `protomcp logs`: {exc}")
        task_status.started()
        return
    host.watchers.append(journal.host_event)
    host.connections.add_wire_tap(journal.wire)
    try:
        task_status.started()
        await shutdown.wait()
        journal.add("stopping")
        await anyio.sleep_forever()
    finally:
        host.watchers.remove(journal.host_event)
        journal.close()


# -- the reader: `protomcp logs` --------------------------------------------------------------


@dataclass
class DevHost:
    """A dev host's journal, as its index says."""

    pid: int
    files: list[str]
    started: float
    url: str | None
    running: bool
    last_seen: float  # when it stopped, or for a running one its start
    journal: Path


def running_or_not(folder: Path) -> list[DevHost]:
    """Every dev host with a journal in `folder`, oldest first."""
    hosts = []
    for index in folder.glob("*.json"):
        try:
            data = orjson.loads(index.read_bytes())
            pid = int(data["pid"])
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
        running = _locked(folder / f"{pid}.lock")
        stopped = data.get("stopped")
        hosts.append(
            DevHost(
                pid,
                list(data.get("files") or []),
                float(data.get("started") or 0),
                data.get("url"),
                running,
                float(stopped or index.stat().st_mtime),
                folder / f"{pid}.jsonl",
            )
        )
    return sorted(hosts, key=lambda host: host.started)


def _locked(path: Path) -> bool:
    """Whether a running host holds this lock file."""
    try:
        import fcntl
    except ImportError:
        return path.exists()
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


class Follower:
    """Reads one host's journal from where it was, across generations (like `tail -F`)."""

    def __init__(self, path: Path, tail: int | None = None) -> None:
        self.path = path
        self._file: Any = None
        self._inode = 0
        self._partial = b""
        self._skip_to_tail = tail

    def read(self) -> Iterator[dict[str, Any]]:
        """The records written since the last read (with `tail`, first only the last `tail`)."""
        lines = self._lines()
        if self._skip_to_tail is not None:
            lines = lines[-self._skip_to_tail :] if self._skip_to_tail else []
            self._skip_to_tail = None
        for line in lines:
            with contextlib.suppress(orjson.JSONDecodeError):
                yield orjson.loads(line)

    def _lines(self) -> list[bytes]:
        data = b""
        try:
            inode = self.path.stat().st_ino
        except OSError:
            inode = self._inode
        if self._file is not None and inode != self._inode:  # a new generation: finish the old one
            data += self._file.read()
            self._file.close()
            self._file = None
        if self._file is None:
            try:
                self._file = open(self.path, "rb")  # noqa: SIM115 (kept open between reads)
            except OSError:
                return []
            self._inode = os.fstat(self._file.fileno()).st_ino
        data += self._file.read()
        *lines, self._partial = (self._partial + data).split(b"\n")
        return [line for line in lines if line]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
