"""The Envelope frame channel to one tool process: encoding, decoding, correlation.

Frames are dispatched by kind through a table. The calls layer's requests (tool calls, middleware
phases, forwarded reads) are legs, kept by their Envelope request id (open_requests.py) until the
answer frame arrives; whatever the process sends for one meanwhile (progress, logs, tool-list control,
requests for the client: asks.py) goes to that leg and to no one else, and its user-state requests
reach that leg's caller's state. A request naming no running leg is answered with an error.
The host's own requests (handshake lists, heartbeats) wait on futures. No frame handler can
break the channel: a failure is reported with the frame's kind, and the request it belonged to
is answered.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

import orjson

from protomcp_host.processes.asks import CLIENT_REQUESTS, CONTROL_REQUESTS, Asks
from protomcp_host.processes.events import Leg, ProcessEvents
from protomcp_host.processes.open_requests import OpenRequests
from protomcp_host.processes.pipes import BatchedWriter
from protomcp_host.processes.spool import read_spooled
from protomcp_sdk import wire
from protomcp_sdk.wire import envelope_pb2 as pb

_request_ids = itertools.count(1)  # host-wide and never reused: an id names one request for good

LEG_ANSWERS = (
    "call_result",
    "middleware_intercept_response",
    "read_resource_response",
    "get_prompt_response",
    "completion_response",
)
HOST_ANSWERS = (
    "tool_list",
    "reload_response",
    "resource_list_response",
    "resource_template_list_response",
    "prompt_list_response",
)


class ChannelError(Exception):
    """The tool process cannot answer: it died, or broke the protocol."""


def new_request_id() -> str:
    return str(next(_request_ids))


class Channel:
    def __init__(self, label: str, to_child: int, events: ProcessEvents, *, spool_dir: str = "") -> None:
        self.label = label
        self.events = events
        self.writer = BatchedWriter(to_child)
        self.decoder = wire.FrameDecoder()
        self.hello: asyncio.Future[pb.Hello | None] = asyncio.get_running_loop().create_future()
        self.open_requests = OpenRequests()  # the calls layer's requests (legs), by Envelope request id
        self.requests: dict[str, asyncio.Future[pb.Envelope]] = {}  # the host's own requests
        self.asks = Asks(self.send, self.open_requests, events)  # what the process asks of the host
        self.trusted = False  # our own SDK: its result JSON comes from orjson and needs no re-check
        self.spool_dir = spool_dir  # the one directory it may hand files over in (the host named it)
        self.broken: str | None = None  # why nothing more is read from it
        self.blocked_tool = ""  # the tool its watchdog last said blocks its event loop
        self._handlers: dict[str, Callable[[pb.Envelope], None]] = {
            **dict.fromkeys(LEG_ANSWERS, self._leg_answer),
            **dict.fromkeys(HOST_ANSWERS, self._answer),
            **dict.fromkeys(CLIENT_REQUESTS, self.asks.client_request),
            **dict.fromkeys(CONTROL_REQUESTS, self.asks.control),
            "progress": self._progress,
            "log": self._log,
            "task_status_response": self._task_status,
            "raw_header": self._raw_header,
            "hello": self._hello,
            "heartbeat_reply": self._heartbeat_reply,
            "register_middleware": self.asks.register_middleware,
            "user_state_request": self.asks.user_state,
            "resource_changed": lambda envelope: self.events.notice(self.label, envelope),
        }

    @property
    def middleware(self) -> list[pb.RegisterMiddlewareRequest]:
        """The middleware it registered (right after Hello)."""
        return self.asks.middleware

    # -- output --------------------------------------------------------------------
    def send(self, envelope: pb.Envelope) -> None:
        if not self.writer.closed:
            self.writer.write(wire.encode(envelope))

    def close(self) -> None:
        """Close the process's input: "finish your calls and exit"."""
        self.writer.close()

    async def request(self, envelope: pb.Envelope, *, timeout: float | None) -> pb.Envelope:
        """A request of the host's own (handshake, heartbeat): wait for the frame answering it.
        Raises ChannelError or TimeoutError."""
        if self.broken is not None:
            raise ChannelError(self.broken)
        envelope.request_id = request_id = new_request_id()
        self.requests[request_id] = future = asyncio.get_running_loop().create_future()
        self.send(envelope)
        try:
            async with asyncio.timeout(timeout):
                return await future
        finally:
            self.requests.pop(request_id, None)

    # -- the calls layer's requests -------------------------------------------------------------
    def start(self, envelope: pb.Envelope, leg: Leg) -> str:
        """Send a request whose answer (or failure) goes to `leg`; returns its request id."""
        if self.broken is not None:
            leg.failed(self.broken)
            return ""
        envelope.request_id = request_id = new_request_id()
        self.open_requests.add(request_id, leg)
        leg.sent(self, request_id)
        self.send(envelope)
        return request_id

    def drop(self, request_id: str, *, cancel: bool) -> None:
        """The calls layer is done with a request (answered elsewhere, timed out, cancelled): forget
        it; with `cancel`, the process is told to stop working on it."""
        if self.open_requests.end(request_id) is not None and cancel:
            self.send(pb.Envelope(cancel=pb.CancelRequest(request_id=request_id)))
        self.open_requests.forget(request_id)

    def hold(self, key: str) -> None:
        """Something here waits for a request still to come (a middleware in call_next): the
        process must keep its input open until `release(key)`."""
        self.open_requests.hold(key)

    def release(self, key: str) -> None:
        self.open_requests.release(key)

    # -- input ---------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        if self.broken is not None:
            return  # after a protocol error nothing from this process is trusted
        try:
            for item in self.decoder.feed(data):
                if isinstance(item, wire.Raw):
                    self._on_raw(item)
                else:
                    self._dispatch(item)
        except wire.FrameError as exc:
            self.break_off(f"{self.label}: protocol error from tool process: {exc}")

    def _dispatch(self, envelope: pb.Envelope) -> None:
        kind = envelope.WhichOneof("msg") or ""
        handler = self._handlers.get(kind)
        if handler is None:
            self.events.output(self.label, "stderr", f"ignoring unsupported frame {kind!r}")
            return
        try:
            handler(envelope)
        except Exception as exc:  # a bug in a handler costs this frame, never the channel
            self.events.problem(f"{self.label}: error handling a {kind!r} frame: {exc!r}")
            self._answer_failure(kind, envelope, f"the host could not handle it: {exc!r}")

    def _answer_failure(self, kind: str, envelope: pb.Envelope, message: str) -> None:
        """Whoever waits for the frame that failed gets an error, so nothing hangs."""
        if not self.asks.refuse(kind, envelope, message) and kind in LEG_ANSWERS:
            leg = self.open_requests.end(envelope.request_id)
            if leg is not None:
                leg.failed(message)

    def end_of_input(self) -> None:
        if self.broken is None:
            try:
                self.decoder.close()
            except wire.FrameError as exc:
                self.break_off(f"{self.label}: protocol error from tool process: {exc}")

    def break_off(self, reason: str) -> None:
        """Stop trusting the process (the worker kills it)."""
        self.broken = reason
        self.events.output(self.label, "stderr", reason)

    def shut(self, reason: str) -> None:
        """The process is gone: fail everything still waiting for it, exactly once."""
        if self.broken is None:
            self.broken = reason
        self.open_requests.fail_all(reason)
        for future in self.requests.values():
            if not future.done():
                future.set_exception(ChannelError(reason))
        if not self.hello.done():
            self.hello.set_result(None)
        self.writer.close()

    # -- frame handlers ----------------------------------------------------------------
    def _leg_answer(self, envelope: pb.Envelope) -> None:
        request_id = envelope.request_id
        leg = self.open_requests.end(request_id)
        if leg is None:
            self.open_requests.forget(request_id)
            return  # answered after it was dropped: nobody wants it
        came_ahead, raw = self.open_requests.take_raw(request_id)  # (content outside the frame)
        if came_ahead and raw is None:  # its spool file was unreadable
            leg.failed(f"{self.label}: the answer could not be read from the tool process's spool file")
            return
        leg.answered(envelope, raw, self.trusted)

    def _progress(self, envelope: pb.Envelope) -> None:
        leg = self.open_requests.legs.get(envelope.request_id)
        if leg is not None:
            leg.progress(envelope.progress)

    def _task_status(self, envelope: pb.Envelope) -> None:
        leg = self.open_requests.legs.get(envelope.request_id)
        if leg is not None:
            leg.task_status(envelope.task_status_response)

    def _log(self, envelope: pb.Envelope) -> None:
        entry = envelope.log
        data = _json_or_text(entry.data_json)
        leg = self.open_requests.legs.get(envelope.request_id) if envelope.request_id else None
        if entry.output:  # a line a request printed: the host's stderr, and that request's session
            line = data if isinstance(data, str) else entry.data_json
            stream = "stdout" if entry.level == "info" else "stderr"
            if leg is None:  # it ended meanwhile: like output outside any request
                self.events.output(self.label, stream, line)
            else:
                self.events.echo(self.label, line)
                if stream == "stderr":
                    self.open_requests.printed_line(envelope.request_id, line)
                leg.log(entry.level, self.label, line)
        elif leg is None:  # outside any request (or after it ended): nobody's session
            self.events.log(self.label, entry.level, entry.logger, data)
        else:
            self.events.logged(self.label, entry.level, entry.logger, data)
            leg.log(entry.level, entry.logger, data)

    def _raw_header(self, envelope: pb.Envelope) -> None:
        """A payload handed over as a spool file."""
        request_id = envelope.request_id
        parts = read_spooled(envelope.raw_header.path, self.spool_dir)
        if parts is None and request_id in self.open_requests.legs:
            self.open_requests.raw[request_id] = None
        elif parts is not None:
            self._on_raw(wire.Raw(envelope.raw_header, parts))

    def _on_raw(self, raw: wire.Raw) -> None:
        if raw.header.content_type in (wire.RAW_RESULT_JSON, wire.RAW_RESOURCE_JSON):
            if raw.header.transfer_id in self.open_requests.legs:
                self.open_requests.raw[raw.header.transfer_id] = raw.parts
            # else: the answer to a request dropped meanwhile; nobody wants it
        else:
            self.events.output(
                self.label, "stderr", f"ignoring a raw payload of type {raw.header.content_type!r}"
            )

    def _heartbeat_reply(self, envelope: pb.Envelope) -> None:
        if envelope.request_id:
            self._answer(envelope)
        elif envelope.heartbeat_reply.blocked_tool:  # the process's watchdog, unasked
            self.blocked_tool = envelope.heartbeat_reply.blocked_tool

    def _hello(self, envelope: pb.Envelope) -> None:
        if not self.hello.done():
            self.hello.set_result(envelope.hello)

    def _answer(self, envelope: pb.Envelope) -> None:
        future = self.requests.get(envelope.request_id)
        if future is not None and not future.done():
            future.set_result(envelope)


def _json_or_text(text: str) -> Any:
    try:
        return orjson.loads(text) if text else None
    except orjson.JSONDecodeError:
        return text
