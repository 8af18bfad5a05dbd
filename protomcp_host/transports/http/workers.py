"""`--workers N`: N host processes serving one listening socket, supervised by this one.

The parent binds the socket (so every worker accepts on the same port, as gunicorn and
uvicorn's own workers do) and starts N copies of the same command line, each told by
environment variables which inherited file descriptor to serve and where to say it is
ready. Each worker is a whole host with its own tool processes; each records its metrics in the
folder PROMETHEUS_MULTIPROC_DIR names, made here, so a scrape of any worker covers them all.
The parent replaces a worker that dies (bounded backoff), and on SIGTERM/SIGINT closes its copy
of the socket, passes the signal on and waits for every worker to drain (each closes its copy,
lets its calls finish within --drain-timeout, exits).

A stateful (2025-11-25 and older) session lives in one worker; the others pass its requests on to
that worker's private socket in the folder made here (affinity.py). Every worker is a host of
the shared store (`--store`, required): there the workers share each principal's tool-list
state, modern-era tasks and the key that seals `requestState`, as several hosts do.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import anyio
import anyio.abc

from protomcp_host.telemetry.multiprocess import MULTIPROC_ENV, forget_process
from protomcp_host.transports.http.affinity import COUNT_ENV, FOLDER_ENV, STARTUP_TIMEOUT, WORKER_ENV

LISTEN_FD_ENV = "PROTOMCP_LISTEN_FD"  # the inherited listening socket a worker serves
READY_FD_ENV = "PROTOMCP_READY_FD"  # a pipe a worker writes one byte to once it serves
EXIT_GRACE = 5.0  # seconds beyond the drain timeout a worker gets before it is killed


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent dies (Linux), so no worker outlives it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class WorkerSet:
    """The parent's view of its workers."""

    def __init__(
        self,
        command: list[str],
        sock: socket.socket,
        count: int,
        stderr: Callable[[str], None],
        drain_timeout: float,
    ) -> None:
        self.command = command
        self.sock = sock
        self.count = count
        self.stderr = stderr
        self.drain_timeout = drain_timeout
        self.procs: dict[int, subprocess.Popen[bytes]] = {}  # by worker number
        self.stopping = False
        self.restarts = 0
        # the workers' private sockets, where each serves the stateful sessions it holds (affinity.py)
        self.folder = tempfile.mkdtemp(prefix="protomcp-workers-")
        # every worker's metrics, as files a scrape of any worker reads (telemetry/prometheus.py):
        # made empty here, before any worker starts, and removed with the folder
        self.metrics = os.path.join(self.folder, "metrics")
        os.mkdir(self.metrics, 0o700)
        self.env = {**os.environ, FOLDER_ENV: self.folder, COUNT_ENV: str(count), MULTIPROC_ENV: self.metrics}

    def _spawn(self, number: int) -> tuple[subprocess.Popen[bytes], int]:
        """Start worker `number`; returns it and the read end of its ready pipe."""
        ready_r, ready_w = os.pipe()
        env = {
            **self.env,
            LISTEN_FD_ENV: str(self.sock.fileno()),
            READY_FD_ENV: str(ready_w),
            WORKER_ENV: str(number),
        }
        try:
            proc = subprocess.Popen(
                self.command,
                env=env,
                stdin=subprocess.DEVNULL,
                pass_fds=(self.sock.fileno(), ready_w),
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        finally:
            os.close(ready_w)
        self.procs[number] = proc
        return proc, ready_r

    async def _await_ready(self, proc: subprocess.Popen[bytes], ready_r: int) -> bool:
        """True once the worker said it serves; False when it exited (or took too long)."""
        try:
            with anyio.move_on_after(STARTUP_TIMEOUT):
                while True:
                    await anyio.wait_readable(ready_r)
                    return os.read(ready_r, 1) == b"1"  # EOF: it exited before serving
        finally:
            os.close(ready_r)
        proc.kill()
        return False

    async def start(self) -> bool:
        """Start every worker and wait until each serves. False: one could not start."""
        started = [self._spawn(number) for number in range(1, self.count + 1)]
        results: list[bool] = []

        async def wait(proc: subprocess.Popen[bytes], ready_r: int) -> None:
            results.append(await self._await_ready(proc, ready_r))

        async with anyio.create_task_group() as tg:
            for proc, ready_r in started:
                tg.start_soon(wait, proc, ready_r)
        return all(results)

    async def supervise(self) -> None:
        """Replace workers that die until stop() is called; backoff 0.1 s doubling to 10 s, reset
        once a worker has served 30 s."""
        failures: dict[int, int] = {}
        started_at = dict.fromkeys(self.procs, time.monotonic())
        while not self.stopping:
            await anyio.sleep(0.1)  # a child's exit is seen within this (no SIGCHLD handler)
            for number, proc in list(self.procs.items()):
                if self.stopping or proc.poll() is None:
                    continue
                forget_process(proc.pid, self.metrics)  # (its gauges no longer count)
                uptime = time.monotonic() - started_at.get(number, 0.0)
                failures[number] = 0 if uptime >= 30 else failures.get(number, 0) + 1
                delay = min(10.0, 0.1 * 2 ** max(0, failures[number] - 1))
                self.stderr(
                    f"protomcp: worker {number} (pid {proc.pid}) exited with status {proc.returncode}; "
                    f"starting a new one in {delay:.1f}s"
                )
                await anyio.sleep(delay)
                if self.stopping:
                    return
                new, ready_r = self._spawn(number)
                started_at[number] = time.monotonic()
                self.restarts += 1
                if await self._await_ready(new, ready_r):
                    self.stderr(f"protomcp: worker {number} (pid {new.pid}) serving again")

    async def stop(self) -> int:
        """Close this process's copy of the listening socket, then SIGTERM every worker and wait
        for them to drain (killed after drain + grace). Each worker closes its own copy first
        thing: once none is open, new connections are refused at once (a balancer tries another
        host) instead of queueing where no one accepts them, to be reset at the exit."""
        self.stopping = True  # (no worker is started from here on: the socket is gone)
        self.sock.close()
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.drain_timeout + EXIT_GRACE
        while any(p.poll() is None for p in self.procs.values()) and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        for proc in self.procs.values():
            if proc.poll() is None:
                self.stderr(f"protomcp: worker pid {proc.pid} did not stop in time; killing it")
                proc.kill()
                proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)
        return max((p.returncode or 0 for p in self.procs.values()), default=0)


async def run_workers(
    command: list[str],
    sock: socket.socket,
    count: int,
    drain_timeout: float,
    stderr: Callable[[str], None],
    announce: Callable[[], None],
    signalled: list[int],
) -> int:
    """Serve with `count` workers until SIGTERM/SIGINT; returns the exit code."""
    workers = WorkerSet(command, sock, count, stderr, drain_timeout)
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:

        async def on_signals() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                if signalled:
                    stop.set()
                async for _ in signals:
                    stop.set()
                    return

        tg.start_soon(on_signals)
        with anyio.CancelScope() as starting:

            async def cancel_on_stop() -> None:
                await stop.wait()
                starting.cancel()

            tg.start_soon(cancel_on_stop)
            ok = await workers.start()
            if not ok:
                stderr("protomcp: cannot start: a worker exited before it served (see above)")
                await workers.stop()
                tg.cancel_scope.cancel()
                return 1
            announce()
            tg.start_soon(workers.supervise)
            await stop.wait()
        code = await workers.stop()
        tg.cancel_scope.cancel()
    return 0 if code in (0, -signal.SIGTERM) else code


def inherited_socket() -> socket.socket | None:
    """In a worker: the listening socket its parent bound (None when this is no worker)."""
    fd = os.environ.get(LISTEN_FD_ENV)
    if not fd:
        return None
    return socket.socket(fileno=int(fd))


def say_ready() -> None:
    """In a worker: tell the parent it serves (once)."""
    fd = os.environ.pop(READY_FD_ENV, None)
    if fd:
        try:
            os.write(int(fd), b"1")
            os.close(int(fd))
        except OSError:
            pass
