"""calls/metering.py: each request measured from its message to its answer, recorded by method,
tool and outcome (telemetry.metrics), with labels clients cannot grow."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from protomcp_host.calls.metering import RequestMeter
from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.telemetry import audit, metrics

pytestmark = pytest.mark.fast


class Recording:
    """A metrics backend that keeps what it is told (telemetry.metrics.Backend)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, str, str]] = []

    def request(self, method: str, tool: str, outcome: str, error: str) -> Any:
        return lambda seconds: self.requests.append((method, tool, outcome, error))

    def sessions(self, delta: int) -> None: ...
    def streams(self, delta: int) -> None: ...
    def tool_process(self, file: str, event: str) -> None: ...
    def task(self, state: str) -> None: ...
    def store_up(self, up: bool) -> None: ...
    def rate_limit_refused(self, tool: str) -> None: ...


class Session:
    auth = None
    client_info: dict[str, Any] = {}
    catalog = frozenset({"add"})


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recording]:
    backend = Recording()
    monkeypatch.setattr(metrics, "_backends", [])
    monkeypatch.setattr(metrics, "_recorders", {})
    monkeypatch.setattr(metrics, "ON", False)
    metrics.enable(backend)
    yield backend


def request(id_: int, method: str, **params: Any) -> Any:
    return rpc.decode(orjson.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}))


def answer(id_: int, body: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": id_, **body})


def test_outcomes_of_calls_and_other_requests(recorded: Recording) -> None:
    meter = RequestMeter(Session())  # type: ignore[arg-type]
    write = meter.watching(lambda data, related=None: None)
    meter.received(request(1, "tools/call", name="add", arguments={}))
    meter.received(request(2, "tools/call", name="add", arguments={}))
    meter.received(request(3, "tools/call", name="made_up_by_the_client", arguments={}))
    meter.received(request(4, "tools/list"))
    meter.received(request(5, "no/such/method"))
    meter.received(request(6, "tools/call", name="add", arguments={}))
    write(answer(1, {"result": {"content": [], "isError": False}}))
    write(answer(2, {"result": {"content": [{"type": "text", "text": '"isError":true'}], "isError": True}}))
    write(answer(3, {"error": {"code": -32602, "message": "Unknown tool"}}))
    write(b'{"jsonrpc":"2.0","method":"notifications/progress","params":{}}')  # (not an answer)
    write(answer(4, {"result": {"tools": []}}))
    write(answer(5, {"error": {"code": -32601, "message": "Method not found"}}))
    meter.received(
        rpc.decode(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}')
    )
    write(answer(6, {"result": {"content": [], "isError": False}}))  # (too late: counted cancelled)
    assert recorded.requests == [
        ("tools/call", "add", "ok", ""),
        ("tools/call", "add", "error", "tool_error"),
        ("tools/call", "_unknown", "error", "-32602"),
        ("tools/list", "", "ok", ""),
        ("_unknown", "", "error", "-32601"),
        ("tools/call", "add", "cancelled", "cancelled"),
    ]
    assert meter.open == {}


def test_only_the_results_own_iserror_counts(recorded: Recording) -> None:
    """Not a key of the tool's structured output (nor a text quoting one)."""
    meter = RequestMeter(Session())  # type: ignore[arg-type]
    write = meter.watching(lambda data, related=None: None)
    meter.received(request(1, "tools/call", name="add", arguments={}))
    result = {
        "content": [{"type": "text", "text": '"isError":true'}],
        "structuredContent": {"isError": True},
        "isError": False,
    }
    write(answer(1, {"result": result}))
    assert recorded.requests == [("tools/call", "add", "ok", "")]


def test_a_client_gone_closes_what_it_asked(recorded: Recording) -> None:
    meter = RequestMeter(Session())  # type: ignore[arg-type]
    meter.received(request(1, "tools/call", name="add", arguments={}))
    meter.received([request(2, "ping")])  # a batch (2025-03-26) is not measured
    meter.close_all("cancelled")
    assert recorded.requests == [("tools/call", "add", "cancelled", "cancelled")]


def test_series_are_bounded(recorded: Recording, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "MAX_SERIES", 2)
    for tool in ("a", "b", "c", "d"):
        metrics.request_done("tools/call", tool, "", 0.001)
    assert [r[1] for r in recorded.requests] == ["a", "b", "_other", "_other"]


def test_audit_outcomes(recorded: Recording, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What each answer to a tools/call is in the audit log (and no line for other requests)."""
    log = tmp_path / "audit.jsonl"
    monkeypatch.setattr(audit, "LOG", audit.AuditLog.open(str(log), stdio=False))
    meter = RequestMeter(Session())  # type: ignore[arg-type]
    write = meter.watching(lambda data, related=None: None)
    answers = [
        {"result": {"content": [], "isError": False}},
        {"result": {"content": [], "isError": True}},
        {"error": {"code": -32602, "message": "Invalid params"}},
        {"result": {"resultType": "input_required", "requestState": "s"}},
        {"result": {"task": {"taskId": "t", "status": "working"}}},
        {"result": {"resultType": "task", "taskId": "t", "status": "working"}},
    ]
    for id_, body in enumerate(answers):
        meter.received(request(id_, "tools/call", name="add", arguments={"a": id_}))
        write(answer(id_, body))
    meter.received(request(99, "tools/list"))
    write(answer(99, {"result": {"tools": []}}))
    meter.received(request(100, "tools/call", name="add", arguments={}))
    meter.close_all("cancelled")
    lines = [orjson.loads(line) for line in log.read_text().splitlines()]
    assert [line["outcome"] for line in lines] == [
        "ok", "error", "refused", "input_required", "task", "task", "cancelled"
    ]  # fmt: skip
    assert all(line["tool"] == "add" and "arguments" not in line for line in lines)
    assert [line.get("task") for line in lines[4:6]] == ["t", "t"]  # (a CreateTaskResult's taskId)


def test_every_backend_records(recorded: Recording) -> None:
    """Prometheus and OpenTelemetry both on: each request reaches both."""
    metrics.request_done("tools/call", "add", "", 0.001)  # (bound to the first backend alone)
    second = Recording()
    metrics.enable(second)
    metrics.request_done("tools/call", "add", "", 0.001)
    assert len(recorded.requests) == 2 and second.requests == [("tools/call", "add", "ok", "")]
