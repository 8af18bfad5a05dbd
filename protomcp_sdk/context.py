"""The per-call Context a tool can ask for by annotating a parameter with it."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import orjson

from protomcp_sdk import protomcp_pb2 as pb

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class _Sent:
    """Returned by Context methods: the message is already queued when the call returns,
    so ``await ctx.info(...)`` (async tools) and plain ``ctx.info(...)`` (sync tools) both work."""

    __slots__ = ()

    def __await__(self) -> Generator[None, None, None]:
        return
        yield  # pragma: no cover - makes this a generator


_SENT = _Sent()


class Context:
    """Talks back to the client while a tool runs: progress, log messages, cancellation.

    Every method is safe to call from async tools (``await ctx.info("...")``) and from sync
    tools running in a worker thread (``ctx.info("...")``).
    """

    def __init__(
        self, request_id: str, progress_token: str, send: Callable[[pb.Envelope], None], tool_name: str = ""
    ) -> None:
        self.request_id = request_id
        self.progress_token = progress_token
        self.tool_name = tool_name
        self._send = send
        self._cancelled = False  # a plain flag: set once by the loop, read by the tool's thread

    @property
    def cancelled(self) -> bool:
        """True once the client cancelled this call. Long sync loops should check it."""
        return self._cancelled

    def _cancel(self) -> None:
        self._cancelled = True

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> _Sent:
        """Report progress; reaches the client only if it asked for progress on this call."""
        if self.progress_token:
            note = pb.ProgressNotification(
                progress_token=self.progress_token,
                progress=int(progress),
                progress_value=float(progress),
                message=message or "",
            )
            if total is not None:
                note.total = int(total)
                note.total_value = float(total)
            self._send(pb.Envelope(request_id=self.request_id, progress=note))
        return _SENT

    def log(self, level: str, message: Any, *, logger: str | None = None) -> _Sent:
        """Send a log message to the client (MCP ``notifications/message``)."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; use one of {', '.join(LOG_LEVELS)}")
        entry = pb.LogMessage(
            level=level,
            logger=logger or self.tool_name,
            data_json=orjson.dumps(message, default=str).decode(),
        )
        self._send(pb.Envelope(request_id=self.request_id, log=entry))
        return _SENT

    def debug(self, message: Any) -> _Sent:
        return self.log("debug", message)

    def info(self, message: Any) -> _Sent:
        return self.log("info", message)

    def warning(self, message: Any) -> _Sent:
        return self.log("warning", message)

    def error(self, message: Any) -> _Sent:
        return self.log("error", message)
