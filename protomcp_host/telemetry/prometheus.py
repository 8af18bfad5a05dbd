"""The metrics as Prometheus instruments (prometheus-client), and the scrape's text.

With `--workers N` every worker records into files of one folder (the library's multiprocess
mode: PROMETHEUS_MULTIPROC_DIR, made empty by the parent before the workers start, removed when
it exits; the mode is chosen when prometheus_client is imported, so the variable is in the
workers' environment from their start), and a scrape, whichever worker serves it, reads every
worker's files. A dead worker's gauges are dropped; its counters and histograms are folded into
one archive (multiprocess.py), so totals never go back and the folder stays bounded. Without
workers the values are this process's memory.

Names follow Prometheus' conventions; the duration histogram is the MCP semantic convention's
`mcp.server.operation.duration`, its labels the convention's attributes with `_` for `.`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from protomcp_host.telemetry import metrics
from protomcp_host.telemetry.durations import Durations
from protomcp_host.telemetry.metrics import BUCKETS, Recorder
from protomcp_host.telemetry.multiprocess import MULTIPROC_ENV, FolderCollector

CONTENT_TYPE = CONTENT_TYPE_LATEST
METHOD, TOOL = "mcp_method_name", "gen_ai_tool_name"
DURATION = "mcp_server_operation_duration_seconds"
DURATION_COUNT = DURATION + "_count"
REQUESTS = "protomcp_requests"
REQUESTS_HELP = (
    "MCP requests answered, by method, tool (tools/call) and outcome (ok, error: a JSON-RPC error "
    "or an isError result, cancelled)"
)


class PrometheusMetrics:
    def __init__(self) -> None:
        self.folder = os.environ.get(MULTIPROC_ENV) or None
        # (multiprocess: the values live in the folder's files, read at each scrape)
        self.registry = CollectorRegistry(auto_describe=False)
        into = None if self.folder else self.registry
        about = "How long MCP requests took, from the message that brought each to the one that answered it"
        labels = [METHOD, TOOL, "error_type"]
        # (one process: a histogram kept by hand, durations.py; --workers: the library's, in files)
        self.duration: Histogram | Durations = (
            Histogram(DURATION, about, labels, buckets=BUCKETS, registry=None)
            if self.folder
            else Durations(DURATION, about, labels, BUCKETS)
        )
        self._sessions = Gauge(
            "protomcp_sessions", "Stateful MCP sessions open", multiprocess_mode="livesum", registry=into
        )
        self._streams = Gauge(
            "protomcp_open_streams", "SSE streams open to clients", multiprocess_mode="livesum", registry=into
        )
        self.processes = Counter(
            "protomcp_tool_process_events",
            "Tool processes started (a first start, a restart, a reload), crashed, and reloads, by file",
            ["file", "event"],
            registry=into,
        )
        self.tasks = Counter(
            "protomcp_tasks", "MCP tasks entering each state on this host", ["state"], registry=into
        )
        self._store_up = Gauge(
            "protomcp_store_up",
            "1 when the store (--store) answered the last ping, else 0",
            multiprocess_mode="livemostrecent",
            registry=into,
        )
        self.refusals = Counter(
            "protomcp_rate_limit_refusals",
            "Tool calls refused for being over a rate limit",
            [TOOL],
            registry=into,
        )
        if into is not None:  # (multiprocess: the scrape's collector counts them, see scrape)
            into.register(self.duration)
            into.register(WithRequests(self.duration.collect, only_requests=True))
        for state in metrics.TASK_STATES:  # (present at zero: a dashboard's rate() needs the series)
            self.tasks.labels(state)

    def request(self, method: str, tool: str, outcome: str, error: str) -> Recorder:
        # one instrument per request: protomcp_requests_total is its count, read at each scrape
        return self.duration.labels(method, tool, error).observe

    def sessions(self, delta: int) -> None:
        self._sessions.inc(delta)

    def streams(self, delta: int) -> None:
        self._streams.inc(delta)

    def tool_process(self, file: str, event: str) -> None:
        if event == "started":  # (a file's other events present at zero from its first start)
            for other in metrics.PROCESS_EVENTS:
                self.processes.labels(file, other)
        self.processes.labels(file, event).inc()

    def task(self, state: str) -> None:
        self.tasks.labels(state).inc()

    def store_up(self, up: bool) -> None:
        self._store_up.set(1 if up else 0)

    def rate_limit_refused(self, tool: str) -> None:
        self.refusals.labels(tool).inc()

    def scrape(self) -> bytes:
        """The text a scrape gets: every worker's values with --workers, else this process's."""
        if self.folder is None:
            return generate_latest(self.registry)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(WithRequests(FolderCollector(self.folder).collect))
        return generate_latest(registry)


class WithRequests:
    """A collector of `source`'s metrics (unless `only_requests`) and `protomcp_requests_total`,
    the requests answered by method, tool and outcome: the duration histogram's counts (every
    request is observed once), summed by outcome. A request records one instrument, not two."""

    def __init__(self, source: Callable[[], Iterable[Metric]], only_requests: bool = False) -> None:
        self.source = source
        self.only_requests = only_requests

    def collect(self) -> Iterator[Metric]:
        counts: dict[tuple[str, str, str], float] = {}
        for family in self.source():
            if family.name == DURATION:
                for sample in family.samples:
                    if sample.name == DURATION_COUNT:
                        labels = sample.labels
                        key = (labels[METHOD], labels[TOOL], metrics.outcome_of(labels["error_type"]))
                        counts[key] = counts.get(key, 0.0) + sample.value
            if not self.only_requests:
                yield family
        requests = CounterMetricFamily(REQUESTS, REQUESTS_HELP, labels=[METHOD, TOOL, "outcome"])
        for key, value in counts.items():
            requests.add_metric(key, value)
        yield requests


_metrics: PrometheusMetrics | None = None


def enable() -> PrometheusMetrics:
    """The Prometheus instruments, made and recorded into (once per process)."""
    global _metrics
    if _metrics is None:
        disable_created_metrics()  # type: ignore[no-untyped-call]  # (*_created: noise here)
        _metrics = PrometheusMetrics()
        metrics.enable(_metrics)
    return _metrics
