"""One tool process: spawn, handshake, pending calls, captured output, death, stop.

A Worker is a single child-process lifetime. It never restarts itself; the
Supervisor replaces a dead or outdated Worker with a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import orjson

from protomcp_sdk import protomcp_pb2 as pb
from protomcp_sdk import wire

READ_CHUNK = 1 << 20
STDERR_TAIL = 20
_request_ids = itertools.count(1)


class WorkerError(Exception):
    """The tool process cannot serve: it failed to start, load, answer, or it died."""


class LoadError(WorkerError):
    """The tool file failed to import; the message carries the traceback."""


@dataclass(slots=True)
class CallHooks:
    """Where a running call's progress and log messages go."""

    on_progress: Callable[[float, float | None, str], None]
    on_log: Callable[[str, str, Any], None]


OutputSink = Callable[[str, str], None]  # (stream name "stdout"/"stderr", line)
LogSink = Callable[[str, str, Any], None]  # (level, logger, data) for messages outside calls


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
        self.standby = standby  # started ahead of need: loads the file on activate()
        self.label = file.name
        self.python = python
        self.on_output = on_output or (lambda stream, line: None)
        self.on_log = on_log or (lambda level, logger, data: None)
        self.process: asyncio.subprocess.Process | None = None
        self.pending: dict[str, tuple[asyncio.Future[pb.Envelope], CallHooks | None]] = {}
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self.hello: asyncio.Future[pb.Hello | None] | None = None
        self.exited = anyio.Event()
        self.death: str | None = None  # why it stopped serving, once it has
        self.stopping = False
        self._writer: asyncio.WriteTransport | None = None

    # -- start ---------------------------------------------------------------------
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Spawn the process and serve it until it exits. Signals started once spawned."""
        loop = asyncio.get_running_loop()
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        env = dict(os.environ)
        env[wire.FD_ENV] = f"{to_child_r},{from_child_w}"
        env["PYTHONUNBUFFERED"] = "1"
        try:
            self.process = await asyncio.create_subprocess_exec(
                self.python, "-m", "protomcp_sdk", *(["--standby"] if self.standby else []), str(self.file),
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=(to_child_r, from_child_w), env=env, start_new_session=True,
                cwd=str(self.file.parent),
            )  # fmt: skip
        except OSError as exc:
            for fd in (to_child_r, to_child_w, from_child_r, from_child_w):
                os.close(fd)
            raise WorkerError(f"{self.label}: cannot start {self.python}: {exc}") from None
        finally:
            with contextlib.suppress(OSError):
                os.close(to_child_r)
                os.close(from_child_w)
        self._writer, _ = await loop.connect_write_pipe(
            asyncio.Protocol, os.fdopen(to_child_w, "wb", buffering=0)
        )
        reader = asyncio.StreamReader(limit=READ_CHUNK)
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(from_child_r, "rb", buffering=0)
        )
        self.hello = loop.create_future()
        task_status.started()
        try:
            async with anyio.create_task_group() as tg:
                drained = [anyio.Event(), anyio.Event()]
                tg.start_soon(self._pump, self.process.stdout, "stdout", drained[0])
                tg.start_soon(self._pump, self.process.stderr, "stderr", drained[1])
                await self._read_frames(reader)
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
        if hello.protocol_version != wire.PROTOCOL_VERSION:
            self.kill()
            raise WorkerError(
                f"{self.label}: tool process speaks Envelope protocol v{hello.protocol_version}, "
                f"this host speaks v{wire.PROTOCOL_VERSION} (mismatched protomcp_sdk in {self.python}?)"
            )
        reply = await self.request(pb.Envelope(list_tools=pb.ListToolsRequest()), timeout=timeout)
        return list(reply.tool_list.tools)

    # -- requests ------------------------------------------------------------------
    async def request(
        self, envelope: pb.Envelope, *, timeout: float | None, hooks: CallHooks | None = None
    ) -> pb.Envelope:
        """Send a request and wait for the frame answering it."""
        if self.death is not None:
            raise WorkerError(self.death)
        request_id = str(next(_request_ids))
        envelope.request_id = request_id
        future: asyncio.Future[pb.Envelope] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = (future, hooks)
        self.send(envelope)
        try:
            with anyio.fail_after(timeout):
                return await future
        except BaseException:
            if self.pending.pop(request_id, None) is not None and envelope.HasField("call_tool"):
                self.send(pb.Envelope(cancel=pb.CancelRequest(request_id=request_id)))
            raise

    def send(self, envelope: pb.Envelope) -> None:
        if self._writer is not None and not self._writer.is_closing():
            self._writer.write(wire.encode(envelope))

    @property
    def in_flight(self) -> int:
        return len(self.pending)

    # -- input ---------------------------------------------------------------------
    async def _read_frames(self, reader: asyncio.StreamReader) -> None:
        decoder = wire.FrameDecoder()
        try:
            while chunk := await reader.read(READ_CHUNK):
                for envelope in decoder.feed(chunk):
                    self._dispatch(envelope)
            decoder.close()
        except wire.FrameError as exc:
            self.death = f"{self.label}: protocol error from tool process: {exc}"
            self.kill()

    def _dispatch(self, envelope: pb.Envelope) -> None:
        kind = envelope.WhichOneof("msg")
        if kind == "hello":
            if self.hello is not None and not self.hello.done():
                self.hello.set_result(envelope.hello)
            return
        entry = self.pending.get(envelope.request_id)
        if kind in ("call_result", "tool_list", "active_tools", "reload_response"):
            if entry is not None:
                del self.pending[envelope.request_id]
                if not entry[0].done():
                    entry[0].set_result(envelope)
            return
        hooks = entry[1] if entry is not None else None
        if kind == "progress":
            if hooks is not None:
                note = envelope.progress
                progress = note.progress_value or float(note.progress)
                total = note.total_value or (float(note.total) if note.total else None)
                hooks.on_progress(progress, total, note.message)
        elif kind == "log":
            entry_log = envelope.log
            data = _json_or_text(entry_log.data_json)
            (hooks.on_log if hooks is not None else self.on_log)(entry_log.level, entry_log.logger, data)
        else:
            self.on_output("stderr", f"ignoring unsupported frame {kind!r} from the tool process")

    async def _pump(self, stream: asyncio.StreamReader | None, name: str, drained: anyio.Event) -> None:
        buffer = b""
        while stream is not None and (chunk := await stream.read(65536)):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for raw in lines:
                self._line(name, raw)
            if len(buffer) > 65536:  # a very long line without newline: pass it on in pieces
                self._line(name, buffer)
                buffer = b""
        if buffer:
            self._line(name, buffer)
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
            await self.process.wait()
        if self.process.returncode is None:
            self.kill()
            await self.process.wait()

    async def _reap(self) -> None:
        """The process is gone: fail what is pending and tell whoever waits."""
        process = self.process
        assert process is not None
        if process.returncode is None:  # cancelled from outside before it exited
            self.kill()
            await process.wait()
        self._kill_group(signal.SIGKILL)  # anything the tool started in its process group
        if self.death is None:
            self.death = self._describe_exit(process.returncode)
        for future, _hooks in self.pending.values():
            if not future.done():
                future.set_exception(WorkerError(self.death))
        self.pending.clear()
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


def _json_or_text(text: str) -> Any:
    try:
        return orjson.loads(text) if text else None
    except orjson.JSONDecodeError:
        return text
