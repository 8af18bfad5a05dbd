"""Two hosts behind a real nginx (the example config), sharing a real Redis, serving the
official client: modern requests round-robin, a listen stream on one host hears a resource
update published by a tool on the other, an input-required retry lands on the other host and
is accepted, a stateful session is pinned by the hash, one host killed mid-run, and a rolling
restart under load that shows no client an error."""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import orjson
import pytest

from tests.support.hosts import TOOLS
from tests.support.http import ACCEPT, answer_of
from tests.support.scale import CPU, TASKS_META, modern_client, modern_rpc, task_until, wait_for_file

ROUNDS = TOOLS / "rounds" / "rounds.py"
SEED = "X-Mcp-Session-Seed"


async def _sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    question = params.messages[0].content.text  # type: ignore[union-attr]
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=f"A({question})"), model="m"
    )


def _cluster(http_host: Any, nginx: Any, redis_url: str, *extra: str) -> tuple[list[Any], Any]:
    hosts = [
        http_host("run", str(CPU), str(ROUNDS), "--store", redis_url, "--session-id-header", SEED, *extra)
        for _ in range(2)
    ]
    balancer = nginx([host.url.split("/")[2] for host in hosts])
    return hosts, balancer


async def _host_pid(client: Any) -> int:
    result = await client.call_tool("whoami", {})
    assert not result.is_error, result
    return int(result.structured_content["host"])


async def test_modern_requests_round_robin_and_share_state(
    http_host: Any, nginx: Any, redis_url: str
) -> None:
    hosts, balancer = _cluster(http_host, nginx, redis_url)
    pids = {host.proc.pid for host in hosts}
    with anyio.fail_after(60):
        async with modern_client(balancer.url, sampling_callback=_sample) as client:
            assert client.session.protocol_version == "2026-07-28"
            assert "whoami" in {tool.name for tool in (await client.list_tools()).tools}
            seen = {await _host_pid(client) for _ in range(4)}
            assert seen == pids  # round-robin: both hosts answer
            # an input-required round trip: each retry goes to the next host, which re-runs the
            # tool with the answers so far (the requestState key is shared through Redis)
            await balancer.logged(0, "tools/call", 4)  # the whoami calls, logged after their answers
            before = len(balancer.requests())
            two = await client.call_tool("two_samples", {})
            assert two.content[0].text == "A(first?)+A(second after A(first?)?)"
            calls = await balancer.logged(before, "tools/call", 3)
            assert len(calls) == 3 and len({r[0] for r in calls}) == 2, calls

        # a listen stream on host A hears a resource update a tool published on host B
        async with (
            modern_client(hosts[0].url) as on_a,
            modern_client(hosts[1].url) as on_b,
            on_a.listen(resource_subscriptions=["scale://note"]) as sub,
        ):
            touched = await on_b.call_tool("touch", {"uri": "scale://note"})
            assert touched.content[0].text == "touched scale://note"
            event = await anext(aiter(sub))
            assert "scale://note" in repr(event)


@pytest.mark.parametrize("workers", ["1", "2"])
async def test_a_legacy_session_is_pinned_by_the_hash(
    workers: str, http_host: Any, nginx: Any, redis_url: str
) -> None:
    """... and, inside a host of several workers, reaches the worker holding it."""
    _, balancer = _cluster(http_host, nginx, redis_url, "--workers", workers)
    with anyio.fail_after(60):
        for _ in range(3):  # each session stays on the host that made it, wherever that is
            async with modern_client(balancer.url, mode="legacy") as client:
                assert client.session.protocol_version == "2025-11-25"
                assert len({await _host_pid(client) for _ in range(6)}) == 1
    sessions: dict[str, set[str]] = {}
    for upstream, _method, session, _status in balancer.requests():
        if session != "-":
            sessions.setdefault(session, set()).add(upstream)
    assert len(sessions) == 3 and all(len(upstreams) == 1 for upstreams in sessions.values()), sessions


async def test_one_host_killed_mid_run(http_host: Any, nginx: Any, redis_url: str, tmp_path: Path) -> None:
    hosts, balancer = _cluster(http_host, nginx, redis_url)
    victim, survivor = hosts
    failures: list[str] = []
    answers: list[str] = []
    with anyio.fail_after(90):
        async with modern_client(balancer.url) as client:
            await client.list_tools()
            marks = [tmp_path / f"running{i}" for i in range(4)]

            async def slow(mark: Path) -> None:
                try:
                    result = await client.call_tool("slow", {"seconds": 20.0, "mark": str(mark)})
                except Exception as exc:  # the official client raises for a 502 from nginx
                    failures.append(f"{type(exc).__name__}: {exc}")
                else:
                    answers.append(result.content[0].text)

            async with anyio.create_task_group() as tg:
                for mark in marks:
                    tg.start_soon(slow, mark)
                on = Counter([int(await wait_for_file(mark)) for mark in marks])
                # the calls on the victim's tool processes fail when it dies; kill it (and its
                # tool processes, which die with their host)
                os.killpg(victim.proc.pid, signal.SIGKILL)
                victim.proc.wait()
                # new requests succeed, on the survivor
                assert {await _host_pid(client) for _ in range(4)} == {survivor.proc.pid}
                with anyio.fail_after(10):
                    while len(failures) < 2:
                        await anyio.sleep(0.02)
                tg.cancel_scope.cancel()  # the survivor's 20 s calls are not what this test waits for
    assert sum(on.values()) == 4 and len(on) == 2  # two calls ran on each host
    assert answers == [] and len(failures) == 2, (failures, answers)
    assert all(f.startswith("MCPError") for f in failures)  # an error answer (nginx's 502), no hang


@pytest.mark.parametrize("store", ["memory", "redis", "redis with workers"])
async def test_without_a_shared_key_a_retry_elsewhere_is_refused_with_one_it_runs_again(
    store: str, http_host: Any, nginx: Any, redis_url: str
) -> None:
    """The control: hosts with their own keys (memory store) refuse each other's requestState;
    with the store's key, so do hosts of two workers each (the workers use the store's key)."""
    extra = {"memory": (), "redis": ("--store", redis_url)}.get(
        store, ("--store", redis_url, "--workers", "2")
    )
    hosts = [http_host("run", str(ROUNDS), *extra) for _ in range(2)]
    balancer = nginx([host.url.split("/")[2] for host in hosts])
    with anyio.fail_after(60):
        async with modern_client(balancer.url, sampling_callback=_sample) as client:
            await client.list_tools()
            if store != "memory":
                two = await client.call_tool("two_samples", {})
                assert two.content[0].text == "A(first?)+A(second after A(first?)?)"
            else:
                with pytest.raises(Exception, match="requestState"):
                    await client.call_tool("two_samples", {})


async def test_tasks_are_shared_between_hosts(
    http_host: Any, nginx: Any, redis_url: str, tmp_path: Path
) -> None:
    import httpx2

    hosts, _ = _cluster(http_host, nginx, redis_url)
    a, b = (host.url for host in hosts)
    gate = tmp_path / "gate"
    async with httpx2.AsyncClient(timeout=30) as http:
        with anyio.fail_after(60):
            # created on A, seen running on B, completed on A, its result read on B
            created = await modern_rpc(
                http, a, "tools/call", {"name": "wait_for", "arguments": {"path": str(gate)}}
            )
            task_id = created["result"]["taskId"]
            assert created["result"]["resultType"] == "task"
            assert (await task_until(http, b, task_id, "working"))["status"] == "working"
            gate.write_text("open")
            done = await task_until(http, b, task_id, "completed")
            assert done["result"]["structuredContent"] == {"saw": True, "host": hosts[0].proc.pid}
            # input_required on A, answered with tasks/update on B, completed
            created = await modern_rpc(http, a, "tools/call", {"name": "confirm", "arguments": {}})
            task_id = created["result"]["taskId"]
            asked = await task_until(http, b, task_id, "input_required")
            assert list(asked["inputRequests"]) == ["who"]
            answer = {"who": {"action": "accept", "content": {"name": "Ada"}}}
            await modern_rpc(http, b, "tasks/update", {"taskId": task_id, "inputResponses": answer})
            done = await task_until(http, a, task_id, "completed")
            assert done["result"]["content"][0]["text"] == "accept:Ada"
            # cancelled through B while it runs on A
            created = await modern_rpc(
                http, a, "tools/call", {"name": "wait_for", "arguments": {"path": str(tmp_path / "never")}}
            )
            task_id = created["result"]["taskId"]
            await task_until(http, b, task_id, "working")
            cancelled = await modern_rpc(http, b, "tasks/cancel", {"taskId": task_id})
            assert "result" in cancelled, cancelled
            assert (await task_until(http, a, task_id, "cancelled"))["status"] == "cancelled"


async def test_no_task_is_lost_when_a_host_dies(
    http_host: Any, nginx: Any, redis_url: str, tmp_path: Path
) -> None:
    import httpx2

    hosts, _ = _cluster(http_host, nginx, redis_url)
    (victim, survivor), gate = hosts, tmp_path / "gate"
    gate.write_text("open")
    async with httpx2.AsyncClient(timeout=30) as http:
        with anyio.fail_after(60):
            finished = await modern_rpc(
                http, victim.url, "tools/call", {"name": "wait_for", "arguments": {"path": str(gate)}}
            )
            running = await modern_rpc(
                http,
                victim.url,
                "tools/call",
                {"name": "wait_for", "arguments": {"path": str(tmp_path / "never")}},
            )
            finished_id, running_id = finished["result"]["taskId"], running["result"]["taskId"]
            await task_until(http, survivor.url, finished_id, "completed")
            await task_until(http, survivor.url, running_id, "working")
            os.killpg(victim.proc.pid, signal.SIGKILL)
            victim.proc.wait()
            # its result survives; the task it was running is failed, not left working for ever
            done = await task_until(http, survivor.url, finished_id, "completed")
            assert done["result"]["structuredContent"]["saw"] is True
            failed = await task_until(http, survivor.url, running_id, "failed")
            assert "stopped before it finished" in failed["error"]["message"]
        # a host that starts later loads the records from the store
        late = http_host("run", str(CPU), "--store", redis_url)
        with anyio.fail_after(30):
            assert (await task_until(http, late.url, finished_id, "completed"))["status"] == "completed"
            assert (await task_until(http, late.url, running_id, "failed"))["status"] == "failed"


async def test_hosts_carry_on_after_redis_restarts_empty(
    http_host: Any, nginx: Any, redis_url: str, tmp_path: Path
) -> None:
    import subprocess

    from tests.support.cluster import start_redis, stop

    hosts, balancer = _cluster(http_host, nginx, redis_url)
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True, check=False)
    for host in hosts:
        host.wait_stderr(lambda line: "is unreachable" in line)
    restarted = start_redis(port, tmp_path / "redis-again")  # empty: no key, no records
    try:
        for host in hosts:
            host.wait_stderr(lambda line: "is reachable again" in line)
        with anyio.fail_after(60):
            # the key is back (a retry on the other host is accepted) and the bus works again
            async with modern_client(balancer.url, sampling_callback=_sample) as client:
                await client.list_tools()
                two = await client.call_tool("two_samples", {})
                assert two.content[0].text == "A(first?)+A(second after A(first?)?)"
            async with (
                modern_client(hosts[0].url) as on_a,
                modern_client(hosts[1].url) as on_b,
                on_a.listen(resource_subscriptions=["scale://note"]) as sub,
            ):
                await on_b.call_tool("touch", {"uri": "scale://note"})
                assert "scale://note" in repr(await anext(aiter(sub)))
            # the hosts put their key back: a host started now seals and opens with the same one
            late = http_host("run", str(CPU), str(ROUNDS), "--store", redis_url)
            mixed = nginx([hosts[0].url.split("/")[2], late.url.split("/")[2]])
            async with modern_client(mixed.url, sampling_callback=_sample) as client:
                await client.list_tools()
                two = await client.call_tool("two_samples", {})
                assert two.content[0].text == "A(first?)+A(second after A(first?)?)"
            calls = [r for r in mixed.requests() if r[1] == "tools/call"]
            assert len(calls) == 3 and len({r[0] for r in calls}) == 2, calls
    finally:
        stop(restarted)


async def test_a_retry_served_by_the_other_host_releases_the_held_call(
    http_host: Any, redis_url: str, tmp_path: Path
) -> None:
    """Host A holds a sync call waiting for input; its retry reaches host B, which runs it: A
    lets its call (and the tool's thread) go. A second use of that state, on A, gets B's answer."""
    import httpx2

    hosts = [http_host("run", str(ROUNDS), "--store", redis_url) for _ in range(2)]
    mark = str(tmp_path / "released")
    call = {"name": "held_thread", "arguments": {"mark": mark}}
    with anyio.fail_after(60):
        async with httpx2.AsyncClient(timeout=30) as http:
            first = (await modern_rpc(http, hosts[0].url, "tools/call", call))["result"]
            assert first["resultType"] == "input_required"
            retry = {
                **call,
                "requestState": first["requestState"],
                "inputResponses": {"wait": {"action": "accept", "content": {"v": "x"}}},
            }
            done = (await modern_rpc(http, hosts[1].url, "tools/call", retry))["result"]
            assert done["content"][0]["text"].startswith("accept in ")
            while len(list(tmp_path.glob("released.[0-9]*"))) < 2:  # B's run, and A's thread let go
                await anyio.sleep(0.02)
            again = (await modern_rpc(http, hosts[0].url, "tools/call", retry))["result"]
            assert again["content"] == done["content"]  # the first answer, not a second run


async def test_a_principals_tool_list_change_reaches_its_listen_streams_on_other_hosts(
    http_host: Any, redis_url: str
) -> None:
    hosts = [http_host("run", str(TOOLS / "control.py"), "--store", redis_url) for _ in range(2)]
    with anyio.fail_after(60):
        async with (
            modern_client(hosts[0].url) as on_a,
            modern_client(hosts[1].url) as on_b,
            on_a.listen(tools_list_changed=True) as sub,
        ):
            assert "secret" not in {tool.name for tool in (await on_a.list_tools()).tools}
            await on_b.call_tool("unlock", {})  # the same principal (no credentials), on host B
            event = await anext(aiter(sub))
            assert "tools" in repr(event).lower()
            assert "secret" in {tool.name for tool in (await on_a.list_tools()).tools}
            await on_b.call_tool("lock", {})
            await anext(aiter(sub))
            assert "secret" not in {tool.name for tool in (await on_a.list_tools()).tools}


async def _posted(http: Any, url: str, params: dict[str, Any]) -> tuple[int, Any]:
    """One 2026-07-28 tools/call POST: its status, and its JSON-RPC answer (else the body)."""
    headers = {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": params["name"],
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**params, "_meta": TASKS_META}}
    response = await http.post(url, content=orjson.dumps(body), headers=headers)
    if response.status_code != 200:
        return response.status_code, response.text[:200]
    return 200, answer_of(response)


CALLERS = 256  # concurrent clients: many more than the site's 32 kept-alive upstream connections,
# so nginx opens new connections to the hosts all along, faster than a host accepts them (as
# under real load): some wait in its listening socket's queue when it stops


@pytest.mark.parametrize("workers", ["1", "2"], ids=["run", "workers-2"])
async def test_a_rolling_restart_loses_nothing(
    workers: str, http_host: Any, nginx: Any, redis_url: str, tmp_path: Path
) -> None:
    """SIGTERM to one host behind the shipped nginx site while 256 clients call through it: every
    request is answered by some host, exactly once, and nginx neither answers an error nor logs
    a reset (before: 503s from the draining host; 502s when it closed kept-alive connections
    nginx was reusing, and when it closed its listening socket on connections still queued there
    or, with --workers, never closed it at all), and a task running there completes (before:
    the drain did not wait for task calls; the task ended `failed`)."""
    import httpx2

    hosts, balancer = _cluster(http_host, nginx, redis_url, "--drain-timeout", "30", "--workers", workers)
    victim, survivor = hosts
    gate = tmp_path / "gate"
    tallies = tmp_path / "tallies"
    tallies.mkdir()
    wrong: list[Any] = []
    limits = httpx2.Limits(max_connections=CALLERS, max_keepalive_connections=CALLERS)
    async with httpx2.AsyncClient(timeout=60, limits=limits) as http:
        with anyio.fail_after(180):
            created = await modern_rpc(
                http, victim.url, "tools/call", {"name": "wait_for", "arguments": {"path": str(gate)}}
            )
            task_id = created["result"]["taskId"]
            await task_until(http, survivor.url, task_id, "working")
            stop = anyio.Event()
            sent = [0]
            counted = [0]
            more = [200, anyio.Event()]  # set once `counted` reaches more[0]

            async def answered(count: int) -> None:
                """Until `count` more requests were answered."""
                more[:] = [counted[0] + count, anyio.Event()]
                await more[1].wait()  # type: ignore[union-attr]

            async def caller() -> None:
                while not stop.is_set():
                    sent[0] += 1
                    tally = {"name": "tally", "arguments": {"folder": str(tallies), "tag": str(sent[0])}}
                    status, answer = await _posted(http, balancer.url, tally)
                    if status != 200 or "result" not in answer or answer["result"].get("isError"):
                        wrong.append((status, answer))
                    counted[0] += 1
                    if counted[0] >= more[0]:  # type: ignore[operator]
                        more[1].set()  # type: ignore[union-attr]

            async with anyio.create_task_group() as tg:
                for _ in range(CALLERS):
                    tg.start_soon(caller)
                await answered(200)  # the load runs on both hosts
                victim.proc.send_signal(signal.SIGTERM)
                await anyio.to_thread.run_sync(
                    victim.wait_stderr, lambda line: "draining" in line and "1 running task" in line
                )
                await answered(200)  # under load while the victim drains
                gate.write_text("open")  # the task finishes while its host drains
                assert await anyio.to_thread.run_sync(victim.proc.wait) == 0
                await answered(200)  # nginx goes on with the survivor alone
                stop.set()
            done = await task_until(http, survivor.url, task_id, "completed", "failed")
    assert done["status"] == "completed" and done["result"]["structuredContent"]["saw"] is True
    assert wrong == [], (len(wrong), wrong[:5])
    assert counted[0] == sent[0] and sorted(int(tag.name) for tag in tallies.iterdir()) == list(
        range(1, sent[0] + 1)
    )  # each call ran exactly once
    upstream_statuses = Counter(r[-1] for r in balancer.requests())  # (a retried one names two upstreams)
    assert set(upstream_statuses) == {"200"}, upstream_statuses
    errors = (balancer.folder / "error.log").read_text()
    assert not [line for line in errors.splitlines() if "reset" in line or "prematurely" in line], errors


async def test_a_finished_round_replayed_on_the_other_host_never_runs_the_tool_again(
    http_host: Any, redis_url: str, tmp_path: Path
) -> None:
    """A round finished on host A, its completion replayed at once on host B (over and over, so
    B often has not heard of A's use on the bus yet; every other time sent to both at once): the
    tool never runs a second time (each run appends to a file; sent at once, the host that
    claims the use first runs it) and both get the first answer
    (each use is claimed in the store; before, the bus was the only news and came late)."""
    import httpx2

    a, b = (http_host("run", str(ROUNDS), "--store", redis_url) for _ in range(2))
    with anyio.fail_after(240):
        async with httpx2.AsyncClient(timeout=60) as http:
            for i in range(50):
                log = tmp_path / f"runs{i}"
                call = {"name": "counted", "arguments": {"log": str(log)}}
                first = (await modern_rpc(http, a.url, "tools/call", call))["result"]
                assert first["resultType"] == "input_required", first
                retry = {
                    **call,
                    "requestState": first["requestState"],
                    "inputResponses": {"go": {"action": "accept", "content": {"v": str(i)}}},
                }
                answers: dict[str, Any] = {}

                async def send(host: Any, into: dict[str, Any] = answers, again: Any = retry) -> None:
                    into[host.url] = await modern_rpc(http, host.url, "tools/call", again)

                if i % 2:
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(send, a)
                        tg.start_soon(send, b)
                else:
                    await send(a)
                    await send(b)
                runs = log.read_text().split()
                if i % 2:  # whichever host claimed it first ran it (a re-run starts it again)
                    assert runs.count("done") == 1, (i, runs)
                else:
                    assert runs == ["start", "answered", "done"], (i, runs)
                for answer in answers.values():
                    assert answer.get("result", {}).get("content") == [
                        {"type": "text", "text": f"went {i}"}
                    ], (
                        i,
                        answers,
                    )
