"""GET /metrics end to end: the real host (and its --workers), the official MCP client in both
HTTP eras, every scrape read by prometheus-client's own parser. Counts equal the calls made
(an isError result is an error), one scrape covers every worker, the shipped Grafana dashboard
asks only for metrics a host serves, and who may scrape: loopback, or the --metrics-token-env
token (a request through a proxy, or from another address, needs it)."""

from __future__ import annotations

import functools
import json
import os
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.hosts import BEHAVIOURS, ROOT
from tests.support.http import http_session
from tests.support.scale import CPU, burst, modern_client

pytestmark = pytest.mark.anyio

DASHBOARD = ROOT / "examples" / "deploy" / "grafana-protomcp.json"
CALLS = "protomcp_requests_total"
DURATION = "mcp_server_operation_duration_seconds_count"


class Scrape:
    """One scrape, parsed: every sample, and the families (names as the parser gives them)."""

    def __init__(self, text: str) -> None:
        self.families = {family.name: family for family in text_string_to_metric_families(text)}
        self.samples = [sample for family in self.families.values() for sample in family.samples]

    def value(self, name: str, **labels: str) -> float:
        """The sum of the samples `name` whose labels include `labels` (0 when there is none)."""
        return sum(
            s.value
            for s in self.samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
        )

    def calls(self, tool: str, outcome: str) -> float:
        return self.value(CALLS, mcp_method_name="tools/call", gen_ai_tool_name=tool, outcome=outcome)


def base_of(url: str) -> str:
    return url.rsplit("/", 1)[0]


async def scrape(url: str, **headers: str) -> Scrape:
    """GET /metrics on a connection of its own (a worker of --workers takes it), parsed."""
    async with httpx2.AsyncClient(timeout=30) as client:
        response = await client.get(base_of(url) + "/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return Scrape(response.text)


async def test_counts_equal_the_calls_made_in_both_http_eras(http_host: Any) -> None:
    host = http_host("run", str(BEHAVIOURS))
    async with http_session(host.url) as session:  # 2025-11-25: a session
        for a in range(3):
            assert (await session.call_tool("add", {"a": a, "b": 1})).structured_content == {"result": a + 1}
        for _ in range(2):
            assert (await session.call_tool("fail", {"message": "boom"})).is_error
        with pytest.raises(Exception, match="Unknown tool"):
            await session.call_tool("no_such_tool", {})
        during = await scrape(host.url)
        assert during.value("protomcp_sessions") == 1
    async with modern_client(host.url) as client:  # 2026-07-28: stateless
        assert client.session.protocol_version == "2026-07-28"
        for a in range(2):
            assert (await client.call_tool("add", {"a": a, "b": 2})).structured_content == {"result": a + 2}
        assert (await client.call_tool("fail", {"message": "boom"})).is_error
    after = await scrape(host.url)
    assert after.calls("add", "ok") == 5 and after.calls("add", "error") == 0
    assert after.calls("fail", "error") == 3 and after.calls("fail", "ok") == 0  # isError: an error
    assert after.calls("_unknown", "error") == 1  # (a name the client chose is no label)
    durations = {
        (s.labels["gen_ai_tool_name"], s.labels["error_type"]): s.value
        for s in after.samples
        if s.name == DURATION and s.labels["mcp_method_name"] == "tools/call"
    }
    assert durations == {("add", ""): 5, ("fail", "tool_error"): 3, ("_unknown", "-32602"): 1}
    assert after.value(CALLS, mcp_method_name="initialize", outcome="ok") == 1  # the session's
    assert after.value(CALLS, mcp_method_name="tools/list") >= 1
    assert after.value("protomcp_sessions") == 0  # the session ended (DELETE)
    assert after.value("protomcp_tool_process_events_total", file="behaviours.py", event="started") == 1
    assert after.value("protomcp_store_up") == 1
    dashboard_metrics_exist(after)


def dashboard_metrics_exist(served: Scrape) -> None:
    """Every metric the shipped Grafana dashboard queries is one the host serves."""
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    queries += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    bare = [re.sub(r"\{[^}]*\}|\b(?:by|without) \([^)]*\)", "", query) for query in queries]  # no labels
    asked = {name for query in bare for name in re.findall(r"\b(?:protomcp|mcp)_[a-z_]+\b", query)}
    assert len(asked) >= 8

    def family(name: str) -> str:  # the parser names a counter's or a histogram's family without these
        return next((name[: -len(end)] for end in ("_total", "_bucket") if name.endswith(end)), name)

    assert {name for name in asked if family(name) not in served.families} == set()


TASK_TOOLS = ROOT / "tests" / "tools" / "tasks_tools.py"


async def until(url: str, check: Any, timeout: float = 30) -> Scrape:
    """Scrape until `check(scrape)` holds (bounded): what a tool process or a task does after the
    answer the client got is seen a little later."""
    with anyio.fail_after(timeout):
        while not check(seen := await scrape(url)):
            await anyio.sleep(0.05)
    return seen


async def test_streams_tasks_and_tool_process_crashes_are_counted(http_host: Any) -> None:
    from tests.support.scale import modern_rpc, task_until

    host = http_host("run", str(TASK_TOOLS))

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        pass

    async with http_session(host.url) as session, anyio.create_task_group() as tg:
        # progress before the answer: the response is an SSE stream (a silent call's is JSON)
        tg.start_soon(
            functools.partial(session.call_tool, "counts", {"steps": 1}, progress_callback=on_progress)
        )
        await until(host.url, lambda m: m.value("protomcp_open_streams") >= 1)
        await session.call_tool("release", {"key": "counts"})
    async with http_session(host.url) as session:  # (a plain call: this client asks for no task)
        assert (await session.call_tool("crash", {"code": 3})).is_error  # its process died
    await until(host.url, lambda m: m.value("protomcp_open_streams") == 0)
    async with httpx2.AsyncClient(timeout=30) as http:
        created = await modern_rpc(http, host.url, "tools/call", {"name": "report", "arguments": {"n": 21}})
        task_id = created["result"]["taskId"]
        await task_until(http, host.url, task_id, "completed")
    seen = await until(
        host.url, lambda m: m.value("protomcp_tool_process_events_total", event="started") == 2
    )
    assert seen.value("protomcp_tool_process_events_total", file="tasks_tools.py", event="crashed") == 1
    assert seen.value("protomcp_tasks_total", state="working") == 1
    assert seen.value("protomcp_tasks_total", state="completed") == 1
    assert seen.calls("crash", "error") == 1


async def test_a_reload_is_counted(http_host: Any, tmp_path: Path) -> None:
    from tests.support.hosts import write_atomic

    file = tmp_path / "tools.py"
    source = "from protomcp_sdk import tool\n\n@tool\ndef {0}(x: int) -> int:\n    return x\n"
    write_atomic(file, source.format("alpha"))
    host = http_host("dev", str(file))
    assert (await scrape(host.url)).value("protomcp_tool_process_events_total", event="reloaded") == 0
    write_atomic(file, source.format("beta"))
    seen = await until(
        host.url, lambda m: m.value("protomcp_tool_process_events_total", event="reloaded") == 1
    )
    assert seen.value("protomcp_tool_process_events_total", event="started") == 2  # the new process
    assert seen.value("protomcp_tool_process_events_total", event="crashed") == 0


async def test_the_store_going_away_is_seen(http_host: Any, tmp_path: Path) -> None:
    from tests.support.cluster import REDIS, start_redis, stop
    from tests.support.ports import free_port

    if not os.access(REDIS, os.X_OK):
        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server)")
    port = free_port()
    redis = start_redis(port, tmp_path / "redis")
    try:
        host = http_host("run", str(BEHAVIOURS), "--store", f"redis://127.0.0.1:{port}/0")
        assert (await scrape(host.url)).value("protomcp_store_up") == 1
        stop(redis)
        assert (await scrape(host.url)).value("protomcp_store_up") == 0  # (pinged at the scrape)
    finally:
        stop(redis)


def _other_address() -> str | None:
    """An address of this machine that is not loopback (None: it has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # (no packet is sent: the route picks the address)
            address = str(probe.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") else address


async def test_loopback_scrapes_freely_and_anyone_else_needs_the_token(http_host: Any) -> None:
    other = _other_address()
    bind = ["--host", "0.0.0.0", "--allow-host", other] if other else []
    open_host = http_host("run", str(BEHAVIOURS), *bind)
    async with httpx2.AsyncClient(timeout=30) as client:
        local = base_of(open_host.url) + "/metrics"
        assert (await client.get(local)).status_code == 200
        proxied = await client.get(local, headers={"x-forwarded-for": "203.0.113.9"})
        assert proxied.status_code == 403 and "--metrics-token-env" in proxied.text
        assert (await client.get(local, headers={"forwarded": "for=203.0.113.9"})).status_code == 403
        if other:  # a peer that is not loopback, no proxy involved
            port = local.split(":")[-1].split("/")[0]
            assert (await client.get(f"http://{other}:{port}/metrics")).status_code == 403

    guarded = http_host(
        "run",
        str(BEHAVIOURS),
        *bind,
        "--metrics-token-env",
        "SCRAPE_TOKEN",
        "--auth-token-env",
        "MCP_TOKEN",
        env={"SCRAPE_TOKEN": "scrape-secret", "MCP_TOKEN": "mcp-secret"},
    )
    async with httpx2.AsyncClient(timeout=30) as client:
        local = base_of(guarded.url) + "/metrics"
        assert (await client.get(local)).status_code == 200  # loopback: no token (not the MCP one either)
        forwarded = {"x-forwarded-for": "203.0.113.9"}
        refused = await client.get(local, headers=forwarded)
        assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
        wrong = await client.get(local, headers={**forwarded, "authorization": "Bearer mcp-secret"})
        assert wrong.status_code == 401  # the MCP endpoint's token is not the scrapers'
        right = await client.get(local, headers={**forwarded, "authorization": "Bearer scrape-secret"})
        assert right.status_code == 200
        Scrape(right.text)
        if other:
            port = local.split(":")[-1].split("/")[0]
            remote = f"http://{other}:{port}/metrics"
            assert (await client.get(remote)).status_code == 401
            allowed = await client.get(remote, headers={"authorization": "Bearer scrape-secret"})
            assert allowed.status_code == 200


async def test_the_shipped_nginx_site_does_not_proxy_metrics(http_host: Any, nginx: Any) -> None:
    """Behind nginx on the same machine a host sees loopback peers: the shipped site keeps /metrics
    off the public name, and marks what it proxies as forwarded (so a host would ask the token)."""
    host = http_host("run", str(BEHAVIOURS))
    proxy = nginx([host.url.split("/")[2]])
    async with httpx2.AsyncClient(timeout=30) as client:
        assert (await client.get(base_of(proxy.url) + "/metrics")).status_code == 404
        assert (await client.get(base_of(proxy.url) + "/healthz")).status_code == 200  # (the rest is proxied)
        assert (await client.get(base_of(host.url) + "/metrics")).status_code == 200
    site = (ROOT / "examples" / "deploy" / "nginx-protomcp.conf").read_text()
    assert "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;" in site


async def test_a_dead_workers_sessions_are_forgotten(http_host: Any, redis_url: str) -> None:
    """A worker killed with a session open: its gauge no longer counts (its counters still do)."""
    import signal

    from tests.support.http import answer_of, headers_for, open_raw_session, rpc

    host = http_host("run", str(CPU), "--workers", "2", "--store", redis_url)
    async with httpx2.AsyncClient(timeout=30) as http:
        session = await open_raw_session(http, host.url)
        call = rpc(1, "tools/call", {"name": "whoami", "arguments": {}})
        answer = answer_of(await http.post(host.url, content=call, headers=headers_for(session)))
        owner = answer["result"]["structuredContent"]["host"]  # the worker that holds the session
    await until(host.url, lambda m: m.value("protomcp_sessions") == 1)
    os.kill(owner, signal.SIGKILL)
    host.wait_stderr(lambda line: f"(pid {owner}) exited" in line)
    seen = await scrape(host.url)
    assert seen.value("protomcp_sessions") == 0
    assert seen.calls("whoami", "ok") == 1


def _multiproc_folder(pid: int) -> str:
    """PROMETHEUS_MULTIPROC_DIR in a worker's environment."""
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    [folder] = [v.split(b"=", 1)[1].decode() for v in environ if v.startswith(b"PROMETHEUS_MULTIPROC_DIR=")]
    return folder


async def test_one_scrape_counts_the_calls_of_every_worker(
    http_host: Any, redis_url: str, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    host = http_host("run", str(CPU), "--workers", "2", "--store", redis_url, "--audit-log", str(audit))
    burns = 0
    workers: set[int] = set()
    async with modern_client(host.url) as client:  # each burst opens several connections
        hidden = await client.call_tool("has_env", {"name": "PROMETHEUS_MULTIPROC_DIR"})
        assert hidden.structured_content == {"result": False}  # the workers' folder is not the tools'
        with anyio.fail_after(90):
            while len(workers) < 2:
                workers |= {r["host"] for r in await burst(client, 8, n=1000)}
                burns += 8
    async with http_session(host.url) as session:  # a stateful session: relayed to its worker
        for _ in range(3):
            assert not (await session.call_tool("whoami", {})).is_error
        sessions = await scrape(host.url)
        assert sessions.value("protomcp_sessions") == 1
    scrapes = [await scrape(host.url) for _ in range(6)]  # whichever worker answers, the same totals
    for seen in scrapes:
        assert seen.calls("burn", "ok") == burns
        assert seen.calls("whoami", "ok") == 3 and seen.calls("has_env", "ok") == 1
        assert seen.value(DURATION, mcp_method_name="tools/call", gen_ai_tool_name="burn") == burns
        assert seen.value("protomcp_tool_process_events_total", event="started") == 2  # one per worker
        assert seen.value("protomcp_sessions") == 0
        assert seen.value("protomcp_store_up") == 1  # (redis answers)
    lines = [json.loads(line) for line in audit.read_text().splitlines()]  # whole lines, both workers
    assert sorted(line["tool"] for line in lines) == sorted(["burn"] * burns + ["has_env"] + ["whoami"] * 3)
    folder = _multiproc_folder(next(iter(workers)))
    assert os.path.isdir(folder) and any(name.endswith(".db") for name in os.listdir(folder))
    assert host.terminate() == 0
    assert not os.path.exists(folder)  # removed with the run


@pytest.fixture
def metric_collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from tests.support.otlp import MetricCollector

    collector = MetricCollector()
    for name in [n for n in os.environ if n.startswith("OTEL_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", collector.url)
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "200")  # ms: points leave while the host runs
    yield collector
    collector.close()


async def test_the_same_instruments_reach_opentelemetry(metric_collector: Any) -> None:
    """Over stdio (no /metrics there): the otel extra exports the requests and their durations."""
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    from tests.support.hosts import mcp_session

    async with mcp_session("run", str(BEHAVIOURS)) as session:
        for a in range(2):
            await session.call_tool("add", {"a": a, "b": 1})
        assert (await session.call_tool("fail", {"message": "boom"})).is_error
        calls = {"mcp.method.name": "tools/call", "gen_ai.tool.name": "add", "outcome": "ok"}
        assert metric_collector.wait_for("protomcp.requests", calls, 2) == 2
        failed = {"mcp.method.name": "tools/call", "gen_ai.tool.name": "fail", "error.type": "tool_error"}
        assert metric_collector.wait_for("mcp.server.operation.duration", failed, 1) == 1
        assert metric_collector.unit("mcp.server.operation.duration") == "s"
        assert metric_collector.wait_for("protomcp.tool_process.events", {"event": "started"}, 1) == 1


async def test_a_rate_limited_call_is_counted_and_audited_as_such(http_host: Any, tmp_path: Path) -> None:
    """A call over its --rate-limit shows as a refusal in /metrics (its own counter, and the
    request's error type `rate_limited`) and in the audit log (outcome `rate_limited`)."""
    log = tmp_path / "audit.jsonl"
    host = http_host("run", str(BEHAVIOURS), "--rate-limit", "add=1/hour", "--audit-log", str(log))
    async with http_session(host.url) as session:
        assert not (await session.call_tool("add", {"a": 1, "b": 1})).is_error
        refused = await session.call_tool("add", {"a": 1, "b": 1})
        assert refused.is_error and "Rate limit reached" in refused.content[0].text  # type: ignore[union-attr]
    served = await scrape(host.url)
    assert served.value("protomcp_rate_limit_refusals_total", gen_ai_tool_name="add") == 1
    assert served.calls("add", "ok") == 1 and served.calls("add", "error") == 1
    assert served.value(DURATION, gen_ai_tool_name="add", error_type="rate_limited") == 1
    outcomes = [json.loads(line)["outcome"] for line in log.read_text().splitlines()]
    assert outcomes == ["ok", "rate_limited"]


def _pid_in(line: str) -> int:
    """The pid in a parent's line about a worker: `worker 1 (pid 123) ...`."""
    return int(line.split("(pid ")[1].split(")")[0])


def _children(pid: int) -> set[int]:
    """The processes `pid` started (for the --workers parent: its workers)."""
    return {int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


async def test_dead_workers_counts_stay_while_their_files_go(http_host: Any, redis_url: str) -> None:
    """Workers killed again and again: every call they answered is still counted, and the metrics
    folder does not grow with the deaths (one file per live worker and type, and one archive)."""
    import signal

    host = http_host("run", str(CPU), "--workers", "2", "--store", redis_url)
    burns, deaths = 0, 4
    replacements: set[int] = set()

    async def calls(until_both: bool = False) -> set[int]:
        """Burns until both workers answered (or one burst); the workers that answered."""
        nonlocal burns
        answered: set[int] = set()
        async with modern_client(host.url) as client:
            with anyio.fail_after(90):
                while not answered or (until_both and len(answered) < 2):
                    answered |= {r["host"] for r in await burst(client, 8, n=1000)}
                    burns += 8
        # (each count is in its worker's files before that worker may be killed)
        await until(host.url, lambda m: m.calls("burn", "ok") == burns)
        return answered

    await calls(until_both=True)
    for _ in range(deaths):
        victim = min(await calls())  # a worker with calls of its own
        os.kill(victim, signal.SIGKILL)
        host.wait_stderr(lambda line, pid=victim: f"(pid {pid}) exited" in line)
        started = host.wait_stderr(lambda line: "serving again" in line and _pid_in(line) not in replacements)
        replacements.add(_pid_in(started))  # (a worker serves in the victim's place)
    await calls()

    for seen in [await scrape(host.url) for _ in range(4)]:  # whichever worker answers
        assert seen.calls("burn", "ok") == burns
        assert seen.value(DURATION, mcp_method_name="tools/call", gen_ai_tool_name="burn") == burns
        assert seen.value("protomcp_tool_process_events_total", event="started") == 2 + deaths
    live = _children(host.proc.pid)
    assert len(live) == 2
    files = os.listdir(_multiproc_folder(next(iter(live))))
    for typ in ("counter", "histogram"):  # the live workers' (once they record) and one archive
        names = {f for f in files if f.startswith(typ + "_")}
        assert len(names) <= len(live) + 1, files  # (not one more per death)
        assert names <= {f"{typ}_{pid}.db" for pid in live} | {f"{typ}_archive.db"}, files
    owners = {f"{pid}.db" for pid in live} | {"archive.db"}
    assert all(f.rsplit("_", 1)[-1] in owners for f in files), files  # (no dead worker's gauges either)
