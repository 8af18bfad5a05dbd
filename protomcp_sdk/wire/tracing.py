"""OpenTelemetry tracing for the host and its tool processes, off unless configured.

It is on when the OpenTelemetry SDK is installed (``pip install 'protomcp-tools[otel]'``) and
the standard environment asks for traces: ``OTEL_TRACES_EXPORTER`` names exporters (``otlp``,
``console``), or ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is
set; ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none`` turn it off. Everything else
(endpoint, headers, ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_BSP_*`` batching)
is read by the SDK itself. When it is off, nothing here imports ``opentelemetry``: callers test
``ON`` (one attribute read) and skip the rest.

Spans follow the OpenTelemetry MCP conventions: the host's ``{mcp.method.name} {target}`` span
(kind SERVER) per client request, under the ``traceparent``/``tracestate`` of the request's
``params._meta`` when it has one; the tool process's ``tools/call {tool}`` span is its child,
linked by the W3C trace context the host puts in the call's Envelope. Console output goes to
stderr: on stdio, stdout is the MCP stream. A tool process writes its console spans to the
host's own stderr (an fd the host passes, CONSOLE_FD_ENV), not to its stderr: the host captures
that as what the tool printed, and would show each line again, prefixed, and send it to the
client as log messages.

Metrics (the host's: protomcp_host/telemetry) go the same way: on when the SDK is installed and
``OTEL_METRICS_EXPORTER`` names exporters, or an OTLP endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT`` /
``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT``) is set; `meter()` gives the Meter, its provider reading
every ``OTEL_METRIC_EXPORT_INTERVAL`` (the SDK's own variable) and on exit.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from contextvars import Token
from importlib.util import find_spec
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:  # the otel extra: imported only once tracing is on
    from opentelemetry.context import Context
    from opentelemetry.metrics import Meter
    from opentelemetry.sdk.metrics.export import MetricExporter
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span, Tracer
    from opentelemetry.util.types import AttributeValue

__all__ = ["METRICS_ON", "ON", "attach", "detach", "end", "meter", "start", "traceparent"]


def _configured(env: os._Environ[str] | dict[str, str] = os.environ, signal: str = "TRACES") -> bool:
    """Whether OTEL_* ask for `signal` (TRACES or METRICS) and the SDK is installed."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = env.get(f"OTEL_{signal}_EXPORTER", "").strip().lower()
    if exporters == "none":
        return False
    if not exporters and not (
        env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")
    ):
        return False
    return find_spec("opentelemetry") is not None and find_spec("opentelemetry.sdk") is not None


def console_wanted(env: os._Environ[str] | dict[str, str] = os.environ) -> bool:
    """Tracing is on with the console exporter among those OTEL_TRACES_EXPORTER names."""
    names = env.get("OTEL_TRACES_EXPORTER", "").lower().split(",")
    return "console" in (name.strip() for name in names) and _configured(env)


ON = _configured()
METRICS_ON = _configured(signal="METRICS")
SERVICE = "protomcp"  # the default service.name (tool processes set their own before the first span)
CONSOLE_FD_ENV = "PROTOMCP_TRACE_CONSOLE_FD"  # a tool process: the host's stderr, for console spans
# taken out of the environment at once: processes a tool starts do not have that fd
_CONSOLE_FD = os.environ.pop(CONSOLE_FD_ENV, "")

_tracer: Tracer | None = None


def _setup() -> Tracer:
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    env = os.environ
    named = "OTEL_SERVICE_NAME" in env or "service.name=" in env.get("OTEL_RESOURCE_ATTRIBUTES", "")
    provider = TracerProvider(resource=Resource.create({} if named else {"service.name": SERVICE}))
    for name in (env.get("OTEL_TRACES_EXPORTER") or "otlp").lower().split(","):
        name = name.strip()
        if name == "console":
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(out=_console_out())))
        elif name == "otlp":
            provider.add_span_processor(BatchSpanProcessor(_otlp_exporter()))
        elif name:
            print(
                f"protomcp: OTEL_TRACES_EXPORTER: unknown exporter {name!r} (otlp, console)", file=sys.stderr
            )
    trace.set_tracer_provider(provider)  # the tool's own spans join the same traces
    return trace.get_tracer("protomcp")


def _console_out() -> IO[str]:
    """Where console spans go: the host's stderr when the host passed it, else this stderr."""
    if _CONSOLE_FD.isdigit():
        try:
            return os.fdopen(int(_CONSOLE_FD), "w")
        except OSError:  # not open after all: this stderr will do
            pass
    return sys.stderr


def _otlp_protocol(signal: str) -> str:
    """The OTLP protocol for `signal` (TRACES, METRICS): its own variable, the general one, the default."""
    env = os.environ
    given = env.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    return given or "http/protobuf"


def _otlp_exporter() -> SpanExporter:
    if _otlp_protocol("TRACES") == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as OverGrpc

        exporter: SpanExporter = OverGrpc()  # annotated: without the grpc exporter it has no types
        return exporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def meter() -> Meter:
    """The host's Meter, its provider exporting to what OTEL_METRICS_EXPORTER names (made once)."""
    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    env = os.environ
    named = "OTEL_SERVICE_NAME" in env or "service.name=" in env.get("OTEL_RESOURCE_ATTRIBUTES", "")
    readers = []
    for name in (env.get("OTEL_METRICS_EXPORTER") or "otlp").lower().split(","):
        name = name.strip()
        if name == "console":
            readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter(out=_console_out())))
        elif name == "otlp":
            readers.append(PeriodicExportingMetricReader(_otlp_metric_exporter()))
        elif name:
            print(
                f"protomcp: OTEL_METRICS_EXPORTER: unknown exporter {name!r} (otlp, console)", file=sys.stderr
            )
    resource = Resource.create({} if named else {"service.name": SERVICE})
    provider = MeterProvider(resource=resource, metric_readers=readers)  # (flushed at exit)
    metrics.set_meter_provider(provider)
    return provider.get_meter("protomcp")


def _otlp_metric_exporter() -> MetricExporter:
    if _otlp_protocol("METRICS") == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as OverGrpc

        exporter: MetricExporter = OverGrpc()  # annotated: without the grpc exporter it has no types
        return exporter
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return OTLPMetricExporter()


def start(
    name: str, parent: str, state: str, attributes: Mapping[str, AttributeValue], server: bool = True
) -> Span:
    """Start a span under the W3C trace context `parent` (and `state`), if any."""
    global _tracer
    if _tracer is None:
        _tracer = _setup()
    from opentelemetry.trace import SpanKind
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier = {"traceparent": parent, "tracestate": state} if parent else {}
    context = TraceContextTextMapPropagator().extract(carrier)
    kind = SpanKind.SERVER if server else SpanKind.INTERNAL
    return _tracer.start_span(name, context=context, kind=kind, attributes=attributes)


def traceparent(span: Span) -> tuple[str, str]:
    """The W3C trace context (traceparent, tracestate) that makes a span the parent."""
    from opentelemetry.trace import set_span_in_context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier, set_span_in_context(span))
    return carrier.get("traceparent", ""), carrier.get("tracestate", "")


def attach(span: Span) -> Token[Context]:
    """Make `span` the current one (a token for detach)."""
    from opentelemetry import context
    from opentelemetry.trace import set_span_in_context

    return context.attach(set_span_in_context(span))


def detach(token: Token[Context]) -> None:
    from opentelemetry import context

    context.detach(token)


def end(span: Span, error: str = "") -> None:
    """End a span; `error` (an error.type such as "tool_error" or a JSON-RPC code) marks it failed."""
    if error:
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("error.type", error)
        span.set_status(Status(StatusCode.ERROR))
    span.end()
