"""Running it as a service, every part at once: two hosts, each with `--workers 2`, on one real
redis-server behind the shipped nginx site, as protomcp's own authorization server in front of a
real identity provider, two people signed in (alice, bob). Every host loads a middleware file
(it works after each call, so every result goes through its process), gives one tool a
`--rate-limit`, writes an `--audit-log` of its own (shared by its workers, with the arguments: each
call carries a tag naming it) and serves a tool file that keeps `ctx.user_state` and answers
20 MiB on demand. Calls of both principals run at once while a worker is killed (SIGKILL), or
Redis is restarted empty, or a host is stopped (SIGTERM); a tool process crashes mid-call. Then:

- every call got exactly one answer, or an error the client saw (never silence);
- each principal was admitted exactly its limit while Redis was up (alice at hers leaves bob
  untouched); while Redis was down limited calls went on uncounted (docs/guide/scaling.md);
- what alice keeps is read back by her through every host and worker, never by bob; after Redis
  restarted empty it is gone: a plain miss;
- each host's /metrics (scraped directly) counts exactly the calls that host answered, across its
  workers, a killed worker's too; a killed worker's gauges are gone;
- each host's audit file has one whole JSON line per answered call, with its caller;
- the 20 MiB answer arrives whole and is counted and logged as ok.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import orjson
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from prometheus_client.parser import text_string_to_metric_families

from tests.oauth.conftest import APP_ID, APP_SECRET, Bed, code_for, redeem, register
from tests.support.cluster import REDIS, Nginx, start_redis, stop
from tests.support.hosts import TOOLS
from tests.support.http import ACCEPT, HttpHost, answer_of, open_raw_session, rpc, sse_events
from tests.support.idp import IdentityProvider, client
from tests.support.installed import missing
from tests.support.ports import free_port
from tests.support.scale import TASKS_META

SERVICE = TOOLS / "service"
LIMIT = 3  # limited=3/minute: few calls, and a window no run outlasts
MIB = 20
CHUNK = "0123456789abcdef" * 65536  # what tools.big repeats
CALL_TIMEOUT = 60  # a call not answered by then is silence
SEED = "X-Mcp-Session-Seed"
RAW_CLIENT = "raw/1"  # the clientInfo of tests.support.http's initialize
UNCOUNTED = "protomcp: rate limits are not counted while the store cannot answer"
UNAVAILABLE = "the user state is unavailable"  # (UserStateError: the store cannot serve it)


def principal_of(access_token: str) -> str:
    """The token's subject (what the audit log names)."""
    payload = access_token.split(".")[1]
    return str(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["sub"])


@dataclass
class Call:
    """One tools/call and what its client got: the JSON-RPC answer, or the error it saw."""

    who: str
    tool: str
    tag: str
    target: str  # "a", "b" (a host's own port) or "nginx"
    answer: dict[str, Any] | None = None
    failure: str | None = None
    host: str | None = None  # the host that answered ("a" or "b")
    client: str | None = None  # the client as the audit log names it, if not the OAuth client
    id: int = 1  # its JSON-RPC id

    @property
    def result(self) -> dict[str, Any]:
        assert self.answer is not None and "result" in self.answer, self
        result: dict[str, Any] = self.answer["result"]
        return result

    @property
    def refused(self) -> bool:
        return bool(self.result.get("isError")) and "rate_limited" in json.dumps(self.result.get("_meta"))


@dataclass
class Cluster:
    folder: Path
    idp: IdentityProvider
    public_port: int
    redis_port: int
    redis: subprocess.Popen[bytes]
    env: dict[str, str]
    hosts: dict[str, HttpHost] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    nginx: Nginx | None = None
    tokens: dict[str, str] = field(default_factory=dict)
    subjects: dict[str, str] = field(default_factory=dict)
    client_id: str = ""  # the OAuth client both principals signed in with
    calls: list[Call] = field(default_factory=list)
    workers: dict[int, str] = field(default_factory=dict)  # worker pid -> its host

    @property
    def public_url(self) -> str:
        return f"http://127.0.0.1:{self.public_port}"

    def audit_file(self, name: str) -> Path:
        return self.folder / f"audit-{name}.jsonl"

    def start_host(self, name: str) -> HttpHost:
        self.ports.setdefault(name, free_port())
        args = [
            "run",
            str(SERVICE / "tools.py"),
            str(SERVICE / "mw.py"),
            "--public-url",
            self.public_url,
            "--oauth-provider",
            f"oidc:{self.idp.issuer}",
            "--oauth-client-id-env",
            "APP_ID",
            "--oauth-client-secret-env",
            "APP_SECRET",
            "--oauth-signing-key-env",
            "SIGNING_KEY",  # (the keys outlive Redis restarting empty: the tokens stay valid)
            "--store",
            f"redis://127.0.0.1:{self.redis_port}/0",
            "--workers",
            "2",
            "--session-id-header",
            SEED,
            "--rate-limit",
            f"limited={LIMIT}/minute",
            "--audit-log",
            str(self.audit_file(name)),
            "--audit-arguments",
        ]
        self.hosts[name] = HttpHost(*args, env=self.env, port=self.ports[name])
        return self.hosts[name]

    def url(self, target: str) -> str:
        if target == "nginx":
            assert self.nginx is not None
            return self.nginx.url
        return self.hosts[target].url

    def host_of(self, worker: int) -> str:
        """The host a worker pid belongs to (read while it runs; remembered after)."""
        if worker not in self.workers:
            status = Path(f"/proc/{worker}/status").read_text()
            parent = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
            [name] = [n for n, h in self.hosts.items() if h.proc.pid == parent]
            self.workers[worker] = name
        return self.workers[worker]

    async def call(
        self, who: str, tool: str, arguments: dict[str, Any], target: str, tag: str | None = None
    ) -> Call:
        """One tools/call on a connection of its own (so the kernel spreads calls over a host's
        workers), recorded with what came back."""
        tag = tag or f"{who}-{len(self.calls)}"
        call = Call(who, tool, tag, target)
        self.calls.append(call)
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": {**arguments, "tag": tag}, "_meta": TASKS_META},
        }
        headers = {
            "accept": ACCEPT,
            "content-type": "application/json",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": tool,
            "authorization": f"Bearer {self.tokens[who]}",
        }
        limits = httpx2.Limits(max_keepalive_connections=0)
        try:
            with anyio.fail_after(CALL_TIMEOUT):
                async with httpx2.AsyncClient(timeout=CALL_TIMEOUT + 5, limits=limits) as http:
                    response = await http.post(self.url(target), content=orjson.dumps(body), headers=headers)
        except (httpx2.TransportError, OSError) as exc:  # (a dropped connection: an error it sees)
            call.failure = type(exc).__name__
            return call
        if response.status_code != 200:
            call.failure = f"HTTP {response.status_code}"
            return call
        assert response.headers["content-type"].startswith("application/json"), response.headers
        call.answer = orjson.loads(response.content)
        result = call.answer.get("result") or {}
        host = (result.get("structuredContent") or {}).get("host")
        if host is None and tool == "big" and "result" in call.answer:
            host = int(result["content"][1]["text"])
        if host is not None:
            call.host = self.host_of(host)
        elif target != "nginx":
            call.host = target
        return call

    def answered(self, host: str) -> list[Call]:
        return [c for c in self.calls if c.answer is not None and c.host == host]

    def close(self) -> None:
        for host in self.hosts.values():
            host.terminate()
        if self.nginx is not None:
            self.nginx.stop()
        stop(self.redis)
        self.idp.stop()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    if not os.access(REDIS, os.X_OK):
        missing("redis-server is not installed (Debian: apt-get install redis-server)")
    public_port, redis_port = free_port(), free_port()
    key = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    redis = start_redis(redis_port, tmp_path / "redis")
    idp = IdentityProvider([client(APP_ID, APP_SECRET, [f"http://127.0.0.1:{public_port}/oauth/callback"])])
    env = {"APP_ID": APP_ID, "APP_SECRET": APP_SECRET, "SIGNING_KEY": key.decode()}
    bed = Cluster(tmp_path, idp, public_port, redis_port, redis, env)
    try:
        idp.__enter__()
        for name in ("a", "b"):
            bed.start_host(name)
        bed.nginx = Nginx(tmp_path / "nginx", [f"127.0.0.1:{bed.ports[n]}" for n in ("a", "b")], public_port)
        signing = Bed(idp, bed.hosts["a"], bed.public_url, lambda *more: bed.hosts["a"])
        client_id = bed.client_id = register(signing)  # (through nginx: sign-ins go through either host)
        for who in ("alice", "bob"):
            code, asked = code_for(signing, client_id, who)
            tokens = redeem(signing, client_id, code, asked.verifier)
            assert tokens.status == 200, tokens.body
            bed.tokens[who] = tokens.json()["access_token"]
            bed.subjects[who] = principal_of(bed.tokens[who])
        assert bed.subjects["alice"] != bed.subjects["bob"]
        yield bed
    finally:
        bed.close()


# -- what each part recorded -----------------------------------------------------------------------


class Scrape:
    def __init__(self, text: str) -> None:
        self.samples = [s for family in text_string_to_metric_families(text) for s in family.samples]

    def value(self, name: str, **labels: str) -> float:
        return sum(
            s.value
            for s in self.samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
        )

    def tool_calls(self) -> Counter[tuple[str, str]]:
        """(tool, outcome) -> count, of every tools/call."""
        counted: Counter[tuple[str, str]] = Counter()
        for s in self.samples:
            if (
                s.name == "protomcp_requests_total"
                and s.labels["mcp_method_name"] == "tools/call"
                and s.value
            ):
                counted[(s.labels["gen_ai_tool_name"], s.labels["outcome"])] += int(s.value)
        return counted


async def scrape(cluster: Cluster, host: str) -> Scrape:
    """GET /metrics from the host's own port (loopback: no token), on a connection of its own."""
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.get(f"http://127.0.0.1:{cluster.ports[host]}/metrics")
    assert response.status_code == 200, response.text
    return Scrape(response.text)


def expected_counts(calls: list[Call]) -> Counter[tuple[str, str]]:
    return Counter((c.tool, "error" if c.result.get("isError") else "ok") for c in calls)


async def assert_metrics_count_what_each_host_answered(
    cluster: Cluster, hosts: tuple[str, ...] = ("a", "b")
) -> None:
    for host in hosts:
        answered = cluster.answered(host)
        seen = await scrape(cluster, host)
        assert seen.tool_calls() == expected_counts(answered), host
        refused = sum(1 for c in answered if c.refused)
        assert seen.value("protomcp_rate_limit_refusals_total", gen_ai_tool_name="limited") == refused
        assert seen.value("protomcp_store_up") == 1


async def audit_lines(cluster: Cluster, host: str, count: int) -> list[dict[str, Any]]:
    """Every line of the host's audit file, each parsed whole, once there are `count` of them (a
    line is written just after its answer went out)."""
    path = cluster.audit_file(host)
    with anyio.move_on_after(20):
        while path.read_bytes().count(b"\n") < count:
            await anyio.sleep(0.02)
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.splitlines()]  # a torn line would not parse


async def assert_audit_has_each_answered_call_once(cluster: Cluster) -> None:
    for host in ("a", "b"):
        answered = cluster.answered(host)
        lines = await audit_lines(cluster, host, len(answered))
        by_tag = {line["arguments"]["tag"]: line for line in lines}
        assert len(by_tag) == len(lines) == len(answered), host
        for call in answered:
            line = by_tag[call.tag]
            assert line["principal"] == cluster.subjects[call.who] and line["tool"] == call.tool, (call, line)
            assert line["client"] == (call.client or cluster.client_id), (call, line)
            outcome = "rate_limited" if call.refused else "error" if call.result.get("isError") else "ok"
            assert line["outcome"] == outcome, (call, line)


def assert_each_call_answered_once(cluster: Cluster) -> None:
    for call in cluster.calls:
        assert (call.answer is None) != (call.failure is None), call
        if call.answer is not None:
            assert call.host is not None, call  # (which host answered it: the counts below need it)
            assert call.answer.get("id") == call.id and ("result" in call.answer) != (
                "error" in call.answer
            ), call


def assert_each_state_has_one_owner_and_a_bound(cluster: Cluster) -> None:
    """In Redis: one rate-limit log per principal, holding at most the limit and expiring with its
    window; one user-state per principal, holding the one key each kept."""
    import redis

    with redis.Redis(port=cluster.redis_port) as store:
        rates = sorted(store.scan_iter("protomcp:rate:*"))
        assert [key.rsplit(b" ", 1)[1].decode() for key in rates] == sorted(cluster.subjects.values())
        for key in rates:
            assert store.zcard(key) <= LIMIT and 0 < store.pttl(key) <= 60_000, key
        users = sorted(store.scan_iter("protomcp:user:*:v:*"))
        assert len(users) == 2 and all(key.endswith(b":v:color") for key in users)
        assert len({key.split(b":")[2] for key in users}) == 2  # (apart, under each one's hash)


# -- the calls -----------------------------------------------------------------------------------


async def read_everywhere(cluster: Cluster, who: str, key: str, workers: int = 4) -> list[Any]:
    """`who`'s value under `key` read on new connections to both hosts until `workers` host
    processes have answered: the values seen. (A call the client saw fail, a worker killed
    under it, is checked with the others at the end.)"""
    seen: set[int] = set()
    values: set[str] = set()
    for i in range(60):
        call = await cluster.call(who, "read", {"key": key}, "ab"[i % 2])
        if call.failure is not None:
            continue
        values.add(json.dumps(call.result["structuredContent"]["value"]))
        seen.add(call.result["structuredContent"]["host"])
        if len(seen) >= workers:
            break
    assert len(seen) >= workers, seen
    return [json.loads(v) for v in sorted(values)]


async def limited_at_once(cluster: Cluster, who: str, count: int) -> list[Call]:
    """`count` calls of the limited tool at once, alternately on each host's own port."""
    calls: list[Call] = []

    async def one(i: int) -> None:
        calls.append(await cluster.call(who, "limited", {}, "ab"[i % 2]))

    async with anyio.create_task_group() as tg:
        for i in range(count):
            tg.start_soon(one, i)
    return calls


def whole(big: Call, error: bool = False) -> bool:
    """The 20 MiB answer came whole, through the middleware's process."""
    assert big.answer is not None and big.result.get("isError") is error, big
    content = big.result["content"]
    assert content[-1]["text"] == "[mw]"
    assert len(content[0]["text"]) == MIB * len(CHUNK) and content[0]["text"] == CHUNK * MIB
    return True


def admitted(calls: list[Call]) -> int:
    assert all(c.answer is not None for c in calls), [(c.tag, c.target, c.failure) for c in calls]
    assert all(c.refused or not c.result.get("isError") for c in calls), calls
    return sum(1 for c in calls if not c.refused)


VALUES = {"alice": {"alice": "blue"}, "bob": "bob's red"}


async def keep_values(cluster: Cluster) -> None:
    """Both principals keep a value under the same key, at once."""
    async with anyio.create_task_group() as tg:
        for who, value in VALUES.items():
            tg.start_soon(cluster.call, who, "note", {"key": "color", "value": value}, "nginx")
    assert all(c.answer is not None and not c.result.get("isError") for c in cluster.calls)


async def keep_reading(
    cluster: Cluster,
    who: str,
    done: anyio.Event,
    targets: tuple[str, ...] = ("a", "b", "nginx"),
    gone: bool = False,
) -> None:
    """Read `who`'s value through `targets` in turn until `done`: never another's value (`gone`:
    or none, or an error result saying the store could not serve it)."""
    i = 0
    while not done.is_set():
        call = await cluster.call(who, "read", {"key": "color"}, targets[i % len(targets)])
        i += 1
        if call.answer is None:
            continue
        if gone and call.result.get("isError"):
            assert UNAVAILABLE in call.result["content"][0]["text"], call
            continue
        assert call.result["structuredContent"].get("value") in (
            [VALUES[who], "<none>"] if gone else [VALUES[who]]
        ), call.result


async def test_a_worker_killed_mid_run_loses_nothing_a_client_sees(cluster: Cluster) -> None:
    gate = cluster.folder / "gate"
    with anyio.fail_after(120):
        await keep_values(cluster)
        crashed = await cluster.call("bob", "crash", {}, "b")  # a tool process dies mid-call: an error
        assert crashed.result.get("isError"), crashed  # result, and bob's state is not in it

        # a stateful session of alice's lives in one worker of host a: the worker to kill
        bearer = {"authorization": f"Bearer {cluster.tokens['alice']}"}
        async with httpx2.AsyncClient(timeout=CALL_TIMEOUT, headers=bearer) as http:
            session = await open_raw_session(http, cluster.hosts["a"].url)
            in_session = {"accept": ACCEPT, "content-type": "application/json", "mcp-session-id": session}
            asked: list[tuple[str, dict[str, Any]]] = [
                ("read", {"key": "color"}),
                ("big", {"mib": MIB}),
                ("big", {"mib": MIB, "fail": True}),  # (counted and logged as an error)
            ]
            for i, (tool, arguments) in enumerate(asked, 1):
                tag = f"alice-session-{i}"
                body = rpc(i, "tools/call", {"name": tool, "arguments": {**arguments, "tag": tag}})
                answer = answer_of(await http.post(cluster.hosts["a"].url, content=body, headers=in_session))
                cluster.calls.append(Call("alice", tool, tag, "a", answer, host="a", client=RAW_CLIENT, id=i))
        [read, big, failed] = cluster.calls[-3:]
        victim = read.result["structuredContent"]["host"]
        assert cluster.host_of(victim) == "a" and whole(big) and whole(failed, error=True)
        assert (await scrape(cluster, "a")).value("protomcp_sessions") == 1

        held: list[Call] = []
        limits: dict[str, list[Call]] = {}
        marks = [cluster.folder / f"mark-{who}-{i}" for who in ("alice", "bob") for i in range(3)]
        session_mark = cluster.folder / "mark-alice-session"

        async def hold_in_session(mark: Path) -> None:
            """A call in alice's session: it runs in the worker that holds the session."""
            call = Call("alice", "hold", mark.name, "a", client=RAW_CLIENT, id=4)
            cluster.calls.append(call)
            arguments = {"gate": str(gate), "mark": str(mark), "tag": mark.name}
            body = rpc(call.id, "tools/call", {"name": "hold", "arguments": arguments})
            url = cluster.hosts["a"].url
            try:
                with anyio.fail_after(CALL_TIMEOUT):
                    async with httpx2.AsyncClient(timeout=CALL_TIMEOUT + 5, headers=bearer) as http:
                        response = await http.post(url, content=body, headers=in_session)
                        plain = response.headers.get("content-type", "").startswith("application/json")
                        events = (
                            sse_events(response.text) if response.status_code == 200 and not plain else []
                        )
                        answers = [orjson.loads(e["data"]) for e in events if e.get("data")]
                        if response.status_code != 200:
                            call.failure = f"HTTP {response.status_code}"
                        elif plain:  # (a silent call's answer comes as plain JSON)
                            call.answer = response.json()
                            call.host = "a"
                        elif answers:
                            [call.answer] = answers
                            call.host = "a"
                        else:  # the stream ended first: the client resumes it, and learns the session is gone
                            last = {"last-event-id": [e["id"] for e in events if "id" in e][-1]}
                            resumed = await http.get(url, headers={**in_session, **last})
                            call.failure = f"stream ended; resumed: HTTP {resumed.status_code}"
            except (httpx2.TransportError, OSError) as exc:
                call.failure = type(exc).__name__
            held.append(call)

        async def hold(mark: Path) -> None:
            who = mark.name.split("-")[1]
            held.append(await cluster.call(who, "hold", {"gate": str(gate), "mark": str(mark)}, "a"))

        async def limit(who: str, count: int) -> None:
            limits[who] = await limited_at_once(cluster, who, count)

        async with anyio.create_task_group() as tg:
            done = anyio.Event()
            for who in VALUES:
                tg.start_soon(keep_reading, cluster, who, done)
            async with anyio.create_task_group() as first:
                for mark in marks:
                    tg.start_soon(hold, mark)
                tg.start_soon(hold_in_session, session_mark)
                first.start_soon(limit, "alice", 3 * LIMIT)
                first.start_soon(limit, "bob", LIMIT + 1)
                first.start_soon(cluster.call, "alice", "big", {"mib": MIB}, "nginx", "alice-big")
                while not all(m.exists() and m.read_text() for m in [*marks, session_mark]):
                    await anyio.sleep(0.02)
            # the limited calls and the 20 MiB answer are in; the held calls and the reads go on
            os.kill(victim, signal.SIGKILL)
            exited = f"(pid {victim}) exited"
            await anyio.to_thread.run_sync(cluster.hosts["a"].wait_stderr, lambda line: exited in line)
            assert await read_everywhere(cluster, "alice", "color") == [VALUES["alice"]]  # a new worker too
            assert await read_everywhere(cluster, "bob", "color") == [VALUES["bob"]]
            gate.touch()
            while len(held) < len(marks) + 1:
                await anyio.sleep(0.02)
            done.set()

        # the calls the dead worker held failed where the client saw it; every other was answered
        on_victim = sum(1 for m in [*marks, session_mark] if int(m.read_text()) == victim)
        assert sum(1 for c in held if c.failure is not None) == on_victim, held
        # (the held call is silent: its answer was awaited as JSON. Served by the worker that died:
        # the connection drops; relayed to it by another worker: that one answers 502)
        assert {c.failure for c in held} <= {None, "RemoteProtocolError", "HTTP 502"}
        assert all(not c.result.get("isError") for c in held if c.failure is None)

        # exactly LIMIT each, whichever host and worker counted (and bob untouched by alice)
        assert admitted(limits["alice"]) == LIMIT and admitted(limits["bob"]) == LIMIT
        more = await limited_at_once(cluster, "alice", 2) + await limited_at_once(cluster, "bob", 2)
        assert admitted(more) == 0  # (the window is a minute: still full after the kill)

        [big] = [c for c in cluster.calls if c.tag == "alice-big"]
        assert whole(big)

    assert_each_call_answered_once(cluster)
    assert_each_state_has_one_owner_and_a_bound(cluster)
    assert (await scrape(cluster, "a")).value("protomcp_sessions") == 0  # the dead worker's gauge is gone
    await assert_metrics_count_what_each_host_answered(cluster)
    await assert_audit_has_each_answered_call_once(cluster)


async def refused(port: int) -> None:
    """Until connections to the port are refused (polled: another process closes it)."""
    while True:
        try:
            stream = await anyio.connect_tcp("127.0.0.1", port)
        except OSError:
            return
        await stream.aclose()
        await anyio.sleep(0.02)


async def until_healthy(cluster: Cluster) -> None:
    """Until every host's /healthz says it reaches its store again (polled)."""
    async with httpx2.AsyncClient(timeout=10) as http:
        for host in cluster.hosts:
            while (await http.get(f"http://127.0.0.1:{cluster.ports[host]}/healthz")).status_code != 200:
                await anyio.sleep(0.05)


async def test_redis_restarted_empty_and_a_host_stopped_mid_run_lose_nothing_a_client_sees(
    cluster: Cluster,
) -> None:
    with anyio.fail_after(120):
        await keep_values(cluster)
        assert admitted(await limited_at_once(cluster, "alice", LIMIT + 2)) == LIMIT
        assert admitted(await limited_at_once(cluster, "bob", 1)) == 1  # alice at her limit: bob is not

        async with anyio.create_task_group() as tg:
            done = anyio.Event()
            for who in VALUES:
                tg.start_soon(keep_reading, cluster, who, done, ("a", "b", "nginx"), True)
            stop(cluster.redis, signal.SIGKILL)  # mid-run
            assert (await scrape(cluster, "a")).value("protomcp_store_up") == 0
            # while Redis cannot answer: limited calls go on uncounted (alice is at her limit)
            down = await limited_at_once(cluster, "alice", 2)
            assert admitted(down) == 2
            for host in {cluster.hosts[str(c.host)] for c in down}:  # and says so, once per worker
                await anyio.to_thread.run_sync(host.wait_stderr, lambda line: UNCOUNTED in line)
                assert len([line for line in host.stderr if UNCOUNTED in line]) <= 2
            kept = await cluster.call("alice", "note", {"key": "color", "value": "lost"}, "nginx")
            assert kept.result.get("isError") and UNAVAILABLE in kept.result["content"][0]["text"], kept
            cluster.redis = start_redis(cluster.redis_port, cluster.folder / "redis")  # empty
            await until_healthy(cluster)
            done.set()

        # the state is gone with it: a plain miss, for each, on every host and worker
        assert await read_everywhere(cluster, "alice", "color") == ["<none>"]
        assert await read_everywhere(cluster, "bob", "color") == ["<none>"]
        await cluster.call("alice", "note", {"key": "color", "value": VALUES["alice"]}, "b")
        assert await read_everywhere(cluster, "alice", "color") == [VALUES["alice"]]
        assert await read_everywhere(cluster, "bob", "color") == ["<none>"]
        # counted again, from nothing
        assert admitted(await limited_at_once(cluster, "alice", LIMIT + 1)) == LIMIT

        assert_each_call_answered_once(cluster)
        assert not [c for c in cluster.calls if c.failure is not None]
        await assert_metrics_count_what_each_host_answered(cluster)

        # host b stops (SIGTERM) with a call in flight, while both read through nginx: it drains
        # (the call ends, answered), and no client sees an error
        await cluster.call("bob", "note", {"key": "color", "value": VALUES["bob"]}, "a")
        before = len(cluster.calls)
        gate, mark = cluster.folder / "gate-b", cluster.folder / "mark-b"
        async with anyio.create_task_group() as tg:
            done = anyio.Event()
            for who in VALUES:
                tg.start_soon(keep_reading, cluster, who, done, ("nginx",))
            tg.start_soon(
                cluster.call, "alice", "hold", {"gate": str(gate), "mark": str(mark)}, "b", "alice-b"
            )
            served = len(cluster.answered("b"))
            while len(cluster.answered("b")) < served + 2 or not mark.exists():  # (mid-run)
                await anyio.sleep(0.02)
            cluster.hosts["b"].proc.send_signal(signal.SIGTERM)
            await refused(cluster.ports["b"])  # it drains: new connections go to a
            gate.touch()
            assert await anyio.to_thread.run_sync(cluster.hosts["b"].proc.wait, 30) == 0
            answered_by_a = len(cluster.answered("a"))
            while len(cluster.answered("a")) < answered_by_a + 4:  # (and a serves what follows)
                await anyio.sleep(0.02)
            done.set()
        [held] = [c for c in cluster.calls if c.tag == "alice-b"]
        assert held.host == "b" and not held.result.get("isError")
        assert not [c for c in cluster.calls[before:] if c.failure is not None]
        assert_each_call_answered_once(cluster)
    await assert_metrics_count_what_each_host_answered(cluster, hosts=("a",))
    await assert_audit_has_each_answered_call_once(cluster)
