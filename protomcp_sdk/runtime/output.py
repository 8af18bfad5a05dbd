"""The tool process's ``sys.stdout`` and ``sys.stderr``: what a call prints is sent to the host
as that call's output lines (``LogMessage`` frames with ``output`` set, tagged with the call),
so it reaches only the session that made the call. Text written outside any call (at import,
from a background thread) or in a child the tool forked (whose frame pipe is gone) goes to the
real stream, which the host shows on its own stderr."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any, TextIO

import orjson

from protomcp_sdk.runtime.logs import CURRENT_CALL
from protomcp_sdk.wire import envelope_pb2 as pb

MAX_PARTIAL = 64 * 1024  # a call writing without newlines is sent in pieces of this size


class CallOutput:
    """A text stream that routes each write by the call it is made in (a context variable)."""

    def __init__(self, real: TextIO, stream: str, send: Callable[[pb.Envelope], None]) -> None:
        self.real = real
        self.level = "info" if stream == "stdout" else "warning"
        self.send = send
        self._partial: dict[str, str] = {}  # per call: text after its last newline
        self._lock = threading.Lock()
        self.forked = False  # in a forked child: no frames, plain writes
        os.register_at_fork(after_in_child=self._in_child)

    def _in_child(self) -> None:
        self.forked = True
        self._lock = threading.Lock()  # another thread may have held it at the fork

    def write(self, text: str) -> int:
        call = CURRENT_CALL.get()
        if not call or self.forked:
            return self.real.write(text)
        with self._lock:
            pending = self._partial.pop(call, "") + text
            *lines, rest = pending.split("\n")
            if len(rest) >= MAX_PARTIAL:
                lines.append(rest)
            elif rest:
                self._partial[call] = rest
        for line in lines:
            self._line(call, line)
        return len(text)

    def flush(self) -> None:
        call = CURRENT_CALL.get()
        if call and not self.forked:
            with self._lock:
                rest = self._partial.pop(call, "")
            if rest:
                self._line(call, rest)
        self.real.flush()

    def block(self, text: str, level: str | None = None) -> None:
        """Several lines that belong together (a traceback) as one message of the current call:
        one log notification for the client (at `level`), not one per line."""
        call = CURRENT_CALL.get()
        if not call or self.forked:
            self.real.write(text)
            self.real.flush()
            return
        self.flush()
        self._line(call, text.rstrip("\n"), level)

    def _line(self, call: str, line: str, level: str | None = None) -> None:
        entry = pb.LogMessage(level=level or self.level, data_json=orjson.dumps(line).decode(), output=True)
        self.send(pb.Envelope(request_id=call, log=entry))

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:  # fileno, encoding, buffer, ... of the real stream
        return getattr(self.real, name)


def install(send: Callable[[pb.Envelope], None]) -> None:
    """Route what calls print to their sessions (before the tool file is imported)."""
    sys.stdout = CallOutput(sys.stdout, "stdout", send)
    sys.stderr = CallOutput(sys.stderr, "stderr", send)
