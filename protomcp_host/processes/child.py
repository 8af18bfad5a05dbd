"""One tool process's lifetime: start (or adopt), captured output, exit, kill.

Knows nothing of frames: the Channel speaks the Envelope over the pipes this process got.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO

import anyio

from protomcp_host.processes.launch import Launched, label_of, launch
from protomcp_host.processes.pipes import read_into
from protomcp_host.processes.settings import LaunchSettings

STDERR_TAIL = 20
EXIT_WAIT = 2.0  # seconds a process that was told to go (input closed, SIGTERM) gets before SIGKILL

OutputSink = Callable[[str, str], None]  # (stream name "stdout"/"stderr", line)


class ChildProcess:
    def __init__(
        self,
        file: Path,
        how: LaunchSettings,
        on_output: OutputSink,
        *,
        standby: bool = False,
    ) -> None:
        self.file = file
        self.label = label_of(file)
        self.how = how  # its interpreter, and the variables kept out of its environment
        self.standby = standby
        self.on_output = on_output
        self.popen: subprocess.Popen[bytes] | None = None
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self.stopping = False  # the host asked it to stop: its exit is not a crash
        # It has exited. It is reaped only by reap(): until then it is a zombie that keeps its pid,
        # so the process group named after that pid cannot be another process's.
        self.exited = False

    def start(self, launched: Launched | None) -> Launched:
        """Start the process (or adopt one the CLI launched early). Raises OSError."""
        if launched is None:
            launched = launch(self.file, self.how, standby=self.standby)
        self.popen = launched.process
        return launched

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    async def pump_output(self, tg: anyio.abc.TaskGroup) -> list[anyio.Event]:
        """Forward stdout/stderr line by line; the events are set once each stream ends."""
        assert self.popen is not None
        drained = [anyio.Event(), anyio.Event()]
        tg.start_soon(self._pump, self.popen.stdout, "stdout", drained[0])
        tg.start_soon(self._pump, self.popen.stderr, "stderr", drained[1])
        return drained

    async def _pump(self, stream: IO[bytes] | None, name: str, drained: anyio.Event) -> None:
        pending = bytearray()

        def on_data(data: bytes) -> None:
            pending.extend(data)
            *lines, rest = pending.split(b"\n")
            for raw in lines:
                self._line(name, raw)
            pending[:] = rest
            if len(pending) > 65536:  # a very long line without newline: pass it on in pieces
                self._line(name, bytes(pending))
                pending.clear()

        if stream is not None:
            await read_into(stream.fileno(), on_data, closefd=False)
            stream.close()
        if pending:
            self._line(name, bytes(pending))
        drained.set()

    def _line(self, name: str, raw: bytes | bytearray) -> None:
        line = raw.decode(errors="replace").rstrip("\r")
        if name == "stderr":
            self.stderr_tail.append(line)
        self.on_output(name, line)

    async def wait(self) -> None:
        """Until it has exited (not reaped: see `exited`)."""
        assert self.popen is not None
        if not self.exited:
            await wait_exit(self.popen)
            self.exited = True

    async def ensure_exit(self) -> None:
        """Its frame pipe closed, so it is exiting: make sure it does."""
        with anyio.move_on_after(EXIT_WAIT):
            await self.wait()
        if not self.exited:
            self.kill()
            await self.wait()

    async def reap(self) -> None:
        """Called once it is gone (or when cancelled from outside): nothing it started survives.
        The rest of its process group is killed before it is reaped, while the group's id is
        still its pid; after, it is never signalled again."""
        if self.popen is None:
            return
        if not self.exited:
            self.kill()
            await self.wait()
        self.signal_group(signal.SIGKILL)  # anything the tool started in its process group
        self.popen.wait()  # (at once: it has exited)

    def describe_exit(self, *, tail: bool = True) -> str:
        """Why it is gone; with `tail`, the last lines it wrote on stderr outside any call."""
        code = self.popen.returncode if self.popen is not None else None
        if self.stopping:
            return f"{self.label}: tool process was stopped"
        if code is not None and code < 0:
            try:
                how = f"was killed by signal {-code} ({signal.Signals(-code).name})"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with status {code}"
        message = f"{self.label}: tool process {how}"
        if tail and self.stderr_tail:
            message += "; last stderr lines:\n" + "\n".join(self.stderr_tail)
        return message

    def kill(self) -> None:
        self.signal_group(signal.SIGKILL)

    def signal_group(self, sig: signal.Signals) -> None:
        """Signal its process group, only while it is not reaped: once it is, its pid (the group's
        id) may be reused by an unrelated process, which must never get our signal."""
        if self.popen is not None and self.popen.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.popen.pid, sig)


async def wait_exit(process: subprocess.Popen[bytes]) -> None:
    """Wait for a process to exit without reaping it: on a pidfd where the OS has one (Linux),
    elsewhere in a thread (waitid with WNOWAIT; where even that is missing, the thread's wait
    reaps it, and its group is then not signalled)."""
    if process.returncode is not None:
        return
    pidfd_open = getattr(os, "pidfd_open", None)
    try:
        pidfd = pidfd_open(process.pid) if pidfd_open is not None else None
    except OSError:  # (a kernel or sandbox without pidfds)
        pidfd = None
    if pidfd is None:  # e.g. macOS
        await anyio.to_thread.run_sync(_wait_unreaped, process, abandon_on_cancel=True)
        return
    loop = asyncio.get_running_loop()
    exited: asyncio.Future[None] = loop.create_future()
    loop.add_reader(pidfd, _settle, exited)
    try:
        await exited
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)


def _wait_unreaped(process: subprocess.Popen[bytes]) -> None:
    waitid = getattr(os, "waitid", None)
    if waitid is None:
        process.wait()
        return
    with contextlib.suppress(ChildProcessError):  # (reaped meanwhile: it has exited)
        waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)


def _settle(exited: asyncio.Future[None]) -> None:
    """The pidfd became readable (the process exited); it may stay readable until removed."""
    if not exited.done():
        exited.set_result(None)
