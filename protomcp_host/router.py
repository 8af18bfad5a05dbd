"""Carries out one session's events: answers go to its writer, tool calls go to the
supervisor that owns the tool, cancellations reach the running call."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
import orjson

from protomcp_host.protocol.session import CancelCall, Send, Session, StartCall
from protomcp_host.worker import Call
from protomcp_sdk import protomcp_pb2 as pb

if TYPE_CHECKING:
    from protomcp_host.app import Host

Writer = Callable[[bytes], None]


class Router:
    def __init__(self, host: Host, session: Session, write: Writer) -> None:
        self.host = host
        self.session = session
        self.write = write
        self.running: dict[bytes, Call] = {}
        self._idle = anyio.Event()
        self._idle.set()

    def feed(self, line: bytes) -> None:
        """Handle one line from the client."""
        for event in self.session.receive(line):
            if isinstance(event, Send):
                self.write(event.data)
            elif isinstance(event, StartCall):
                self._start(event)
            elif isinstance(event, CancelCall):
                call = self.running.pop(event.call.id, None)
                if call is not None:
                    call.cancel()
                    self._check_idle()

    def _start(self, event: StartCall) -> None:
        session = self.session
        name = event.tool.name

        def on_result(response: pb.CallToolResponse, content: list[bytes] | None, trusted: bool) -> None:
            self._finish(event, session.call_done(event, response, content, trusted=trusted))

        def on_failure(message: str) -> None:
            self._finish(event, session.call_failed(event, f"Tool '{name}' failed: {message}"))

        call = Call(
            name=name,
            arguments_json=orjson.dumps(event.arguments).decode(),
            progress_token="" if event.progress_token is None else str(event.progress_token),
            on_result=on_result,
            on_failure=on_failure,
            on_progress=lambda progress, total, message: self._emit(
                session.progress(event, progress, total, message)
            ),
            on_log=lambda level, logger, data: self._emit(session.log(level, logger, data)),
        )
        if self._idle.is_set():
            self._idle = anyio.Event()
        self.running[event.id] = call
        self.host.owner(event.tool.owner).dispatch(call, self.host.call_timeout)

    def _finish(self, event: StartCall, data: bytes | None) -> None:
        self.running.pop(event.id, None)
        self._emit(data)
        self._check_idle()

    def _emit(self, data: bytes | None) -> None:
        if data is not None:
            self.write(data)

    def _check_idle(self) -> None:
        if not self.running:
            self._idle.set()

    async def wait_idle(self) -> None:
        """Return once no call is running."""
        await self._idle.wait()

    def cancel_all(self) -> None:
        for call in self.running.values():
            call.cancel()
        self.running.clear()
        self._idle.set()
