"""Records of the standard ``logging`` module become MCP log messages.

A handler on the root logger sends each record as a ``LogMessage`` frame (level mapped
to MCP's, logger name kept); the host filters them by each session's ``logging/setLevel``.
Records made during a call carry the call's id, so they reach the client that made it.
The root logger's default level is lowered from WARNING to INFO (a tool file may set its
own), and Python's last-resort stderr handler no longer fires, so no record is also
captured as stderr output.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable

import orjson

from protomcp_sdk.wire import envelope_pb2 as pb

_FORMATTER = logging.Formatter()
CURRENT_CALL: contextvars.ContextVar[str] = contextvars.ContextVar("protomcp_call", default="")


def mcp_level(levelno: int) -> str:
    if levelno >= logging.CRITICAL:
        return "critical"
    if levelno >= logging.ERROR:
        return "error"
    if levelno >= logging.WARNING:
        return "warning"
    if levelno >= logging.INFO:
        return "info"
    return "debug"


class EnvelopeHandler(logging.Handler):
    def __init__(self, send: Callable[[pb.Envelope], None]) -> None:
        super().__init__()
        self.send = send

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            if record.exc_info:
                text += "\n" + _FORMATTER.formatException(record.exc_info)
            entry = pb.LogMessage(
                level=mcp_level(record.levelno), logger=record.name, data_json=orjson.dumps(text).decode()
            )
            self.send(pb.Envelope(request_id=CURRENT_CALL.get(), log=entry))
        except Exception:
            self.handleError(record)


def install(send: Callable[[pb.Envelope], None]) -> None:
    """Route logging records to the host (before the tool file is imported)."""
    root = logging.getLogger()
    root.addHandler(EnvelopeHandler(send))
    if root.level == logging.WARNING:
        root.setLevel(logging.INFO)
