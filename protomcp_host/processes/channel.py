"""The Envelope frame channel to one tool process: encoding, decoding, correlation.

Frames are dispatched by kind through a table. Host→process requests wait on futures;
tool calls are callbacks (a dict entry and a timer until the answer frame arrives) whose
answers go to the call's sink (the router of the session that made it). Requests the tool
process makes of the host (tool-list control) go to the host's handlers and are answered
with the same request id.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import mmap
import os
import stat
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

import orjson

from protomcp_host.bridge.envelope import CLIENT_REQUESTS, client_reply, client_request, tool_answer
from protomcp_host.processes.output import LogLimiter
from protomcp_host.processes.pipes import BatchedWriter
from protomcp_host.protocol.session import Call, ToolAnswer
from protomcp_sdk import wire
from protomcp_sdk.wire import protomcp_pb2 as pb

_request_ids = itertools.count(1)

LogSink = Callable[[str, str, Any], None]  # (level, logger, data)


class ChannelError(Exception):
    """The tool process cannot answer: it died, or broke the protocol."""


class CallSink(Protocol):
    """Receives what happens to a call (the router of the session that made it)."""

    def call_answered(self, call: Call, answer: ToolAnswer, effects: pb.CallToolResponse) -> None: ...
    def call_failed(self, call: Call, message: str) -> None: ...
    def call_progress(self, call: Call, progress: float, total: float | None, message: str) -> None: ...
    def call_log(self, call: Call, level: str, logger: str, data: Any) -> None: ...
    def call_task_status(self, call: Call, status: str, message: str) -> None: ...
    def call_request(
        self,
        call: Call,
        method: str,
        params: dict[str, Any],
        timeout: float | None,
        reply: Callable[[dict[str, Any] | None, str | None], None],
    ) -> None: ...


ControlHandler = Callable[[Call | None, pb.Envelope], list[str]]
"""Applies a tool-list control request (for the session of `call`, or every session when
None) and returns the names of the tools now active there."""


NoticeSink = Callable[[pb.Envelope], None]
"""Receives notifications a tool process sends outside any request (resource changes)."""

Answered = Callable[[pb.Envelope | None, list[bytes] | None, str | None], None]
"""(answer frame, raw payload that came ahead of it, or why there is no answer)."""


class Channel:
    def __init__(
        self,
        label: str,
        to_child: int,
        *,
        on_output: Callable[[str, str], None],
        on_log: LogSink,
        on_control: ControlHandler | None = None,
        spool_dir: str = "",
        on_notice: NoticeSink | None = None,
    ) -> None:
        self.label = label
        self.on_notice = on_notice
        self.on_output = on_output
        self.on_log = on_log
        self.on_control = on_control
        self.writer = BatchedWriter(to_child)
        self.decoder = wire.FrameDecoder()
        self.hello: asyncio.Future[pb.Hello | None] = asyncio.get_running_loop().create_future()
        self.calls: dict[str, Call] = {}  # by Envelope request id
        self.requests: dict[str, asyncio.Future[pb.Envelope]] = {}
        # Raw result content that came ahead of its call_result; None: its spool file was unreadable.
        self.raw: dict[str, list[bytes] | None] = {}
        self.trusted = False  # our own SDK: its result JSON comes from orjson and needs no re-check
        self.spool_dir = spool_dir  # the one directory it may hand files over in (the host named it)
        self.broken: str | None = None  # why nothing more is read from it
        self.blocked_tool = ""  # the tool its watchdog last said blocks its event loop
        self.log_limit = LogLimiter(label)  # ctx.log in a tight loop cannot flood the clients
        self.middleware: list[pb.RegisterMiddlewareRequest] = []  # registered right after Hello
        self._handlers: dict[str, Callable[[pb.Envelope], None]] = {
            "call_result": self._call_result,
            "progress": self._progress,
            "log": self._log,
            "raw_header": self._raw_header,
            "task_status_response": self._task_status,
            "hello": self._hello,
            "tool_list": self._answer,
            "heartbeat_reply": self._heartbeat_reply,
            "active_tools": self._answer,
            "reload_response": self._answer,
            "middleware_intercept_response": self._answer,
            "register_middleware": self._register_middleware,
            **dict.fromkeys(
                (
                    "resource_list_response",
                    "resource_template_list_response",
                    "prompt_list_response",
                    "read_resource_response",
                    "get_prompt_response",
                    "completion_response",
                ),
                self._answer,
            ),
            "resource_changed": self._notice,
            **dict.fromkeys(CLIENT_REQUESTS, self._client_request),
            **dict.fromkeys(
                ("enable_tools", "disable_tools", "set_allowed", "set_blocked", "get_active_tools", "batch"),
                self._control,
            ),
        }

    # -- output --------------------------------------------------------------------
    def send(self, envelope: pb.Envelope) -> None:
        if not self.writer.closed:
            self.writer.write(wire.encode(envelope))

    def close(self) -> None:
        """Close the process's input: "finish your calls and exit"."""
        self.writer.close()

    async def request(self, envelope: pb.Envelope, *, timeout: float | None) -> pb.Envelope:
        """Send a request and wait for the frame answering it. Raises ChannelError or TimeoutError."""
        if self.broken is not None:
            raise ChannelError(self.broken)
        envelope.request_id = request_id = str(next(_request_ids))
        self.requests[request_id] = future = asyncio.get_running_loop().create_future()
        self.send(envelope)
        try:
            async with asyncio.timeout(timeout):
                return await future
        finally:
            self.requests.pop(request_id, None)

    def ask(self, envelope: pb.Envelope, timeout: float | None, done: Answered) -> Callable[[], None]:
        """Send a request without waiting: `done` is called exactly once, with the answer (and
        a raw payload that came ahead of it) or with why there is none (process gone, timeout).
        Returns a function that drops the request (then `done` is not called, and the process
        is told to stop working on it)."""
        if self.broken is not None:
            done(None, None, self.broken)
            return lambda: None
        loop = asyncio.get_running_loop()
        envelope.request_id = request_id = str(next(_request_ids))
        self.requests[request_id] = future = loop.create_future()
        timer = None
        if timeout is not None:
            timer = loop.call_later(timeout, lambda: future.done() or future.set_exception(TimeoutError()))

        def finished(future: asyncio.Future[pb.Envelope]) -> None:
            if timer is not None:
                timer.cancel()
            self.requests.pop(request_id, None)
            unreadable = request_id in self.raw and self.raw[request_id] is None
            raw = self.raw.pop(request_id, None)
            if future.cancelled():
                return
            error = future.exception()
            if isinstance(error, TimeoutError):
                done(None, None, f"{self.label}: the tool process did not answer within {timeout:g}s")
            elif error is not None:
                done(None, None, str(error))
            elif unreadable:
                done(
                    None,
                    None,
                    f"{self.label}: the answer could not be read from the tool process's spool file",
                )
            else:
                done(future.result(), raw, None)

        future.add_done_callback(finished)
        self.send(envelope)

        def drop() -> None:
            if not future.done():
                future.cancel()
                self.send(pb.Envelope(cancel=pb.CancelRequest(request_id=request_id)))

        return drop

    # -- calls -----------------------------------------------------------------------
    def start(self, call: Call, timeout: float | None) -> None:
        """Send a call; its answer arrives through the call's sink."""
        if call.done:  # cancelled while it waited for this process
            return
        if self.broken is not None:
            call.done = True
            call.sink.call_failed(call, self.broken)
            return
        call.request_id = request_id = str(next(_request_ids))
        call.runner = self
        self.calls[request_id] = call
        request = pb.CallToolRequest(
            name=call.tool.name, arguments_json=orjson.dumps(call.arguments).decode()
        )
        if call.progress_token is not None:
            request.progress_token = str(call.progress_token)
        if call.task is not None:
            request.task_id = call.task.id
        if call.auth is not None:
            request.auth_json = orjson.dumps(call.auth).decode()
        self.send(pb.Envelope(request_id=request_id, call_tool=request))
        if timeout is not None:
            call.timer = asyncio.get_running_loop().call_later(timeout, self._timed_out, call, timeout)

    def cancel(self, call: Call) -> None:
        """The call was dropped (cancelled by the client): tell the process to stop it."""
        call.done = True
        self._forget(call, notify=True)

    def fail(self, call: Call, message: str) -> None:
        if not call.done:
            call.done = True
            self._forget(call, notify=False)
            call.sink.call_failed(call, message)

    def _timed_out(self, call: Call, timeout: float) -> None:
        if not call.done:
            call.done = True
            self._forget(call, notify=True)
            call.sink.call_failed(call, f"timed out after {timeout:g}s and was cancelled")

    def _forget(self, call: Call, *, notify: bool) -> None:
        if self.calls.pop(call.request_id, None) is not None and notify:
            self.send(pb.Envelope(cancel=pb.CancelRequest(request_id=call.request_id)))
        self.raw.pop(call.request_id, None)
        if call.timer is not None:
            call.timer.cancel()

    # -- input ---------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        if self.broken is not None:
            return  # after a protocol error nothing from this process is trusted
        try:
            for item in self.decoder.feed(data):
                if isinstance(item, wire.Raw):
                    self._on_raw(item)
                else:
                    handler = self._handlers.get(item.WhichOneof("msg") or "")
                    if handler is None:
                        self.on_output("stderr", f"ignoring unsupported frame {item.WhichOneof('msg')!r}")
                    else:
                        handler(item)
        except wire.FrameError as exc:
            self.break_off(f"{self.label}: protocol error from tool process: {exc}")

    def end_of_input(self) -> None:
        if self.broken is None:
            try:
                self.decoder.close()
            except wire.FrameError as exc:
                self.break_off(f"{self.label}: protocol error from tool process: {exc}")

    def break_off(self, reason: str) -> None:
        """Stop trusting the process (the worker kills it)."""
        self.broken = reason
        self.on_output("stderr", reason)

    def shut(self, reason: str) -> None:
        """The process is gone: fail everything still waiting for it, exactly once."""
        if self.broken is None:
            self.broken = reason
        for call in list(self.calls.values()):
            self.fail(call, reason)
        for future in self.requests.values():
            if not future.done():
                future.set_exception(ChannelError(reason))
        if not self.hello.done():
            self.hello.set_result(None)
        self.raw.clear()
        self.writer.close()

    # -- frame handlers ----------------------------------------------------------------
    def _call_result(self, envelope: pb.Envelope) -> None:
        call = self.calls.get(envelope.request_id)
        if call is None:
            return
        request_id = envelope.request_id
        unreadable = request_id in self.raw and self.raw[request_id] is None
        content = self.raw.pop(request_id, None)
        self._forget(call, notify=False)
        if unreadable:
            self.fail(call, "its result could not be read from the tool process's spool file")
        elif not call.done:
            call.done = True
            response = envelope.call_result
            call.sink.call_answered(call, tool_answer(response, content, self.trusted), response)

    def _progress(self, envelope: pb.Envelope) -> None:
        call = self.calls.get(envelope.request_id)
        if call is not None:
            note = envelope.progress
            progress = note.progress_value or float(note.progress)
            total = note.total_value or (float(note.total) if note.total else None)
            call.sink.call_progress(call, progress, total, note.message)

    def _task_status(self, envelope: pb.Envelope) -> None:
        """A tool running as a task reports its status (working / input_required) or message."""
        call = self.calls.get(envelope.request_id)
        if call is not None and call.task is not None:
            note = envelope.task_status_response
            message = note.message or (f"{note.progress}/{note.total}" if note.total else "")
            call.sink.call_task_status(call, note.state, message)

    def _log(self, envelope: pb.Envelope) -> None:
        entry = envelope.log
        call = self.calls.get(envelope.request_id)
        sink = self.on_log if call is None else partial(call.sink.call_log, call)
        if self.log_limit.allow(sink):
            sink(entry.level, entry.logger, _json_or_text(entry.data_json))

    def _raw_header(self, envelope: pb.Envelope) -> None:
        """A payload handed over as a spool file."""
        request_id = envelope.request_id
        path = envelope.raw_header.path
        parts = read_spooled(path, self.spool_dir)
        if parts is None and (request_id in self.calls or request_id in self.requests):
            self.raw[request_id] = None
        elif parts is not None:
            self._on_raw(wire.Raw(envelope.raw_header, parts))

    def _on_raw(self, raw: wire.Raw) -> None:
        if raw.header.content_type == wire.RAW_RESULT_JSON:
            if raw.header.transfer_id in self.calls:
                self.raw[raw.header.transfer_id] = raw.parts
            # else: the result of a call cancelled meanwhile; nobody wants it
        elif raw.header.content_type == wire.RAW_RESOURCE_JSON:
            if raw.header.transfer_id in self.requests:
                self.raw[raw.header.transfer_id] = raw.parts
        else:
            self.on_output("stderr", f"ignoring a raw payload of type {raw.header.content_type!r}")

    def _heartbeat_reply(self, envelope: pb.Envelope) -> None:
        if envelope.request_id:
            self._answer(envelope)
        elif envelope.heartbeat_reply.blocked_tool:  # the process's watchdog, unasked
            self.blocked_tool = envelope.heartbeat_reply.blocked_tool

    def running_tools(self) -> list[str]:
        return sorted({call.tool.name for call in self.calls.values()})

    def _hello(self, envelope: pb.Envelope) -> None:
        if not self.hello.done():
            self.hello.set_result(envelope.hello)

    def _answer(self, envelope: pb.Envelope) -> None:
        future = self.requests.get(envelope.request_id)
        if future is not None and not future.done():
            future.set_result(envelope)

    def _notice(self, envelope: pb.Envelope) -> None:
        if self.on_notice is not None:
            self.on_notice(envelope)

    def _client_request(self, envelope: pb.Envelope) -> None:
        """Sampling, elicitation or roots, asked by a tool during a call: for the client
        session that made the call (the call's sink); answered with the same request id."""
        kind = envelope.WhichOneof("msg") or ""
        request_id = envelope.request_id

        def reply(result: dict[str, Any] | None, error: str | None) -> None:
            self.send(client_reply(kind, request_id, result, error))

        call = self.calls.get(envelope.call_id) if envelope.call_id else None
        method, params, timeout = client_request(envelope)
        if call is None or call.done:
            reply(None, f"{method} can only be asked during a tool call that is still running")
            return
        call.sink.call_request(call, method, params, timeout or None, reply)

    def _register_middleware(self, envelope: pb.Envelope) -> None:
        self.middleware.append(envelope.register_middleware)
        reply = pb.RegisterMiddlewareResponse(success=True)
        self.send(pb.Envelope(request_id=envelope.request_id, register_middleware_response=reply))

    def _control(self, envelope: pb.Envelope) -> None:
        """A tool-list control request from the tool process: apply it, answer with the active tools."""
        if self.on_control is None:
            names: list[str] = []
        else:
            call = self.calls.get(envelope.call_id) if envelope.call_id else None
            names = self.on_control(call, envelope)
        reply = pb.ActiveToolsResponse(tool_names=names)
        self.send(pb.Envelope(request_id=envelope.request_id, active_tools=reply))


def fail_call(call: Call, message: str) -> None:
    """Answer a call with an error, once, wherever it is (waiting, in middleware, in a tool process)."""
    if call.runner is not None:
        call.runner.fail(call, message)
    elif not call.done:
        call.done = True
        call.sink.call_failed(call, message)


def cancel_call(call: Call) -> None:
    """The client dropped the call: no answer; a running call is told to stop."""
    if call.runner is not None:
        call.runner.cancel(call)
    call.done = True


def read_spooled(path: str, spool_dir: str) -> list[bytes] | None:
    """Map a spool file and delete it (the mapping stays readable); None if impossible.

    Only a regular file directly inside `spool_dir` (the directory the host named for this
    process; a real directory, not a link) is touched: a path elsewhere is refused untouched."""
    if not spool_dir or os.path.dirname(path) != spool_dir or not spool_path_safe(spool_dir):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        data = mmap.mmap(fd, info.st_size, access=mmap.ACCESS_READ) if info.st_size else b""
    except OSError:
        return None
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
    return [data]  # type: ignore[list-item]  # a read-only mmap is a bytes-like buffer


def spool_path_safe(spool_dir: str) -> bool:
    """The spool directory is a real directory of ours (not a symlink to somewhere else)."""
    try:
        info = os.lstat(spool_dir)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def _json_or_text(text: str) -> Any:
    try:
        return orjson.loads(text) if text else None
    except orjson.JSONDecodeError:
        return text
