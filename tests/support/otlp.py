"""OTLP/HTTP receivers for the tests: what the host exports (spans, metrics), on a free loopback port."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class OtlpReceiver:
    """Takes OTLP/HTTP export requests at `url` (`path` on a free loopback port), each parsed as
    `message` and handed to `add` under `grew`, which waiters wait on."""

    def __init__(self, path: str, message: Any) -> None:
        self.grew = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                request = message.FromString(body)
                with receiver.grew:
                    receiver.add(request)
                    receiver.grew.notify_all()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{path}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def add(self, request: Any) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class MetricCollector(OtlpReceiver):
    """Keeps each data point's latest value (a sum's value, a histogram's count: cumulative, so
    the latest is the total)."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

        self.points: dict[tuple[str, frozenset[tuple[str, Any]]], float] = {}
        self.units: dict[str, str] = {}
        super().__init__("/v1/metrics", ExportMetricsServiceRequest)

    def add(self, request: Any) -> None:
        for resource in request.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    self.units[metric.name] = metric.unit
                    kind = metric.WhichOneof("data")
                    for point in getattr(metric, kind).data_points:
                        attributes = frozenset((a.key, attribute_value(a.value)) for a in point.attributes)
                        if kind == "histogram":
                            value = float(point.count)
                        else:
                            value = float(getattr(point, point.WhichOneof("value")))
                        self.points[(metric.name, attributes)] = value

    def value(self, name: str, attributes: dict[str, Any]) -> float:
        """The sum of the latest values of the points of `name` whose attributes include these."""
        wanted = set(attributes.items())
        return sum(v for (n, attrs), v in self.points.items() if n == name and wanted <= attrs)

    def wait_for(self, name: str, attributes: dict[str, Any], at_least: float, timeout: float = 20) -> float:
        """value(), once it is at least `at_least` (bounded wait)."""
        with self.grew:
            done = self.grew.wait_for(lambda: self.value(name, attributes) >= at_least, timeout)
            assert done, f"{name} {attributes} >= {at_least} expected; got {self.points}"
            return self.value(name, attributes)

    def unit(self, name: str) -> str:
        return self.units[name]


def attribute_value(value: Any) -> Any:
    """An OTLP AnyValue as Python."""
    return getattr(value, value.WhichOneof("value")) if value.WhichOneof("value") else None
