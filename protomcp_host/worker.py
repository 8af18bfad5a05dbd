"""One tool process: spawn, handshake, pending requests, captured output, death, stop.

A Worker is a single child-process lifetime. It never restarts itself; the Supervisor
replaces a dead or outdated Worker with a new one. Calls are callbacks, not tasks: a
call costs a dict entry and a timer until its answer frame arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import mmap
import os
import shutil
import signal
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.abc
import orjson

from protomcp_host.launch import Launched, launch
from protomcp_host.pipes import BatchedWriter, read_into
from protomcp_sdk import protomcp_pb2 as pb
from protomcp_sdk import wire

STDERR_TAIL = 20
_request_ids = itertools.count(1)


class WorkerError(Exception):
    """The tool process cannot serve: it failed to start, load, answer, or it died."""


class LoadError(WorkerError):
    """The tool file failed to import; the message carries the traceback."""


OutputSink = Callable[[str, str], None]  # (stream name "stdout"/"stderr", line)
LogSink = Callable[[str, str, Any], None]  # (level, logger, data)


@dataclass(slots=True, eq=False)
class Call:
    """One tools/call on its way through a tool process; exactly one of on_result /
    on_failure is called, unless the call is cancelled first."""

    name: str
    arguments_json: str
    progress_token: str
    on_result: Callable[
        [pb.CallToolResponse, list[bytes] | None, bool], None
    ]  # response, raw content, trusted
    on_failure: Callable[[str], None]
    on_progress: Callable[[float, float | None, str], None]
    on_log: LogSink
    request_id: str = ""
    worker: Worker | None = None
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)
    done: bool = False

    def cancel(self) -> None:
        """Drop the call; its tool process is told to cancel it if it is running."""
        if not self.done:
            self.done = True
            if self.worker is not None:
                self.worker.forget(self, notify=True)

    def fail(self, message: str) -> None:
        if not self.done:
            self.done = True
            self.on_failure(message)


class Worker:
    def __init__(
        self,
        file: Path,
        *,
        python: str = sys.executable,
        on_output: OutputSink | None = None,
        on_log: LogSink | None = None,
        standby: bool = False,
    ) -> None:
        self.file = file
        self.label = file.name
        self.python = python
        self.standby = standby  # started ahead of need: loads the file on activate()
        self.on_output = on_output or (lambda stream, line: None)
        self.on_log = on_log or (lambda level, logger, data: None)
        self.process: subprocess.Popen[bytes] | None = None
        self.calls: dict[str, Call] = {}
        self.requests: dict[str, asyncio.Future[pb.Envelope]] = {}
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self.hello: asyncio.Future[pb.Hello | None] | None = None
        self.exited = anyio.Event()
        self.death: str | None = None  # why it stopped serving, once it has
        self.stopping = False
        self._writer: BatchedWriter | None = None
        self._decoder = wire.FrameDecoder()
        # Raw result content that came ahead of its call_result; None: its spool file was unreadable.
        self._raw: dict[str, list[bytes] | None] = {}
        self.trusted = False  # our own SDK: its result JSON comes from orjson and needs no re-check
        self.spool_dir = ""  # where it spools large results; removed when it is gone

    # -- start ---------------------------------------------------------------------
    async def run(
        self,
        launched: Launched | None = None,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Start the process (or adopt one already launched) and serve it until it exits.
        Signals started once the process exists."""
        if launched is None:
            try:
                launched = launch(self.file, self.python, standby=self.standby)
            except OSError as exc:
                raise WorkerError(f"{self.label}: cannot start {self.python}: {exc}") from None
        self.process = process = launched.process
        self._writer = BatchedWriter(launched.to_child)
        self.hello = asyncio.get_running_loop().create_future()
        task_status.started()
        try:
            async with anyio.create_task_group() as tg:
                drained = [anyio.Event(), anyio.Event()]
                tg.start_soon(self._pump, process.stdout, "stdout", drained[0])
                tg.start_soon(self._pump, process.stderr, "stderr", drained[1])
                await read_into(launched.from_child, self._on_frame_bytes)
                self._end_of_frames()
                await self._wait_exit()
                # Output pipes may be held open by processes the tool started: drain briefly.
                with anyio.move_on_after(0.5):
                    for event in drained:
                        await event.wait()
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._reap()

    def activate(self) -> None:
        """Tell a standby process to import the tool file now (it then says Hello)."""
        self.send(pb.Envelope(reload=pb.ReloadRequest()))

    async def handshake(self, timeout: float) -> list[pb.ToolDefinition]:
        """Wait for Hello and the first tool list. Raises LoadError or WorkerError."""
        assert self.hello is not None
        try:
            with anyio.fail_after(timeout):
                hello = await self.hello
        except TimeoutError:
            self.kill()
            raise WorkerError(
                f"{self.label}: tool process did not finish its handshake within {timeout:g}s"
            ) from None
        if hello is None:
            if any("No module named protomcp_sdk" in line for line in self.stderr_tail):
                raise WorkerError(
                    f"{self.label}: protomcp_sdk is not importable by {self.python}; "
                    "install protomcp in that environment (pip install protomcp) or choose another --python"
                )
            raise WorkerError(self.death or f"{self.label}: tool process exited during start-up")
        if hello.error:
            raise LoadError(f"{self.label} failed to load:\n{hello.error.rstrip()}")
        self.trusted = hello.sdk_name == "protomcp_sdk"
        if hello.protocol_version != wire.PROTOCOL_VERSION:
            self.kill()
            raise WorkerError(
                f"{self.label}: tool process speaks Envelope protocol v{hello.protocol_version}, "
                f"this host speaks v{wire.PROTOCOL_VERSION} (mismatched protomcp_sdk in {self.python}?)"
            )
        reply = await self.request(pb.Envelope(list_tools=pb.ListToolsRequest()), timeout=timeout)
        return list(reply.tool_list.tools)

    # -- requests ------------------------------------------------------------------
    def start(self, call: Call, timeout: float | None) -> None:
        """Send a call to the tool process; its answer arrives through the call's callbacks."""
        if call.done:  # cancelled while it waited for this process
            return
        if self.death is not None:
            call.fail(self.death)
            return
        call.request_id = request_id = str(next(_request_ids))
        call.worker = self
        self.calls[request_id] = call
        request = pb.CallToolRequest(name=call.name, arguments_json=call.arguments_json)
        request.progress_token = call.progress_token
        self.send(pb.Envelope(request_id=request_id, call_tool=request))
        if timeout is not None:
            call.timer = asyncio.get_running_loop().call_later(timeout, self._timed_out, call, timeout)

    def _timed_out(self, call: Call, timeout: float) -> None:
        self.forget(call, notify=True)
        call.fail(f"did not finish within {timeout:g}s and was cancelled")

    def forget(self, call: Call, *, notify: bool) -> None:
        if self.calls.pop(call.request_id, None) is not None and notify:
            self.send(pb.Envelope(cancel=pb.CancelRequest(request_id=call.request_id)))
        if call.timer is not None:
            call.timer.cancel()

    async def request(self, envelope: pb.Envelope, *, timeout: float | None) -> pb.Envelope:
        """Send a non-call request and wait for the frame answering it."""
        if self.death is not None:
            raise WorkerError(self.death)
        envelope.request_id = request_id = str(next(_request_ids))
        self.requests[request_id] = future = asyncio.get_running_loop().create_future()
        self.send(envelope)
        try:
            with anyio.fail_after(timeout):
                return await future
        finally:
            self.requests.pop(request_id, None)

    def send(self, envelope: pb.Envelope) -> None:
        if self._writer is not None and not self._writer.closed:
            self._writer.write(wire.encode(envelope))

    # -- input ---------------------------------------------------------------------
    def _on_frame_bytes(self, data: bytes) -> None:
        if self.death is not None:
            return  # after a protocol error nothing from this process is trusted
        try:
            for item in self._decoder.feed(data):
                if isinstance(item, wire.Raw):
                    self._on_raw(item)
                else:
                    self._dispatch(item)
        except wire.FrameError as exc:
            self._protocol_error(exc)

    def _end_of_frames(self) -> None:
        if self.death is None:
            try:
                self._decoder.close()
            except wire.FrameError as exc:
                self._protocol_error(exc)

    def _protocol_error(self, exc: wire.FrameError) -> None:
        self.death = f"{self.label}: protocol error from tool process: {exc}"
        self.on_output("stderr", self.death)
        self.kill()

    def _on_raw(self, raw: wire.Raw) -> None:
        if raw.header.content_type == wire.RAW_RESULT_JSON and raw.header.transfer_id in self.calls:
            self._raw[raw.header.transfer_id] = raw.parts
        else:
            self.on_output("stderr", f"ignoring a raw payload of type {raw.header.content_type!r}")

    def _dispatch(self, envelope: pb.Envelope) -> None:
        kind = envelope.WhichOneof("msg")
        request_id = envelope.request_id
        if kind == "call_result":
            call = self.calls.get(request_id)
            if call is not None:
                self.forget(call, notify=False)
                unreadable = request_id in self._raw and self._raw[request_id] is None
                content = self._raw.pop(request_id, None)
                if unreadable:
                    call.fail("its result could not be read from the tool process's spool file")
                elif not call.done:
                    call.done = True
                    call.on_result(envelope.call_result, content, self.trusted)
        elif kind == "progress":
            call = self.calls.get(request_id)
            if call is not None:
                note = envelope.progress
                progress = note.progress_value or float(note.progress)
                total = note.total_value or (float(note.total) if note.total else None)
                call.on_progress(progress, total, note.message)
        elif kind == "log":
            entry = envelope.log
            call = self.calls.get(request_id)
            (call.on_log if call is not None else self.on_log)(
                entry.level, entry.logger, _json_or_text(entry.data_json)
            )
        elif kind == "raw_header":  # a payload handed over as a spool file
            path = envelope.raw_header.path
            self.spool_dir = os.path.dirname(path)
            parts = read_spooled(path)
            if parts is None and request_id in self.calls:
                self._raw[request_id] = None
            elif parts is not None:
                self._on_raw(wire.Raw(envelope.raw_header, parts))
        elif kind == "hello":
            if self.hello is not None and not self.hello.done():
                self.hello.set_result(envelope.hello)
        elif kind in ("tool_list", "active_tools", "reload_response"):
            future = self.requests.get(request_id)
            if future is not None and not future.done():
                future.set_result(envelope)
        else:
            self.on_output("stderr", f"ignoring unsupported frame {kind!r} from the tool process")

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

    def _line(self, name: str, raw: bytes) -> None:
        line = raw.decode(errors="replace").rstrip("\r")
        if name == "stderr":
            self.stderr_tail.append(line)
        self.on_output(name, line)

    # -- death and stop ------------------------------------------------------------
    async def _wait_exit(self) -> None:
        """The frame pipe closed, so the process is exiting; make sure it does."""
        assert self.process is not None
        if self._writer is not None:
            self._writer.close()
        with anyio.move_on_after(2):
            await wait_process(self.process)
        if self.process.returncode is None:
            self.kill()
            await wait_process(self.process)

    async def _reap(self) -> None:
        """The process is gone: fail what is pending and tell whoever waits."""
        process = self.process
        assert process is not None
        if process.poll() is None:  # cancelled from outside before it exited
            self.kill()
            await wait_process(process)
        self._kill_group(signal.SIGKILL)  # anything the tool started in its process group
        if self.spool_dir and wire.SPOOL_PREFIX in os.path.basename(self.spool_dir):
            shutil.rmtree(self.spool_dir, ignore_errors=True)  # left behind if it crashed
        if self.death is None:
            self.death = self._describe_exit(process.returncode)
        for call in list(self.calls.values()):
            self.forget(call, notify=False)
            call.fail(self.death)
        for future in self.requests.values():
            if not future.done():
                future.set_exception(WorkerError(self.death))
        if self.hello is not None and not self.hello.done():
            self.hello.set_result(None)
        self.exited.set()

    def _describe_exit(self, code: int | None) -> str:
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
        if self.stderr_tail:
            message += "; last stderr lines:\n" + "\n".join(self.stderr_tail)
        return message

    async def stop(self, grace: float) -> None:
        """Graceful stop: close its input so it finishes in-flight calls, then insist."""
        self.stopping = True
        if self._writer is not None:
            self._writer.close()
        with anyio.move_on_after(grace):
            await self.exited.wait()
        if not self.exited.is_set():
            self._kill_group(signal.SIGTERM)
            with anyio.move_on_after(2):
                await self.exited.wait()
        if not self.exited.is_set():
            self.kill()
            await self.exited.wait()

    def kill(self) -> None:
        self._kill_group(signal.SIGKILL)

    def _kill_group(self, sig: signal.Signals) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, sig)


async def wait_process(process: subprocess.Popen[bytes]) -> int:
    """Wait for a process to exit without a thread where the OS allows (Linux pidfd)."""
    if process.poll() is not None:
        return process.returncode
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:  # e.g. macOS
        return await anyio.to_thread.run_sync(process.wait, abandon_on_cancel=True)
    loop = asyncio.get_running_loop()
    pidfd = pidfd_open(process.pid)
    exited = loop.create_future()
    loop.add_reader(pidfd, lambda: exited.done() or exited.set_result(None))
    try:
        await exited
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)
    return process.wait()


def read_spooled(path: str) -> list[bytes] | None:
    """Map a spool file and delete it (the mapping stays readable); None if impossible."""
    if not wire.spool_path_ok(path):
        return None
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            data = mmap.mmap(file.fileno(), size, access=mmap.ACCESS_READ) if size else b""
    except OSError:
        return None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return [data]  # type: ignore[list-item]  # a read-only mmap is a bytes-like buffer


def _json_or_text(text: str) -> Any:
    try:
        return orjson.loads(text) if text else None
    except orjson.JSONDecodeError:
        return text
