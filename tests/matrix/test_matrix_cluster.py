"""The combination matrix on a cluster: two hosts, each `--workers 2 --processes 2`, sharing one
real redis-server behind the shipped nginx site, with an upstream server behind every worker,
serving two OAuth principals at once in both protocol eras. After every scenario each request
got exactly one answer and neither principal received anything of the other's
(tests/support/matrix.py World.finish). Scenarios: asking (sampling, elicitation, roots; upstream
elicitation), tool-list control, every worker and pool member serving, tasks, listen streams
(modern; one client's bound on them is per host process), a retry provably on another host.
Faults: a worker, a pool member, the upstream and finally a whole host killed (kill -9; stateful
sessions begun while the worker is replaced); Redis restarted empty; Redis connections dropped;
a listen stream whose client stops reading; several, flooded with updates (each host process's
memory stays bounded, each stream ends with the error that says why).

The peer host: a bridged host (`--agent-id`) is one agent and takes one worker (the CLI refuses
`--agent-id` with `--workers`), so the `--workers 2` hosts cannot be bridged. The bridge is
tested on a single-worker host of the same store and OAuth ("hub") that a peer host dials with
its own bridge token: a peer's calls and events reach no client session of either principal,
and a principal's access token opens no bridge link.

Single-worker members of the same store and OAuth, started by their scenario: one with a stdio
upstream, where a call Alice cancelled asks its question while Bob's call is the one in flight
(declined, never asked of Bob); one whose `--peer data=...` is not up yet when a peer holding the
bridge token dials in as `data` (refused; the real `data` then serves both principals).

Test ids read `test_<scenario>[<era>]`: `legacy` = 2025-11-25 sessions (pinned to one host by
the nginx hash, to one worker inside it), `modern` = 2026-07-28 (every request to any host and
worker, round-robin)."""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import orjson
import pytest
from mcp.client.subscriptions import listen

from tests.peers.test_peers import start_host
from tests.support.cluster import NGINX, REDIS, Nginx, free_port, start_redis, stop
from tests.support.hosts import TOOLS
from tests.support.http import HttpHost, http_session, sse_events
from tests.support.installed import missing
from tests.support.matrix import (
    MATRIX_MW,
    MATRIX_TOOLS,
    SUBJECTS,
    WAIT,
    Auth,
    Peer,
    World,
    http_peer,
    plain_errors,
    text_of,
)

UPSTREAM = MATRIX_TOOLS.parent / "upstream.py"
STDIO_UPSTREAM = TOOLS / "upstream_server.py"  # an official-SDK server, over stdio
ERAS = pytest.mark.parametrize("era", ["legacy", "modern"])
SEED = "X-Mcp-Session-Seed"
BRIDGE_TOKEN = "matrix-peers-only"  # the peers' own credential: no principal's access token
pytestmark = pytest.mark.filterwarnings("ignore:resources/subscribe is removed")


WORKERS = 2  # per host


class Cluster:
    """redis-server, two hosts of two workers and two tool processes per file each, nginx."""

    def __init__(self, folder: Path, auth: Auth) -> None:
        self.folder = folder
        self.auth = auth
        self.redis_port = free_port()
        self.redis = start_redis(self.redis_port, folder / "redis")
        self.redis_url = f"redis://127.0.0.1:{self.redis_port}/0"
        self.hosts: list[HttpHost] = []
        self.nginx: Nginx | None = None
        self.upstream: HttpHost | None = None
        self.upstream_port = free_port()  # fixed: the restarted upstream is found again
        try:
            self.upstream = start_host(self.upstream_port, str(UPSTREAM))
            for _ in range(2):
                self.hosts.append(self._host())
            self.nginx = Nginx(folder / "nginx", [h.url.split("/")[2] for h in self.hosts])
        except BaseException:
            self.close()
            raise
        self.url = self.nginx.url

    def _host(self) -> HttpHost:
        return HttpHost(
            "run",
            str(MATRIX_TOOLS),
            str(MATRIX_MW),
            "--workers",
            str(WORKERS),
            "--processes",
            "2",
            "--store",
            self.redis_url,
            "--session-id-header",
            SEED,
            *self.auth.options(),
            "--upstream",
            f"up={self.upstream.url}",
        )

    def restart_redis_empty(self) -> None:
        stop(self.redis, signal.SIGKILL)
        self.redis = start_redis(self.redis_port, self.folder / "redis")

    def restart_nginx(self) -> None:
        """A fresh balancer (new port): after a fault nginx keeps a host marked failed for its
        fail_timeout (10 s); the scenarios after it start from a balancer that knows nothing."""
        assert self.nginx is not None
        self.nginx.stop()
        self.nginx = Nginx(self.folder / f"nginx-{free_port()}", [h.url.split("/")[2] for h in self.hosts])
        self.url = self.nginx.url

    def host_of(self, pid: int) -> int:
        """Which host (index) a worker process belongs to, from the hosts' "(pid N) serving" lines."""
        for index, host in enumerate(self.hosts):
            if any(f"(pid {pid}) serving" in line for line in host.stderr):
                return index
        raise AssertionError(f"no host started a worker of pid {pid}")

    def wait_replaced(self, victim: int) -> None:
        """Until the parent of a killed worker says that worker's replacement is serving."""
        died = False

        def replaced(line: str) -> bool:
            nonlocal died
            died = died or f"(pid {victim}) exited" in line
            return died and re.search(r"\(pid \d+\) serving", line) is not None

        self.hosts[self.host_of(victim)].wait_stderr(replaced, timeout=60)

    def kill_upstream(self) -> None:
        assert self.upstream is not None
        os.killpg(self.upstream.proc.pid, signal.SIGKILL)  # the host and its tool process
        self.upstream.proc.wait()

    def start_upstream(self) -> None:
        self.upstream = start_host(self.upstream_port, str(UPSTREAM))

    def stderr(self) -> str:
        return "\n".join("\n".join(host.stderr) for host in self.hosts)

    def close(self) -> None:
        if self.nginx is not None:
            self.nginx.stop()
        for host in self.hosts:
            host.terminate()
        if self.upstream is not None:
            self.upstream.terminate()
        stop(self.redis)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, auth: Auth) -> Iterator[Cluster]:
    for program in (REDIS, NGINX):
        if not os.access(program, os.X_OK):
            missing(f"{program} is not installed (Debian: apt-get install redis-server nginx)")
    started = Cluster(tmp_path_factory.mktemp("cluster"), auth)
    yield started
    started.close()


class Bridged:
    """The cluster's bridged member ("hub": one worker, the cluster's store and OAuth, peers only
    with the bridge token) and a peer host ("peer") that dials it with that token."""

    def __init__(self, cluster: Cluster) -> None:
        self.hub = HttpHost(
            "run",
            str(MATRIX_TOOLS),
            "--agent-id",
            "hub",
            "--store",
            cluster.redis_url,
            *cluster.auth.options(),
            "--bridge-token-env",
            "MATRIX_BRIDGE_TOKEN",
            env={"MATRIX_BRIDGE_TOKEN": BRIDGE_TOKEN},
        )
        self.bridge = self.hub.url.replace("http://", "ws://").replace("/mcp", "/bridge")
        try:
            self.peer = HttpHost(
                "run",
                str(MATRIX_TOOLS),
                "--agent-id",
                "peer",
                "--peer",
                self.bridge,
                "--peer-token-env",
                "MATRIX_PEER_TOKEN",
                env={"MATRIX_PEER_TOKEN": BRIDGE_TOKEN},
            )
        except BaseException:
            self.hub.terminate()
            raise

    def close(self) -> None:
        self.peer.terminate()
        self.hub.terminate()


@pytest.fixture(scope="module")
def bridged(cluster: Cluster) -> Iterator[Bridged]:
    pytest.importorskip("websockets")
    started = Bridged(cluster)
    yield started
    started.close()


@asynccontextmanager
async def world(cluster: Cluster, era: str, url: str | None = None) -> AsyncIterator[World]:
    """Alice (A) and Bob (B), each with a session through nginx (or `url`) in the given era."""
    modern = era == "modern"
    auth = cluster.auth
    async with (
        plain_errors(),
        http_peer("A", url or cluster.url, auth.token(SUBJECTS[0]), modern) as a,
        http_peer("B", url or cluster.url, auth.token(SUBJECTS[1]), modern) as b,
    ):
        if modern:
            assert a.session.protocol_version == "2026-07-28"
        yield World("http", [a, b], cluster.stderr, modern=modern)


def flush_uri(peer: Peer, scenario: str) -> str:
    """A resource URI carrying one of the peer's markers (resource updates are public: whoever
    listens to a URI hears it, so each principal listens to its own)."""
    return f"matrix://flush/{peer.tag(scenario)}"


async def heard(peer: Peer, uri: str) -> None:
    await peer.wait_for(
        lambda m: m.get("method") == "notifications/resources/updated" and m["params"]["uri"] == uri,
        f"resources/updated of {uri} on its listen stream",
    )


def seen_anywhere(peer: Peer, text: str) -> bool:
    return any(text in orjson.dumps(m, default=repr).decode() for m in peer.received)


async def where(peer: Peer) -> tuple[int, int]:
    out = (await peer.call("where", {})).structured_content
    assert out is not None
    return out["host"], out["pid"]


async def many(peer: Peer, times: int) -> set[tuple[int, int]]:
    """Which (host process, tool process) pairs answered `times` concurrent calls (concurrent, so
    that nginx opens several connections, which the kernel spreads over a host's workers)."""
    seen: set[tuple[int, int]] = set()

    async def one() -> None:
        seen.add(await where(peer))

    async with anyio.create_task_group() as tg:
        for _ in range(times):
            tg.start_soon(one)
    return seen


# -- scenarios --------------------------------------------------------------------------------
@ERAS
async def test_cluster_asking_reaches_only_the_asker(cluster: Cluster, era: str) -> None:
    """Sampling, elicitation and roots from async and sync tools, both principals at once, a few
    times each: in the modern era every retry of the round trip goes to another worker or host."""
    async with world(cluster, era) as w:

        async def ask(peer: Peer) -> None:
            me = peer.label
            for tool in ("ask_all", "ask_all_sync", "ask_all", "ask_all_sync"):
                tag = peer.tag("ask")
                answer = await peer.text(tool, {"tag": tag})
                assert answer == f"{me} saw sample {tag}|accept:{me} for elicit {tag}|file:///root-of-{me}"
            assert peer.asked == {"sampling": 4, "elicitation": 4, "roots": 4}, peer.asked

        await w.each(ask)
        await w.finish()


@ERAS
async def test_cluster_upstream_questions_reach_only_their_caller(cluster: Cluster, era: str) -> None:
    """An upstream server (behind every worker of both hosts) elicits during both principals'
    concurrent calls: each question reaches the client of the call it belongs to, and only it."""
    async with world(cluster, era) as w:

        async def ask(peer: Peer) -> None:
            for _ in range(3):
                tag = peer.tag("upstream")
                assert await peer.text("up_ask_name", {"tag": tag}) == f"accept:{peer.label} for Name {tag}?"

        await w.each(ask)
        await w.finish()


@ERAS
async def test_cluster_tool_control_stays_with_its_principal(cluster: Cluster, era: str) -> None:
    """Alice enables a hidden tool: Bob never sees it, on any host or worker; a stateful session
    (one worker holds it) sees its own change on every request."""
    async with world(cluster, era) as w:
        a, b = w.a, w.b
        assert b is not None
        active = (await a.call("unlock_sync", {"tag": a.tag("control")})).structured_content
        assert active is not None and "secret" in active["result"], active
        for _ in range(6):
            assert "secret" not in await b.tool_names()
        if era == "legacy":
            for _ in range(6):
                assert "secret" in await a.tool_names()
        await w.finish()


@ERAS
async def test_cluster_every_worker_and_member_serves(cluster: Cluster, era: str) -> None:
    """Modern requests reach both hosts, both workers of each and both tool processes of each
    worker; a stateful session stays on one worker."""
    async with world(cluster, era) as w:
        seen: set[tuple[int, int]] = set()
        with anyio.fail_after(60):
            if era == "modern":
                while len({host for host, _ in seen}) < 4:
                    seen |= await many(w.a, 8)
            else:
                seen = await many(w.a, 8)
                assert len({host for host, _ in seen}) == 1, seen
        await w.finish()


async def test_cluster_tasks_are_their_principals(cluster: Cluster, tmp_path: Path) -> None:
    """2026-07-28 tasks of Alice, made through any host and worker: Alice reads and cancels them
    through any other; Bob gets "not found" for each, everywhere, and cannot cancel them."""
    import httpx2

    from tests.support.scale import modern_rpc, task_until

    auth = cluster.auth
    gate = tmp_path / "gate"
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {auth.token(SUBJECTS[0])}"}) as alice,
        httpx2.AsyncClient(headers={"authorization": f"Bearer {auth.token(SUBJECTS[1])}"}) as bob,
    ):
        with anyio.fail_after(90):
            ids = []
            for i in range(4):
                arguments = {"tag": f"alice-task-{i}", "path": str(gate)}
                created = await modern_rpc(
                    alice, cluster.url, "tools/call", {"name": "task_file", "arguments": arguments}
                )
                assert created["result"]["resultType"] == "task", created
                ids.append(created["result"]["taskId"])
            for task_id in ids:
                for host in cluster.hosts:  # straight to each host: the store shares the record
                    await task_until(alice, host.url, task_id, "working")
                    refused = await modern_rpc(bob, host.url, "tasks/get", {"taskId": task_id})
                    assert "error" in refused and "not found" in refused["error"]["message"].lower(), refused
                    refused = await modern_rpc(bob, host.url, "tasks/cancel", {"taskId": task_id})
                    assert "error" in refused, refused
            gate.write_text("open")
            for task_id, i in zip(ids, range(4), strict=True):
                done = await task_until(alice, cluster.url, task_id, "completed")
                assert done["result"]["content"][0]["text"] == f"task done alice-task-{i}"


async def test_cluster_listen_streams_hear_only_their_principal(cluster: Cluster) -> None:
    """2026-07-28 `subscriptions/listen` through nginx: Alice's tool-list change reaches her
    stream, whichever worker holds it, and never Bob's; each hears the resource updates of the
    URI it listens to and not the other's."""
    async with world(cluster, "modern") as w:
        a, b = w.a, w.b
        assert b is not None
        uri_a, uri_b = flush_uri(a, "listen"), flush_uri(b, "listen")
        # tool-list state may be shared by every host of the store: start from `secret` hidden
        await a.call("lock_sync", {"tag": a.tag("listen-lock")})
        with anyio.fail_after(WAIT):
            while "secret" in await a.tool_names():
                await anyio.sleep(0.05)
        async with (
            listen(a.session, tools_list_changed=True, resource_subscriptions=[uri_a]),
            listen(b.session, tools_list_changed=True, resource_subscriptions=[uri_b]),
        ):
            await a.call("unlock_sync", {"tag": a.tag("listen-control")})
            await a.wait_for(lambda m: m.get("method") == "notifications/tools/list_changed", "list_changed")
            await a.text("touch", {"uri": uri_a})
            await heard(a, uri_a)
            # Bob's own update comes over the bus after Alice's change and update: by then the
            # worker holding his stream had them too
            await b.text("touch", {"uri": uri_b})
            await heard(b, uri_b)
        assert not b.notifications("notifications/tools/list_changed"), b.dump()
        assert "secret" not in await b.tool_names()
        await w.finish()


async def test_cluster_a_retry_lands_on_another_host(cluster: Cluster) -> None:
    """A modern input-required round whose retries nginx sends round-robin: the access log shows
    the rounds of one call served by both hosts (so by different workers), and it completes."""
    assert cluster.nginx is not None
    async with world(cluster, "modern") as w:
        a = w.a
        for tool in ("ask_all_sync", "ask_all"):
            before = len(cluster.nginx.requests())
            tag = a.tag("elsewhere")
            answer = await a.text(tool, {"tag": tag})
            assert answer == f"A saw sample {tag}|accept:A for elicit {tag}|file:///root-of-A"
            calls = await cluster.nginx.logged(before, "tools/call", 4)
            assert len(calls) == 4 and len({r[0] for r in calls}) == 2, calls  # first call + 3 retries
        await w.finish()


@ERAS
async def test_cluster_peer_events_reach_no_client_session(
    cluster: Cluster, bridged: Bridged, era: str
) -> None:
    """Alice calls a peer's tool and notifies the peer through the hub; the peer notifies the hub:
    Bob sees none of it, and a notification addressed to the hub reaches neither session (it is
    the host's: docs/guide/bridge.md). Neither principal's access token opens the hub's /bridge."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    async with world(cluster, era, bridged.hub.url) as w:
        a, b = w.a, w.b
        assert b is not None
        with anyio.fail_after(30):  # the peer dialled in with the bridge token: its tools are listed
            while "peer_echo" not in await a.tool_names():
                await anyio.sleep(0.05)
        tag = a.tag("peer-call")
        assert await a.text("peer_echo", {"text": tag}) == tag
        out = a.tag("peer-event-out")
        await a.text("bridge_notify", {"event_type": "matrix", "data": {"tag": out}})
        await anyio.to_thread.run_sync(lambda: bridged.peer.wait_stderr(lambda line: out in line))
        inbound = a.tag("peer-event-in")
        async with http_session(bridged.peer.url) as on_peer:
            sent = await on_peer.call_tool(
                "bridge_notify", {"event_type": "matrix", "data": {"tag": inbound}, "receiver_id": "hub"}
            )
            assert not sent.is_error, sent
        await anyio.to_thread.run_sync(lambda: bridged.hub.wait_stderr(lambda line: inbound in line))
        await w.finish()
        for peer in w.peers:
            assert not seen_anywhere(peer, inbound), peer.dump()
    for subject in SUBJECTS:
        headers = {"Authorization": f"Bearer {cluster.auth.token(subject)}"}
        with pytest.raises(InvalidStatus) as refused:
            async with connect(bridged.bridge, additional_headers=headers, open_timeout=10):
                pass
        assert refused.value.response.status_code == 403


@asynccontextmanager
async def member(
    cluster: Cluster, *options: str, env: dict[str, str] | None = None
) -> AsyncIterator[HttpHost]:
    """A single-worker host of the cluster's store and OAuth with options of its own."""
    host = HttpHost(
        "run", str(MATRIX_TOOLS), "--store", cluster.redis_url, *cluster.auth.options(), *options, env=env
    )
    try:
        yield host
    finally:
        host.terminate()


@ERAS
async def test_cluster_a_cancelled_calls_upstream_question_reaches_no_one(
    cluster: Cluster, era: str, tmp_path: Path
) -> None:
    """Alice cancels a transfer on a stdio upstream, which finishes it anyway (the spec lets it)
    and asks "Confirm the transfer ... <Alice's account>?" while Bob's call is the one in flight:
    over stdio nothing says whose the question is; it is declined, never asked of Bob."""
    from tests.support.scale import wait_for_file

    marks = tmp_path / "marks"
    marks.mkdir()
    upstream = f"st={sys.executable} {STDIO_UPSTREAM}"
    async with (
        member(cluster, "--upstream", upstream, env={"UPSTREAM_MARKS": str(marks)}) as host,
        world(cluster, era, host.url) as w,
    ):
        a, b = w.a, w.b
        assert b is not None
        account = a.tag("account")
        scope = anyio.CancelScope()

        async def transfer() -> None:
            with scope:
                await a.call("st_transfer", {"amount": 500, "account": account})
                raise AssertionError("the transfer was answered although it was cancelled")

        async with anyio.create_task_group() as tg:
            tg.start_soon(transfer)
            await wait_for_file(marks / "transfer-started")
            scope.cancel()
        await wait_for_file(marks / "transfer-cancelled")  # the upstream heard of it and goes on
        async with anyio.create_task_group() as tg:
            held: list[str] = []

            async def hold() -> None:
                held.append(await b.text("st_hold", {}))

            tg.start_soon(hold)
            await wait_for_file(marks / "hold-started")  # Bob's call is the one in flight
            (marks / "transfer-go").touch()
            assert (await wait_for_file(marks / "transfer-answer")).split() == ["decline"]
            (marks / "release").touch()
        assert held == ["held"]
        assert a.asked["elicitation"] == b.asked["elicitation"] == 0
        assert not seen_anywhere(b, account), b.dump()
        await w.finish()


@ERAS
async def test_cluster_an_inbound_peer_before_the_configured_peer(cluster: Cluster, era: str) -> None:
    """A host with `--peer data=...` whose `data` is not up yet: a peer holding the bridge token
    dials in as `data` and is refused (the id is the configured peer's); once the real `data` is
    up both principals' calls of `data_echo` reach it, each answered with its own marker."""
    from websockets.asyncio.client import connect

    from protomcp_host.peers.messages import AgentCapabilities, MCPBridgeProtocol
    from tests.peers.test_peers import start_host

    pytest.importorskip("websockets")
    data_port = free_port()
    options = ("--agent-id", "hub2", "--peer", f"data=ws://127.0.0.1:{data_port}/bridge")
    async with member(
        cluster,
        *options,
        "--bridge-token-env",
        "MATRIX_BRIDGE_TOKEN",
        env={"MATRIX_BRIDGE_TOKEN": BRIDGE_TOKEN},
    ) as hub:
        bridge = hub.url.replace("http://", "ws://").replace("/mcp", "/bridge")
        headers = {"Authorization": f"Bearer {BRIDGE_TOKEN}"}
        async with connect(bridge, additional_headers=headers, open_timeout=10) as impostor:
            hello = MCPBridgeProtocol.create_handshake_request("data", AgentCapabilities(agent_id="data"))
            await impostor.send(hello.to_json())
            with anyio.fail_after(WAIT):
                reply = orjson.loads(await impostor.recv())
        assert reply["payload"]["accepted"] is False
        assert "reserved for the configured peer" in reply["payload"]["metadata"]["reason"]
        data = start_host(data_port, str(MATRIX_TOOLS), "--agent-id", "data")
        try:
            async with world(cluster, era, hub.url) as w:

                async def echo(peer: Peer) -> None:
                    with anyio.fail_after(30):  # the hub dials data again (backoff)
                        while "data_echo" not in await peer.tool_names():
                            await anyio.sleep(0.05)
                    for _ in range(2):
                        tag = peer.tag("data")
                        assert await peer.text("data_echo", {"text": tag}) == tag

                await w.each(echo)
                await w.finish()
        finally:
            data.terminate()


# -- faults -----------------------------------------------------------------------------------
async def served_again(peer: Peer) -> None:
    """Calls until one succeeds: after a fault nginx answers 502 for what the dead process held and
    may keep its host out for fail_timeout, and a call sent to a killed tool process fails; each
    of those requests still gets its one answer."""
    from mcp.shared.exceptions import MCPError

    with anyio.fail_after(30):
        while True:
            word = peer.tag("again")
            try:
                result = await peer.call("echo", {"text": word})
                if not result.is_error and text_of(result) == word:
                    return
            except MCPError:
                pass
            await anyio.sleep(0.1)


@ERAS
async def test_cluster_a_worker_killed_loses_no_session(cluster: Cluster, era: str) -> None:
    """kill -9 of the worker serving Alice: the parent replaces it and every request gets exactly
    one answer. A request nginx had just sent on a connection of the dead worker gets a 502
    (nginx repeats no POST), even Bob's: so "served again" is asserted, not "never noticed".
    Modern: both principals are served again. Legacy: Alice's session died with its worker (a
    404 is an answer); Bob's, on the other host, lives on. (Bob's session on the victim's host
    is not asserted: nginx's max_fails=1 takes the whole host out for fail_timeout when the
    worker's streams break and re-hashes his requests to the other host, which does not know
    his session; the sessions are opened again until they are on different hosts.)"""
    try:
        for _ in range(8):
            async with world(cluster, era) as w:
                a, b = w.a, w.b
                assert b is not None
                victim, _ = await where(a)
                if era == "legacy" and cluster.host_of(victim) == cluster.host_of((await where(b))[0]):
                    continue
                os.kill(victim, signal.SIGKILL)
                for _ in range(4):
                    await served_again(b)
                await anyio.to_thread.run_sync(cluster.wait_replaced, victim)
                if era == "modern":
                    await served_again(a)
                    await w.finish()
                else:
                    b.assert_one_answer_each()
                    a.assert_one_answer_each()
                    b.assert_no_trace_of(a)
                return
        raise AssertionError("eight pairs of stateful sessions all landed on one host")
    finally:
        cluster.restart_nginx()


async def test_cluster_legacy_sessions_begin_while_a_worker_is_replaced(cluster: Cluster) -> None:
    """kill -9 of a worker, then at once stateful sessions begin on its host with the ids nginx
    offers (`X-Mcp-Session-Seed`, which hash to either worker): each is made and serves a call
    while the parent is still replacing the dead worker."""
    import secrets

    import httpx2

    from tests.support.http import ACCEPT, INITIALIZE, INITIALIZED, answer_of, headers_for, rpc

    async with world(cluster, "modern") as w:
        victim, _ = await where(w.a)
    host = cluster.hosts[cluster.host_of(victim)]
    bearer = {"authorization": f"Bearer {cluster.auth.token(SUBJECTS[0])}"}
    outcomes: list[str] = []
    async with httpx2.AsyncClient(headers=bearer, timeout=30) as http:
        os.kill(victim, signal.SIGKILL)
        for i in range(8):
            seed = secrets.token_hex(16)
            headers = {"accept": ACCEPT, "content-type": "application/json", SEED: seed}
            made = await http.post(host.url, content=INITIALIZE, headers=headers)
            if made.status_code != 200:
                outcomes.append(f"initialize {made.status_code} {made.text[:100]}")
                continue
            session = made.headers["mcp-session-id"]
            await http.post(host.url, content=INITIALIZED, headers=headers_for(session))
            call = rpc(i + 1, "tools/call", {"name": "echo", "arguments": {"text": seed}})
            answered = await http.post(host.url, content=call, headers=headers_for(session))
            ok = answered.status_code == 200 and seed in str(answer_of(answered).get("result"))
            outcomes.append("served" if ok else f"call {answered.status_code} {answered.text[:100]}")
    await anyio.to_thread.run_sync(cluster.wait_replaced, victim)
    assert outcomes == ["served"] * 8, outcomes


@ERAS
async def test_cluster_a_pool_member_crashes_mid_call(cluster: Cluster, era: str) -> None:
    """A tool process exits mid-call: that call gets one error answer, the other member serves.
    Then kill -9 of a member: both principals are served again (restarted or by the other)."""
    async with world(cluster, era) as w:
        a, b = w.a, w.b
        assert b is not None
        crashed = await a.call("crash", {"tag": a.tag("crash")})
        assert crashed.is_error
        for _ in range(4):
            await a.text("echo", {"text": a.tag("after-crash")})
        _, member = await where(a)
        os.kill(member, signal.SIGKILL)
        for peer in (a, b):
            await served_again(peer)
        await w.finish()


async def test_cluster_redis_restarted_empty(cluster: Cluster) -> None:
    """Redis killed and restarted empty mid-run: modern round trips across hosts and workers
    still pass (one requestState key again, for every host), and both principals are served."""
    back = "is reachable again"
    before = [sum(back in line for line in host.stderr) for host in cluster.hosts]
    async with world(cluster, "modern") as w:
        cluster.restart_redis_empty()

        async def ask(peer: Peer) -> None:
            me = peer.label
            with anyio.fail_after(60):
                for tool in ("ask_all", "ask_all_sync"):
                    tag = peer.tag("redis")
                    answer = await peer.text(tool, {"tag": tag})
                    assert (
                        answer == f"{me} saw sample {tag}|accept:{me} for elicit {tag}|file:///root-of-{me}"
                    )

        await w.each(ask)
        await w.finish()
    # Every worker's bus is subscribed again before the next scenario: what is published while
    # a bus is down is not heard (Redis pub/sub keeps nothing), which is not this scenario's.
    for host, seen in zip(cluster.hosts, before, strict=True):
        count = [0]

        def again(line: str, count: list[int] = count, seen: int = seen) -> bool:
            count[0] += back in line
            return count[0] >= seen + WORKERS

        await anyio.to_thread.run_sync(host.wait_stderr, again)


@ERAS
async def test_cluster_the_upstream_killed_and_back(cluster: Cluster, era: str, tmp_path: Path) -> None:
    """kill -9 of the upstream server while Alice's call runs on it: that call gets one error
    answer; once the upstream is back (same address) both principals' calls to it succeed."""
    from mcp.shared.exceptions import MCPError

    from tests.support.scale import wait_for_file

    async with world(cluster, era) as w:
        a = w.a
        gate = tmp_path / "gate"
        outcome: list[str] = []

        async def held() -> None:
            try:
                result = await a.call("up_hold", {"tag": a.tag("up-kill"), "path": str(gate)})
            except MCPError as exc:
                outcome.append(f"error {exc}")
            else:
                outcome.append(f"{'error' if result.is_error else 'result'} {result.content}")

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(held)
                await wait_for_file(Path(f"{gate}.running"))
                cluster.kill_upstream()
        finally:
            if cluster.upstream is None or cluster.upstream.proc.poll() is not None:
                cluster.start_upstream()
        assert len(outcome) == 1 and outcome[0].startswith("error") and "went away" in outcome[0], outcome

        async def ask(peer: Peer) -> None:
            for _ in range(4):  # every host's and worker's link comes back
                tag = peer.tag("upstream-back")
                assert await peer.text("up_ask_name", {"tag": tag}) == f"accept:{peer.label} for Name {tag}?"

        await w.each(ask)
        await w.finish()


async def test_cluster_redis_connections_dropped(cluster: Cluster, tmp_path: Path) -> None:
    """`CLIENT KILL` of every host's Redis connections (those that write and those that listen):
    a task record written afterwards reaches the other host, a listen stream hears its
    principal's updates again, round trips across hosts pass; Bob sees nothing of Alice's."""
    import httpx2
    import redis.asyncio

    from tests.support.scale import modern_rpc, task_until

    async with world(cluster, "modern") as w:
        a, b = w.a, w.b
        assert b is not None
        admin = redis.asyncio.Redis.from_url(cluster.redis_url)
        try:
            for kind in ("normal", "pubsub"):
                assert await admin.client_kill_filter(_type=kind, skipme=True) >= 2  # both hosts'
        finally:
            await admin.aclose()
        uris = {peer.label: flush_uri(peer, "dropped") for peer in w.peers}

        async def served(peer: Peer) -> None:
            uri = uris[peer.label]
            async with listen(peer.session, resource_subscriptions=[uri]):
                with anyio.fail_after(30):  # a host resubscribes within moments: touch until heard
                    while not any(m.get("params", {}).get("uri") == uri for m in peer.received):
                        await peer.text("touch", {"uri": uri})
                        await anyio.sleep(0.1)
            tag = peer.tag("dropped")
            answer = await peer.text("ask_all", {"tag": tag})
            assert (
                answer
                == f"{peer.label} saw sample {tag}|accept:{peer.label} for elicit {tag}|file:///root-of-{peer.label}"
            )

        await w.each(served)
        gate = tmp_path / "gate"
        alice = {"authorization": f"Bearer {cluster.auth.token(SUBJECTS[0])}"}
        bob = {"authorization": f"Bearer {cluster.auth.token(SUBJECTS[1])}"}
        async with httpx2.AsyncClient(headers=alice) as on_a, httpx2.AsyncClient(headers=bob) as on_b:
            first, second = (host.url for host in cluster.hosts)
            arguments = {"tag": a.tag("dropped-task"), "path": str(gate)}
            created = await modern_rpc(
                on_a, first, "tools/call", {"name": "task_file", "arguments": arguments}
            )
            task_id = created["result"]["taskId"]
            await task_until(on_a, second, task_id, "working")
            refused = await modern_rpc(on_b, second, "tasks/get", {"taskId": task_id})
            assert "error" in refused, refused
            gate.write_text("open")
            await task_until(on_a, second, task_id, "completed")
        await w.finish()


def stalled_listen(url: str, token: str, uri: str) -> socket.socket:
    """A raw 2026-07-28 `subscriptions/listen` POST on a socket with a tiny receive buffer, read
    up to its acknowledgement and then never again: the client that stops reading."""
    host, port = url.split("/")[2].split(":")
    body = orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": "stalled",
            "method": "subscriptions/listen",
            "params": {
                "notifications": {"resourceSubscriptions": [uri]},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
    )
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        f"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(15)
    try:
        sock.connect((host, int(port)))
        sock.sendall(head.encode() + body)
        got = b""
        while b"acknowledged" not in got:
            chunk = sock.recv(4096)
            assert chunk, got
            got += chunk
        assert got.startswith(b"HTTP/1.1 200"), got
    except BaseException:
        sock.close()
        raise
    return sock


async def test_cluster_a_listen_stream_nobody_reads(cluster: Cluster) -> None:
    """Alice opens a listen stream on a host and stops reading it while a few MB of updates are
    sent to it: both principals are still served by every worker of both hosts, and Bob's own
    listen stream hears his update."""
    async with world(cluster, "modern") as w:
        a, b = w.a, w.b
        assert b is not None
        uri = flush_uri(a, "stalled") + "-" + "x" * 4000  # 1,000 updates of 4 kB each
        token = cluster.auth.token(SUBJECTS[0])
        stalled = await anyio.to_thread.run_sync(stalled_listen, cluster.hosts[0].url, token, uri)
        try:
            assert await a.text("touch_many", {"uri": uri, "times": 1000}) == "touched 1000"
            seen: set[tuple[int, int]] = set()
            with anyio.fail_after(60):
                while len({host for host, _ in seen}) < 4:
                    seen |= await many(b, 8)
                    seen |= await many(a, 8)
            uri_b = flush_uri(b, "stalled")
            async with listen(b.session, resource_subscriptions=[uri_b]):
                await b.text("touch", {"uri": uri_b})
                await heard(b, uri_b)
            await w.finish()
        finally:
            stalled.close()


UNREAD = 4  # Alice's listen streams that nobody reads
# Updates sent to them: BATCHES calls of FLOOD (fewer than a host's bus outbox keeps, 10,000), of
# a 1 kB URI. Each stream is cut off after 4 MiB (plus what the sockets hold); the code before the
# bound kept them all, 8 KiB of memory each (orjson's buffer): about 145 MiB per stream.
FLOOD = 8_000
BATCHES = 3
GROWTH_MIB = 60  # what a host process may take meanwhile (4 MiB per unread stream, and more)
CUT_OFF = "a subscriptions/listen stream was cut off"  # a host's stderr, once per stream


def host_processes(cluster: Cluster) -> list[int]:
    """The pids of every host process: each host's parent and its workers (the parent's children
    that say which worker they are; tool processes are the workers' children)."""
    parents = [host.proc.pid for host in cluster.hosts if host.proc.poll() is None]
    workers = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if parent not in parents:
                continue
            environ = (entry / "environ").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError):
            continue  # (gone meanwhile)
        if any(v.startswith(b"PROTOMCP_WORKER=") for v in environ):
            workers.append(int(entry.name))
    assert len(workers) == 2 * len(parents), (parents, workers)
    return parents + workers


def _status_mib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} for pid {pid}")


def reset_peaks(pids: list[int]) -> dict[int, float]:
    """Each process's RSS now (MiB), its peak (VmHWM) started again from it (proc(5): clear_refs)."""
    for pid in pids:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    return {pid: _status_mib(pid, "VmRSS") for pid in pids}


def growth(before: dict[int, float]) -> dict[int, float]:
    """How far above `before` each process's RSS has been since (MiB)."""
    return {pid: round(_status_mib(pid, "VmHWM") - rss, 1) for pid, rss in before.items()}


def listen_request(id_: str, uri: str) -> bytes:
    params = {
        "notifications": {"resourceSubscriptions": [uri]},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }
    return orjson.dumps({"jsonrpc": "2.0", "id": id_, "method": "subscriptions/listen", "params": params})


LISTEN_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "subscriptions/listen",
}


def unread_listen(
    url: str, token: str, id_: str, uri: str
) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    """A listen stream read up to its acknowledgement, on a socket with a tiny receive buffer,
    by http.client (which reads only what it is asked for): a client that reads no more."""
    parts = urlsplit(url)
    address = (parts.hostname or "", parts.port or 80)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: a small window
    sock.settimeout(60)
    connection = http.client.HTTPConnection(*address)
    try:
        sock.connect(address)
        connection.sock = sock
        headers = {**LISTEN_HEADERS, "Authorization": f"Bearer {token}"}
        connection.request("POST", parts.path, body=listen_request(id_, uri), headers=headers)
        stream = connection.getresponse()
        assert stream.status == 200, (stream.status, stream.read())
        while b"acknowledged" not in stream.readline():
            pass
    except BaseException:
        connection.close()
        sock.close()
        raise
    return connection, stream


def read_to_end(stream: http.client.HTTPResponse) -> list[dict[str, Any]]:
    """The JSON-RPC messages of the rest of a stream, once it ends (keep-alive comments keep the
    socket's timeout from firing: the caller bounds the wait)."""
    data = bytearray()
    while chunk := stream.read1(1 << 16):
        data += chunk
    return [orjson.loads(event["data"]) for event in sse_events(data.decode()) if event.get("data")]


async def hears_again(peer: Peer, uri: str, timeout: float) -> None:
    """`touch` of `uri`, until the peer's listen stream heard one update of it more."""

    def updates() -> int:
        return sum(1 for m in peer.received if m.get("params", {}).get("uri") == uri)

    already = updates()
    await peer.text("touch", {"uri": uri})
    await peer.wait_for(lambda _: updates() > already, f"one more resources/updated of {uri}", timeout)


async def test_cluster_unread_listen_streams_stay_bounded(cluster: Cluster) -> None:
    """Through nginx Alice opens UNREAD listen streams and reads none of them while a tool sends
    them BATCHES x FLOOD updates: no host process (parent or worker, of either host) grows by
    GROWTH_MIB; Bob meanwhile is served by every worker and his own listen stream hears each of
    his updates, and nothing of Alice's; Alice's streams, read once their hosts said they cut
    them off, end with the error that says she read too slowly. (Read before that, a stream would
    be drained and go on; read more than the hosts' send timeout, 30 s, after its writer blocked,
    its host would have closed it without a word: so she reads while the flood goes on.)"""
    async with world(cluster, "modern") as w:
        a, b = w.a, w.b
        assert b is not None
        uri_a, uri_b = flush_uri(a, "unread") + "-" + "x" * 1000, flush_uri(b, "unread")
        token = cluster.auth.token(SUBJECTS[0])
        cut_offs = cluster.stderr().count(CUT_OFF)
        streams = []
        ends: dict[int, list[dict[str, Any]]] = {}
        try:
            for n in range(UNREAD):
                opened = await anyio.to_thread.run_sync(
                    unread_listen, cluster.url, token, f"unread-{n}", uri_a
                )
                streams.append(opened)
            before = reset_peaks(host_processes(cluster))
            flooded = anyio.Event()

            async def flood() -> None:
                # from a stateful session, which one worker serves: its outbox has sent a batch to
                # the bus once the session hears an update sent after it (the next fits in)
                async with http_peer("A", cluster.url, token) as pinned:
                    sent = flush_uri(pinned, "unread-sent")
                    await pinned.session.subscribe_resource(sent)
                    for _ in range(BATCHES):
                        touched = await pinned.text("touch_many", {"uri": uri_a, "times": FLOOD})
                        assert touched == f"touched {FLOOD}"
                        await hears_again(pinned, sent, timeout=60)
                flooded.set()

            async def read(n: int, stream: http.client.HTTPResponse) -> None:
                ends[n] = await anyio.to_thread.run_sync(read_to_end, stream, abandon_on_cancel=True)

            async def read_once_cut_off() -> None:
                with anyio.move_on_after(60):
                    while cluster.stderr().count(CUT_OFF) < cut_offs + UNREAD:
                        await anyio.sleep(0.05)
                cut = cluster.stderr().count(CUT_OFF) - cut_offs
                assert cut >= UNREAD, f"{cut} of Alice's {UNREAD} streams were cut off"
                with anyio.fail_after(60):
                    async with anyio.create_task_group() as readers:
                        for n, (_, stream) in enumerate(streams):
                            readers.start_soon(read, n, stream)

            try:
                seen: set[tuple[int, int]] = set()
                async with listen(b.session, resource_subscriptions=[uri_b]), anyio.create_task_group() as tg:
                    tg.start_soon(flood)
                    tg.start_soon(read_once_cut_off)
                    # until the flood was sent and then Bob's worker had it all (his update after it)
                    while not flooded.is_set() or len({host for host, _ in seen}) < 4:
                        seen |= await many(b, 4)
                        await hears_again(b, uri_b, timeout=60)
            finally:  # (asserted whatever else failed: Bob goes unserved when it fails)
                grown = growth(before)
                assert max(grown.values()) < GROWTH_MIB, f"MiB grown per host process: {grown}"
        finally:
            for connection, _ in streams:
                connection.close()
        assert len(ends) == UNREAD, ends.keys()
        for n, messages in sorted(ends.items()):
            *notes, last = messages
            assert notes and all(m["params"]["uri"] == uri_a for m in notes), messages[:3]
            assert last.get("id") == f"unread-{n}" and last["error"]["code"] == -32000, last
            assert "read too slowly" in last["error"]["message"], last
        assert not seen_anywhere(b, "read too slowly"), b.dump()
        await w.finish()


MOST_LISTENS = 16  # one client's listen streams per host process (HttpOptions.max_listens)


async def test_cluster_listen_streams_are_bounded_per_host_process(cluster: Cluster) -> None:
    """The bound on one client's listen streams is per host process: through nginx, which spreads
    Alice's streams over both hosts' workers, she opens at least MOST_LISTENS and at most
    MOST_LISTENS per host process before one is refused (429, a JSON-RPC error that says why);
    meanwhile Bob listens, and hears his update."""
    import httpx2

    processes = len(host_processes(cluster)) - len(cluster.hosts)  # (the parents serve no request)
    headers = {**LISTEN_HEADERS, "Authorization": f"Bearer {cluster.auth.token(SUBJECTS[0])}"}
    async with (
        world(cluster, "modern") as w,
        AsyncExitStack() as streams,
        httpx2.AsyncClient(headers=headers, timeout=30, limits=httpx2.Limits(max_connections=None)) as alice,
    ):
        b = w.b
        assert b is not None
        uri_a, uri_b = flush_uri(w.a, "many"), flush_uri(b, "many")
        opened = 0
        with anyio.fail_after(120):
            while True:
                body = listen_request(f"many-{opened}", uri_a)
                stream = await streams.enter_async_context(alice.stream("POST", cluster.url, content=body))
                if stream.status_code != 200:
                    break
                opened += 1
                assert opened <= MOST_LISTENS * processes, "no host process refused Alice's streams"
            assert stream.status_code == 429, (stream.status_code, await stream.aread())
            refused = orjson.loads(await stream.aread())
            assert refused["id"] == f"many-{opened}" and refused["error"]["code"] == -32000, refused
            assert f"{MOST_LISTENS} listen streams open" in refused["error"]["message"], refused
            assert opened >= MOST_LISTENS, opened
            async with listen(b.session, resource_subscriptions=[uri_b]):
                await hears_again(b, uri_b, timeout=WAIT)
        await w.finish()


# -- last: it leaves the cluster one host short ---------------------------------------------------
async def test_cluster_a_host_killed(cluster: Cluster, tmp_path: Path) -> None:
    """kill -9 of a whole host (its parent, workers and tool processes) while four of Alice's calls
    run on both hosts: the victim's calls get one error answer each (nginx's 502), the
    survivor's finish; nginx sends the next requests to the survivor and both principals are
    served."""
    from mcp.shared.exceptions import MCPError

    victim = cluster.hosts[0]
    async with world(cluster, "modern") as w:
        a = w.a
        gate = tmp_path / "gate"
        started = [anyio.Event() for _ in range(4)]
        answers: list[str] = []
        failures: list[str] = []

        async def slow(event: anyio.Event) -> None:
            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                event.set()

            try:
                result = await a.call(
                    "wait_file", {"tag": a.tag("host-kill"), "path": str(gate)}, progress_callback=on_progress
                )
            except MCPError as exc:
                failures.append(str(exc))
            else:
                answers.append(text_of(result))

        async with anyio.create_task_group() as tg:
            for event in started:
                tg.start_soon(slow, event)
            with anyio.fail_after(30):
                for event in started:
                    await event.wait()
            os.killpg(victim.proc.pid, signal.SIGKILL)
            victim.proc.wait()
            with anyio.fail_after(30):
                while len(failures) < 1:
                    await anyio.sleep(0.02)
            gate.write_text("open")
        assert len(answers) + len(failures) == 4 and answers and failures, (answers, failures)
        assert all(text.endswith("finished in version 1") for text in answers), answers

        async def after(peer: Peer) -> None:
            for _ in range(4):
                await peer.text("echo", {"text": peer.tag("after-host-kill")})

        await w.each(after)
        await w.finish()
