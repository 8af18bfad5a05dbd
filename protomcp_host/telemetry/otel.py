"""The metrics as OpenTelemetry instruments, when the otel extra is installed and OTEL_* ask for
metrics (protomcp_sdk.wire.tracing.METRICS_ON): the same instruments as prometheus.py, named in
OpenTelemetry's way (the duration is the MCP semantic convention's `mcp.server.operation.duration`,
in seconds, with its attributes), exported by the provider tracing.meter() sets up. Each worker
of --workers exports its own (the resource's process tells them apart)."""

from __future__ import annotations

from typing import Any

from protomcp_host.telemetry import metrics
from protomcp_host.telemetry.metrics import BUCKETS, Recorder
from protomcp_sdk.wire import tracing

METHOD, TOOL = "mcp.method.name", "gen_ai.tool.name"


class OtelMetrics:
    def __init__(self, meter: Any) -> None:
        self.requests = meter.create_counter(
            "protomcp.requests", unit="{request}", description="MCP requests answered, by outcome"
        )
        self.duration = meter.create_histogram(
            "mcp.server.operation.duration",
            unit="s",
            description="How long MCP requests took",
            explicit_bucket_boundaries_advisory=list(BUCKETS),
        )
        self._sessions = meter.create_up_down_counter("protomcp.sessions", unit="{session}")
        self._streams = meter.create_up_down_counter("protomcp.streams", unit="{stream}")
        self.processes = meter.create_counter("protomcp.tool_process.events", unit="{event}")
        self.tasks = meter.create_counter("protomcp.tasks", unit="{task}")
        self._store_up = meter.create_gauge("protomcp.store.up")
        self.refusals = meter.create_counter("protomcp.rate_limit.refusals", unit="{call}")

    def request(self, method: str, tool: str, outcome: str, error: str) -> Recorder:
        counted: dict[str, str] = {METHOD: method, "outcome": outcome}
        timed: dict[str, str] = {METHOD: method}
        if tool:
            counted[TOOL] = timed[TOOL] = tool
        if error:
            timed["error.type"] = error
        add, record = self.requests.add, self.duration.record

        def recorded(seconds: float) -> None:
            add(1, counted)
            record(seconds, timed)

        return recorded

    def sessions(self, delta: int) -> None:
        self._sessions.add(delta)

    def streams(self, delta: int) -> None:
        self._streams.add(delta)

    def tool_process(self, file: str, event: str) -> None:
        self.processes.add(1, {"file": file, "event": event})

    def task(self, state: str) -> None:
        self.tasks.add(1, {"state": state})

    def store_up(self, up: bool) -> None:
        self._store_up.set(1 if up else 0)

    def rate_limit_refused(self, tool: str) -> None:
        self.refusals.add(1, {TOOL: tool})


_metrics: OtelMetrics | None = None


def enable() -> bool:
    """Record into OpenTelemetry when OTEL_* ask for metrics (once per process); whether it does."""
    global _metrics
    if _metrics is None and tracing.METRICS_ON:
        _metrics = OtelMetrics(tracing.meter())
        metrics.enable(_metrics)
    return _metrics is not None
