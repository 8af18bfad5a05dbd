"""The host's metrics, one set of instruments recorded into every backend switched on: Prometheus
(prometheus.py, served at GET /metrics) and OpenTelemetry (otel.py, when the otel extra and the
OTEL_* environment ask for metrics). Until `enable`, `ON` is False, nothing is imported and every
function here returns at once: a stdio run without OpenTelemetry pays one flag test per call.

What a request costs when on: one dict lookup for the recorder bound to its (method, tool,
error type) (made once per key: the labelled series of each backend, pre-bound) and that
recorder's updates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

ON = False  # some backend records (read on the hot path by calls/metering.py)

Recorder = Callable[[float], None]
"""Records one finished request: its duration in seconds."""

OK, ERROR, CANCELLED = "ok", "error", "cancelled"  # the outcome label
OTHER = "_other"  # a tool label once MAX_SERIES request series exist (clients choose tool names)
MAX_SERIES = 4096
# the duration histogram's buckets, seconds: the semantic convention's advice, with finer steps
# below 10 ms (a call here takes well under 1 ms)
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
PROCESS_EVENTS = ("started", "crashed", "reloaded")  # a tool process's lifecycle, counted
TASK_STATES = ("working", "input_required", "completed", "failed", "cancelled")  # the MCP task statuses


class Backend(Protocol):
    """One place the instruments are recorded into (Prometheus, OpenTelemetry)."""

    def request(self, method: str, tool: str, outcome: str, error: str) -> Recorder: ...
    def sessions(self, delta: int) -> None: ...
    def streams(self, delta: int) -> None: ...
    def tool_process(self, file: str, event: str) -> None: ...
    def task(self, state: str) -> None: ...
    def store_up(self, up: bool) -> None: ...
    def rate_limit_refused(self, tool: str) -> None: ...


_backends: list[Backend] = []
_recorders: dict[tuple[str, str, str], Recorder] = {}


def enable(backend: Backend) -> None:
    """Record into `backend` from now on (prometheus.py and otel.py call this)."""
    global ON
    _backends.append(backend)
    _recorders.clear()
    ON = True


def outcome_of(error: str) -> str:
    """The outcome label of an error type ("" = none: ok)."""
    if not error:
        return OK
    return CANCELLED if error == CANCELLED else ERROR


def request_done(method: str, tool: str, error: str, seconds: float) -> None:
    """A request was answered (or cancelled) after `seconds`. `error`: "" when it succeeded, else
    its error type: "tool_error" (an isError result), a JSON-RPC error code, "cancelled"."""
    recorder = _recorders.get((method, tool, error))
    if recorder is None:
        recorder = _bind(method, tool, error)
    recorder(seconds)


def _bind(method: str, tool: str, error: str) -> Recorder:
    if len(_recorders) >= MAX_SERIES:
        tool = OTHER
        found = _recorders.get((method, tool, error))
        if found is not None:
            return found
    outcome = outcome_of(error)
    bound = [backend.request(method, tool, outcome, error) for backend in _backends]
    if len(bound) == 1:
        recorder = bound[0]
    else:

        def recorder(seconds: float) -> None:
            for record in bound:
                record(seconds)

    _recorders[(method, tool, error)] = recorder
    return recorder


def session_opened() -> None:
    """A stateful session began (stdio, Streamable HTTP, HTTP+SSE, proto-mcp)."""
    for backend in _backends:
        backend.sessions(1)


def session_closed() -> None:
    for backend in _backends:
        backend.sessions(-1)


def stream_opened() -> None:
    """An SSE stream is open to a client (a GET stream, a POST answered as SSE, /sse)."""
    for backend in _backends:
        backend.streams(1)


def stream_closed() -> None:
    for backend in _backends:
        backend.streams(-1)


def tool_process(label: str, event: str) -> None:
    """A tool process `event` ("started", "crashed", "reloaded") of the file `label`."""
    for backend in _backends:
        backend.tool_process(label, event)


def task(state: str) -> None:
    """A task entered `state` (working, input_required, completed, failed, cancelled)."""
    for backend in _backends:
        backend.task(state)


def store_up(up: bool) -> None:
    """Whether the store (--store) answered its last ping."""
    for backend in _backends:
        backend.store_up(up)


def rate_limit_refused(tool: str) -> None:
    """A call to `tool` was refused for being over its rate limit (counted by tool)."""
    for backend in _backends:
        backend.rate_limit_refused(tool)
