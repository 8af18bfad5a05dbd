"""OpenTelemetry tracing end to end: the real host and tool process export spans over OTLP/HTTP to
a collector in this test, driven by the official MCP client (stdio, and Streamable HTTP in the
2026-07-28 era); and with tracing off, nothing imports opentelemetry."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from tests.support.hosts import BEHAVIOURS, ROOT, TOOLS, mcp_session
from tests.support.otlp import OtlpReceiver, attribute_value

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
pytestmark = pytest.mark.anyio

CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"
SERVER, INTERNAL = 2, 1  # OTLP span kinds
ERROR = 2  # OTLP status code


class Collector(OtlpReceiver):
    """An OTLP/HTTP trace receiver on a free loopback port: every span it is sent, flattened."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        self.spans: list[dict[str, Any]] = []
        super().__init__("/v1/traces", ExportTraceServiceRequest)

    def add(self, request: Any) -> None:
        for resource_spans in request.resource_spans:
            resource = {a.key: attribute_value(a.value) for a in resource_spans.resource.attributes}
            service = resource.get("service.name", "")
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    self.spans.append(
                        {
                            "service": service,
                            "name": span.name,
                            "kind": span.kind,
                            "trace": span.trace_id.hex(),
                            "id": span.span_id.hex(),
                            "parent": span.parent_span_id.hex(),
                            "status": span.status.code,
                            "attributes": {a.key: attribute_value(a.value) for a in span.attributes},
                        }
                    )

    def wait_for(self, count: int, name: str, timeout: float = 20) -> list[dict[str, Any]]:
        """The spans called `name`, once there are `count` of them (bounded wait)."""
        with self.grew:
            done = self.grew.wait_for(lambda: len(self.named(name)) >= count, timeout)
            assert done, f"{count} spans {name!r} expected; got {[s['name'] for s in self.spans]}"
            return self.named(name)

    def named(self, name: str) -> list[dict[str, Any]]:
        return [span for span in self.spans if span["name"] == name]


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[Collector]:
    collector = Collector()
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", collector.url)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # ms: spans leave while the host runs
    yield collector
    collector.close()


@pytest.mark.parametrize("middleware", [False, True], ids=["plain", "with-middleware"])
async def test_spans_per_request_and_tool_call_linked_on_stdio(
    collector: Collector, middleware: bool
) -> None:
    files = [str(BEHAVIOURS), *([str(TOOLS / "matrix" / "mw.py")] if middleware else [])]
    async with mcp_session("run", *files) as session:
        meta: Any = {"traceparent": TRACEPARENT, "tracestate": "vendor=1"}
        added = await session.call_tool("add", {"a": 2, "b": 3}, meta=meta)
        assert added.structured_content == {"result": 5}
        failed = await session.call_tool("fail", {"message": "boom"})
        assert failed.is_error
        async with anyio.create_task_group() as tg:  # two at once: never mixed up
            for text in ("one", "two"):
                tg.start_soon(session.call_tool, "echo", {"text": text})
        await session.list_tools()

    [host_add] = [s for s in collector.wait_for(2, "tools/call add") if s["service"] == "protomcp"]
    [tool_add] = [s for s in collector.named("tools/call add") if s["service"] == "protomcp-tools"]
    # the client's trace goes on: host span under the client's, tool span under the host's
    assert (host_add["kind"], host_add["trace"], host_add["parent"]) == (SERVER, CLIENT_TRACE, CLIENT_SPAN)
    linked = (INTERNAL, CLIENT_TRACE, host_add["id"])
    assert (tool_add["kind"], tool_add["trace"], tool_add["parent"]) == linked
    assert host_add["attributes"]["mcp.method.name"] == "tools/call"
    assert host_add["attributes"]["gen_ai.tool.name"] == "add"
    assert host_add["attributes"]["gen_ai.operation.name"] == "execute_tool"
    assert host_add["attributes"]["mcp.protocol.version"] == "2025-11-25"
    assert host_add["status"] != ERROR and tool_add["status"] != ERROR

    failures = collector.wait_for(2, "tools/call fail")
    assert {s["service"] for s in failures} == {"protomcp", "protomcp-tools"}
    assert all(s["status"] == ERROR and s["attributes"]["error.type"] == "tool_error" for s in failures)
    host_fail = next(s for s in failures if s["service"] == "protomcp")
    assert host_fail["parent"] == "" and host_fail["trace"] != CLIENT_TRACE  # no traceparent: a new trace

    echoes = collector.wait_for(4, "tools/call echo")
    hosts = {s["id"]: s for s in echoes if s["service"] == "protomcp"}
    tools = [s for s in echoes if s["service"] == "protomcp-tools"]
    assert len(hosts) == 2 and sorted(s["parent"] for s in tools) == sorted(hosts)
    assert all(hosts[s["parent"]]["trace"] == s["trace"] for s in tools)
    assert len({s["trace"] for s in hosts.values()}) == 2  # two requests, two traces
    collector.wait_for(1, "tools/list")
    assert collector.wait_for(1, "initialize")[0]["kind"] == SERVER


async def test_modern_http_requests_are_traced_and_errors_marked(collector: Collector) -> None:
    from tests.support.http import HttpHost, http_session

    host = HttpHost("run", str(BEHAVIOURS))
    try:
        async with http_session(host.url) as session:
            meta: Any = {"traceparent": TRACEPARENT}
            added = await session.call_tool("add", {"a": 1, "b": 1}, meta=meta)
            assert added.structured_content == {"result": 2}
            with pytest.raises(Exception, match="Unknown tool"):
                await session.call_tool("no_such_tool", {})
    finally:
        host.terminate()
    [host_add] = [s for s in collector.wait_for(2, "tools/call add") if s["service"] == "protomcp"]
    assert host_add["trace"] == CLIENT_TRACE and host_add["parent"] == CLIENT_SPAN
    [unknown] = collector.wait_for(1, "tools/call no_such_tool")
    assert unknown["status"] == ERROR and unknown["attributes"]["error.type"] == "-32602"
    assert unknown["attributes"]["rpc.response.status_code"] == "-32602"


TOOL_SPAN = '"service.name": "protomcp-tools"'  # in each span the console exporter prints


def test_the_tool_processs_console_spans_are_shown_once_where_the_hosts_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OTEL_TRACES_EXPORTER=console: the tool process writes its spans to the host's stderr, as
    the host writes its own; not to its own stderr, which the host shows as what the tool
    printed (each line again, prefixed) and sends the client as log messages."""
    from tests.support.hosts import RawHost

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # ms: spans leave while the host runs
    host = RawHost("run", str(BEHAVIOURS))
    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        host.request(1, "initialize", hello)
        host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        host.request(2, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        stderr = host.wait_stderr(TOOL_SPAN)
        host.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})  # after whatever the host sent meanwhile
        sent = []
        while (message := host.recv()).get("id") != 3:
            sent.append(message)
    finally:
        host.close()
    assert stderr.count(TOOL_SPAN) == 1
    assert not [line for line in stderr.splitlines() if line.startswith("[behaviours.py]") and '"' in line]
    assert not [m for m in sent if m.get("method") == "notifications/message"]
    # and `protomcp call`, which shows the host's stderr and the log messages, shows it once
    done = subprocess.run(
        [sys.executable, "-m", "protomcp_host", "call", str(BEHAVIOURS), "add", "a=2", "b=3"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0 and done.stdout.strip() == "5", done.stderr
    assert done.stderr.count(TOOL_SPAN) == 1 and "[warning" not in done.stderr


def test_nothing_imports_opentelemetry_when_tracing_is_off(tmp_path: Any) -> None:
    """Off (no OTEL_* asking for traces): a host and a tool process serve a call through the
    SDK's test client without importing opentelemetry."""
    script = tmp_path / "off.py"
    script.write_text(
        f"""
import asyncio, sys
from protomcp_sdk.testing import Client
from protomcp_sdk.wire import tracing

async def main():
    async with Client({str(BEHAVIOURS)!r}) as client:
        assert (await client.call("add", a=1, b=2)).structured == {{"result": 3}}

asyncio.run(main())
assert not tracing.ON
loaded = sorted(name for name in sys.modules if name.startswith("opentelemetry"))
assert not loaded, loaded
print("clean")
""",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "clean" in done.stdout, done.stderr


@pytest.mark.parametrize(
    ("env", "on"),
    [
        ({}, False),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318"}, False),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, False),
    ],
)
def test_when_tracing_is_on(env: dict[str, str], on: bool) -> None:
    from protomcp_sdk.wire.tracing import _configured

    assert _configured(env) is on
