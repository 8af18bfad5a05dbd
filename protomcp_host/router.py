"""Carries out one session's events: answers go to its writer, tool calls go to the
supervisor that owns the tool, cancellations reach the running call."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import orjson

from protomcp_host.protocol.session import CancelCall, Send, Session, StartCall
from protomcp_host.worker import CallHooks, WorkerError

if TYPE_CHECKING:
    from protomcp_host.app import Host

Writer = Callable[[bytes], None]


class Router:
    def __init__(self, host: Host, session: Session, write: Writer, calls: anyio.abc.TaskGroup) -> None:
        self.host = host
        self.session = session
        self.write = write
        self.calls = calls
        self.running: dict[bytes, anyio.CancelScope] = {}
        self._idle = anyio.Event()
        self._idle.set()

    def feed(self, line: bytes) -> None:
        """Handle one line from the client."""
        for event in self.session.receive(line):
            if isinstance(event, Send):
                self.write(event.data)
            elif isinstance(event, StartCall):
                self._idle = anyio.Event() if self._idle.is_set() else self._idle
                self.running[event.id] = scope = anyio.CancelScope()
                self.calls.start_soon(self._call, event, scope)
            elif isinstance(event, CancelCall):
                scope = self.running.get(event.call.id)
                if scope is not None:
                    scope.cancel()

    def emit(self, data: bytes | None) -> None:
        if data is not None:
            self.write(data)

    async def wait_idle(self) -> None:
        """Return once no call is running."""
        await self._idle.wait()

    async def _call(self, call: StartCall, scope: anyio.CancelScope) -> None:
        session = self.session
        supervisor = self.host.owner(call.tool.owner)
        hooks = CallHooks(
            on_progress=lambda progress, total, message: self.emit(
                session.progress(call, progress, total, message)
            ),
            on_log=lambda level, logger, data: self.emit(session.log(level, logger, data)),
        )
        token = "" if call.progress_token is None else str(call.progress_token)
        timeout = self.host.call_timeout
        try:
            with scope:
                try:
                    response = await supervisor.call(
                        call.tool.name, orjson.dumps(call.arguments).decode(), token, hooks, timeout
                    )
                    self.emit(session.call_done(call, response))
                except WorkerError as exc:
                    self.emit(session.call_failed(call, f"Tool '{call.tool.name}' failed: {exc}"))
                except TimeoutError:
                    message = f"Tool '{call.tool.name}' did not finish within {timeout:g}s and was cancelled"
                    self.emit(session.call_failed(call, message))
        finally:
            del self.running[call.id]
            if not self.running:
                self._idle.set()
