"""A minimal MCP client over stdio pipes, built so that the client is never the bottleneck.

Newline-delimited JSON-RPC 2.0 on the child's stdin/stdout, parsed with orjson inside an
:class:`asyncio.SubprocessProtocol` (no StreamReader, no task per message). Responses are
matched to requests by id, so any number of requests may be in flight. :meth:`LeanClient.drive`
runs a closed loop of calls entirely from the data callback: every response immediately
sends the next request, and all requests produced while handling one chunk of stdout go
out in a single write.

The server runs in a new session (its own process group). :meth:`LeanClient.close` closes
stdin, waits a bounded time, then kills the group and every descendant it saw, so no
process is ever left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

PROTOCOL_VERSION = "2025-11-25"

Callback = Callable[[dict[str, Any]], None]

_LIVE_GROUPS: set[int] = set()


class ServerError(Exception):
    """The server failed: it exited, answered with an error, or did not answer in time."""


def kill_all_live_groups() -> None:
    """Last-resort cleanup: SIGKILL every process group this module started and did not close."""
    for pgid in list(_LIVE_GROUPS):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        _LIVE_GROUPS.discard(pgid)


# --------------------------------------------------------------------------- /proc helpers


def _proc_stat(pid: int) -> tuple[int, int] | None:
    """(ppid, starttime) of a process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The command name may contain spaces and parentheses: split after the last ')'.
    fields = data[data.rfind(b")") + 2 :].split()
    return int(fields[1]), int(fields[19])


def descendants(root: int) -> list[int]:
    """The pids of ``root`` and all its descendants (scan of /proc by parent pid)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = _proc_stat(int(name))
        if st is not None:
            children.setdefault(st[0], []).append(int(name))
    out: list[int] = []
    todo = [root]
    while todo:
        pid = todo.pop()
        if _proc_stat(pid) is None:
            continue
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def _status_kb(pid: int, key: bytes) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_memory_kb(root: int) -> tuple[int, int, int]:
    """(sum of VmRSS, sum of PSS, number of processes) over ``root`` and its descendants."""
    pids = descendants(root)
    return (
        sum(_status_kb(p, b"VmRSS:") for p in pids),
        sum(_pss_kb(p) for p in pids),
        len(pids),
    )


_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_ticks(pid: int) -> int:
    """utime + stime of one process, in clock ticks (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return 0
    fields = data[data.rfind(b")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


def tree_cpu_s(pids: Sequence[int]) -> float:
    """CPU seconds (user + system) used so far by the given processes, summed."""
    return sum(_cpu_ticks(p) for p in pids) / _TICKS


# --------------------------------------------------------------------------- protocol


class _Protocol(asyncio.SubprocessProtocol):
    def __init__(self, client: LeanClient) -> None:
        self._client = client
        self._partial: list[bytes] = []
        self._err_partial = b""

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self._stdout(data)
        else:
            self._stderr(data)

    def _stdout(self, data: bytes) -> None:
        parts = data.split(b"\n")
        if len(parts) == 1:
            self._partial.append(data)
            return
        client = self._client
        first = parts[0]
        if self._partial:
            self._partial.append(first)
            first = b"".join(self._partial)
            self._partial = []
        client._handle_line(first)
        for line in parts[1:-1]:
            client._handle_line(line)
        if parts[-1]:
            self._partial.append(parts[-1])
        client.flush()

    def _stderr(self, data: bytes) -> None:
        text = self._err_partial + data
        lines = text.split(b"\n")
        self._err_partial = lines.pop()[-4096:]
        for line in lines:
            self._client.stderr_tail.append(line.decode("utf-8", "replace")[:500])

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self._client._stdout_closed()

    def process_exited(self) -> None:
        self._client._process_exited()


class _Driver:
    """A closed loop of requests: ``window`` in flight until ``total`` are sent or time is up."""

    def __init__(
        self,
        client: LeanClient,
        make_line: Callable[[int], bytes],
        total: int,
        window: int,
        deadline: float,
        check: Callable[[dict[str, Any]], bool],
    ) -> None:
        self.client = client
        self.make_line = make_line
        self.total = total
        self.window = window
        self.deadline = deadline
        self.check = check
        self.sent = 0
        self.done = 0
        self.bad = 0
        self.sent_at: dict[int, float] = {}
        self.latencies: list[float] = []
        self.first_send = 0.0
        self.last_recv = 0.0
        self.future: asyncio.Future[None] = client.loop.create_future()

    def start(self) -> None:
        self.first_send = time.perf_counter()
        for _ in range(min(self.window, self.total)):
            self._send_next()
        self.client.flush()

    def _send_next(self) -> None:
        client = self.client
        rid = client.next_id()
        client.pending[rid] = self.on_response
        self.sent += 1
        self.sent_at[rid] = time.perf_counter()
        client.queue(self.make_line(rid))

    def on_response(self, msg: dict[str, Any]) -> None:
        now = time.perf_counter()
        self.last_recv = now
        self.latencies.append(now - self.sent_at.pop(msg["id"]))
        self.done += 1
        if not self.check(msg):
            self.bad += 1
        if self.sent < self.total and now < self.deadline and not self.client.dead:
            self._send_next()
        elif self.done == self.sent and not self.future.done():
            self.future.set_result(None)


class LeanClient:
    """One server process, spoken to over its stdin/stdout."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.SubprocessTransport | None = None
        self.pid = 0
        self.pending: dict[int, Callback] = {}
        self.stderr_tail: deque[str] = deque(maxlen=30)
        self.bad_lines = 0
        self.dead = False
        self._id = 0
        self._out: list[bytes] = []
        self._stdin: asyncio.WriteTransport | None = None
        self._exited: asyncio.Future[None] = self.loop.create_future()
        self._seen: dict[int, int] = {}  # pid -> starttime of every descendant observed

    # ----------------------------------------------------------------- lifecycle

    @classmethod
    async def spawn(
        cls, argv: Sequence[str], cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> LeanClient:
        self = cls()
        transport, _ = await self.loop.subprocess_exec(
            lambda: _Protocol(self),
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
        self.transport = transport
        self.pid = transport.get_pid()
        _LIVE_GROUPS.add(self.pid)
        stdin = transport.get_pipe_transport(0)
        assert isinstance(stdin, asyncio.WriteTransport)
        self._stdin = stdin
        return self

    def _process_exited(self) -> None:
        if not self._exited.done():
            self._exited.set_result(None)
        self._fail_pending("server process exited")

    def _stdout_closed(self) -> None:
        self._fail_pending("server closed its stdout")

    def _fail_pending(self, why: str) -> None:
        self.dead = True
        pending, self.pending = self.pending, {}
        code = self.transport.get_returncode() if self.transport else None
        for rid, cb in pending.items():
            cb({"id": rid, "error": {"code": -1, "message": f"{why} (exit status {code})"}})

    def remember_descendants(self) -> None:
        """Record the current process tree so :meth:`close` can kill re-parented survivors."""
        for pid in descendants(self.pid):
            st = _proc_stat(pid)
            if st is not None:
                self._seen[pid] = st[1]

    async def close(self, timeout: float = 5.0) -> int | None:
        """Close stdin, wait up to ``timeout`` s, then kill the group and any remembered descendant."""
        if self.transport is None:
            return None
        with contextlib.suppress(Exception):
            self.remember_descendants()
        if self._stdin is not None and not self._stdin.is_closing():
            with contextlib.suppress(Exception):
                self.flush()
                self._stdin.close()
        try:
            await asyncio.wait_for(asyncio.shield(self._exited), timeout)
        except TimeoutError:
            self._killpg(signal.SIGTERM)
            try:
                await asyncio.wait_for(asyncio.shield(self._exited), 2.0)
            except TimeoutError:
                self._killpg(signal.SIGKILL)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._exited), 2.0)
        # Children may outlive a host that exited: always sweep the group and the survivors.
        self._killpg(signal.SIGKILL)
        for pid, start in self._seen.items():
            st = _proc_stat(pid)
            if st is not None and st[1] == start:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        _LIVE_GROUPS.discard(self.pid)
        code = self.transport.get_returncode()
        self.transport.close()
        self.transport = None
        return code

    def _killpg(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    # ----------------------------------------------------------------- wire

    def next_id(self) -> int:
        self._id += 1
        return self._id

    def queue(self, line: bytes) -> None:
        self._out.append(line)

    def flush(self) -> None:
        if self._out and self._stdin is not None and not self._stdin.is_closing():
            out = self._out
            self._out = []
            self._stdin.write(out[0] if len(out) == 1 else b"".join(out))

    def _handle_line(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            msg = orjson.loads(line)
        except orjson.JSONDecodeError:
            self.bad_lines += 1
            return
        if not isinstance(msg, dict):
            self.bad_lines += 1
            return
        if "method" in msg:
            # A server->client request (e.g. ping) gets an empty result; notifications are ignored.
            if "id" in msg:
                self.queue(orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {}}) + b"\n")
            return
        cb = self.pending.pop(msg.get("id"), None)  # type: ignore[arg-type]
        if cb is not None:
            cb(msg)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.queue(orjson.dumps(msg) + b"\n")
        self.flush()

    async def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30.0) -> Any:
        """Send one request and return its ``result``; raise :class:`ServerError` on error or timeout."""
        if self.dead:
            raise ServerError(f"{method}: server is gone{self.stderr_hint()}")
        rid = self.next_id()
        fut: asyncio.Future[dict[str, Any]] = self.loop.create_future()

        def done(msg: dict[str, Any]) -> None:
            if not fut.done():
                fut.set_result(msg)

        self.pending[rid] = done
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.queue(orjson.dumps(msg) + b"\n")
        self.flush()
        try:
            reply = await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            self.pending.pop(rid, None)
            raise ServerError(f"{method}: no answer within {timeout:.1f} s{self.stderr_hint()}") from None
        if "error" in reply:
            raise ServerError(f"{method}: {reply['error']}{self.stderr_hint()}")
        return reply.get("result")

    def stderr_hint(self) -> str:
        tail = [line for line in self.stderr_tail if line.strip()][-5:]
        return ("; stderr: " + " | ".join(tail)) if tail else ""

    # ----------------------------------------------------------------- MCP

    async def initialize(self, timeout: float = 30.0) -> dict[str, Any]:
        result = await self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "protomcp-bench", "version": "1"},
            },
            timeout,
        )
        self.notify("notifications/initialized")
        return result  # type: ignore[no-any-return]

    async def list_tools(self, timeout: float = 30.0) -> list[dict[str, Any]]:
        """tools/list, following ``nextCursor`` until the whole list is in."""
        tools: list[dict[str, Any]] = []
        params: dict[str, Any] | None = None
        deadline = time.monotonic() + timeout
        while True:
            result = await self.request("tools/list", params, max(0.001, deadline - time.monotonic()))
            tools.extend(result.get("tools", []))
            cursor = result.get("nextCursor")
            if not cursor:
                return tools
            params = {"cursor": cursor}

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        result = await self.request("tools/call", {"name": name, "arguments": arguments}, timeout)
        return result  # type: ignore[no-any-return]

    async def drive(
        self,
        make_line: Callable[[int], bytes],
        total: int,
        window: int,
        budget_s: float,
        timeout: float,
        check: Callable[[dict[str, Any]], bool],
    ) -> _Driver:
        """Run ``total`` requests (fewer if ``budget_s`` runs out) with ``window`` in flight.

        ``make_line(id)`` builds one encoded request line. Returns the finished driver
        (latencies, first_send, last_recv, done, bad). Raises :class:`ServerError` if the
        run does not finish within ``timeout`` s.
        """
        driver = _Driver(self, make_line, total, window, time.perf_counter() + budget_s, check)
        driver.start()
        try:
            await asyncio.wait_for(asyncio.shield(driver.future), timeout)
        except TimeoutError:
            raise ServerError(
                f"{driver.done}/{driver.sent} calls answered within {timeout:.1f} s{self.stderr_hint()}"
            ) from None
        return driver
