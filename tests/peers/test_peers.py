"""Three protomcp hosts bridged on loopback (the bridge protocol over WebSocket at /bridge): B and C serve
HTTP with /bridge; A dials both (`--peer`) and is driven by the official SDK client over stdio."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from protomcp_host.peers.messages import PROTOCOL_VERSION
from tests.support.hosts import BEHAVIOURS, HOST, TOOLS, mcp_session
from tests.support.http import HttpHost
from tests.support.ports import free_port

pytest.importorskip("mcp")
pytest.importorskip("websockets")

REMOTE = TOOLS / "upstream_tools.py"
LOCAL = TOOLS / "upstream_policy.py"


def start_host(port: int, *args: str, env: dict[str, str] | None = None) -> HttpHost:
    """`protomcp run ARGS --transport http --port PORT` (a fixed port: a restarted host is found again)."""
    host = HttpHost.__new__(HttpHost)
    host.proc = subprocess.Popen(
        [*HOST, "run", *args, "--transport", "http", "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )
    host.stderr = []
    host._lines = threading.Condition()
    threading.Thread(target=host._read_stderr, daemon=True).start()
    host.wait_stderr(lambda line: "http://" in line)
    host.url = f"http://127.0.0.1:{port}/mcp"
    return host


def bridge_url(port: int) -> str:
    return f"ws://127.0.0.1:{port}/bridge"


@pytest.fixture
def hosts() -> Iterator[list[HttpHost]]:
    started: list[HttpHost] = []
    yield started
    for host in started:
        host.terminate()


class Watcher:
    """Collects what the A host tells its client: tools/list_changed, bridge log messages."""

    def __init__(self) -> None:
        self.list_changed = 0
        self.events: list[dict[str, Any]] = []
        self.changed = anyio.Event()

    async def message(self, message: Any) -> None:
        from mcp import types

        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            self.list_changed += 1
            self.changed.set()

    async def log(self, params: Any) -> None:
        if params.logger == "bridge":
            self.events.append(params.data)


async def tool_names(session: Any) -> set[str]:
    return {tool.name for tool in (await session.list_tools()).tools}


async def wait_tools(session: Any, wanted: set[str], present: bool = True, timeout: float = 30) -> set[str]:
    """Wait (bounded) until the tools are listed (or gone)."""
    with anyio.fail_after(timeout):
        while True:
            names = await tool_names(session)
            if (wanted <= names) if present else not (wanted & names):
                return names
            await anyio.sleep(0.05)


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content]


async def test_three_hosts_handshake_calls_notifications_peer_loss_and_reconnect(
    hosts: list[HttpHost], tmp_path: Path
) -> None:
    port_b, port_c = free_port(), free_port()
    b = start_host(port_b, str(BEHAVIOURS), "--agent-id", "b", "--agent-role", "worker")
    c = start_host(port_c, str(REMOTE), "--agent-id", "c")
    hosts += [b, c]
    watcher = Watcher()
    async with mcp_session(
        "run",
        str(LOCAL),
        "--agent-id",
        "a",
        "--peer",
        bridge_url(port_b),
        "--peer",
        bridge_url(port_c),
        message_handler=watcher.message,
        logging_callback=watcher.log,
    ) as session:
        names = await wait_tools(session, {"b_add", "b_wait_async", "c_multiply"})
        assert {"local_hello", "bridge_notify", "bridge_peers"} <= names
        assert not {
            n for n in names if n.startswith(("b_c_", "c_b_", "b_bridge", "c_bridge"))
        }  # no re-export

        # capabilities exchanged at the handshake
        peers = orjson.loads(texts(await session.call_tool("bridge_peers", {}))[0])
        by_id = {peer["agent_id"]: peer for peer in peers["peers"]}
        assert peers["agent_id"] == "a" and set(by_id) == {"b", "c"}
        assert by_id["b"]["agent_role"] == "worker" and "add" in by_id["b"]["tools"]
        assert by_id["b"]["version"] == PROTOCOL_VERSION  # the bridge protocol's, not protomcp's
        b.wait_stderr(lambda line: "peer a connected" in line)

        # calls A -> B and A -> C
        result = await session.call_tool("b_add", {"a": 2, "b": 3})
        assert texts(result) == ["5"] and result.structured_content == {"result": 5}
        assert texts(await session.call_tool("c_multiply", {"a": 6, "b": 7})) == ["42"]
        failed = await session.call_tool("b_fail", {"message": "boom"})
        assert failed.is_error and "boom" in texts(failed)[0]

        # a broadcast notification, then a targeted one
        sent = await session.call_tool("bridge_notify", {"event_type": "status", "data": {"busy": True}})
        assert sorted(orjson.loads(texts(sent)[0])["sent_to"]) == ["b", "c"]
        for host in (b, c):
            host.wait_stderr(lambda line: '"event_type":"status"' in line and '"sender_id":"a"' in line)
        sent = await session.call_tool(
            "bridge_notify", {"event_type": "only_c", "data": {}, "receiver_id": "c", "priority": "high"}
        )
        assert orjson.loads(texts(sent)[0])["sent_to"] == ["c"]
        c.wait_stderr(lambda line: '"event_type":"only_c"' in line and '"receiver_id":"c"' in line)
        await session.call_tool("bridge_notify", {"event_type": "marker", "data": {}, "receiver_id": "b"})
        b.wait_stderr(lambda line: '"event_type":"marker"' in line)
        assert not any("only_c" in line for line in b.stderr)
        unknown = await session.call_tool("bridge_notify", {"event_type": "x", "receiver_id": "nobody"})
        assert unknown.is_error and "no peer 'nobody'" in texts(unknown)[0]

        # C is killed in the middle of a call: the call fails with the bridge protocol's code, C's tools leave
        watcher.changed = anyio.Event()
        mark = tmp_path / "hold"
        outcome: list[Any] = []
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                outcome.append(await session.call_tool("c_hold", {"path": str(mark)}))

            tg.start_soon(call)
            with anyio.fail_after(20):
                while not (tmp_path / "hold.started").exists():
                    await anyio.sleep(0.02)
            os.killpg(c.proc.pid, signal.SIGKILL)
        assert outcome[0].is_error
        assert "INTERNAL_ERROR" in texts(outcome[0])[0] and "peer c" in texts(outcome[0])[0]
        with anyio.fail_after(20):
            await watcher.changed.wait()
        names = await wait_tools(session, {"c_multiply"}, present=False)
        assert "b_add" in names
        assert texts(await session.call_tool("b_add", {"a": 1, "b": 1})) == ["2"]  # B is unaffected
        gone = await session.call_tool("bridge_peers", {})
        assert [peer["agent_id"] for peer in orjson.loads(texts(gone)[0])["peers"]] == ["b"]

        # C comes back on the same port: A connects again, C's tools return
        hosts.remove(c)
        c.proc.wait()
        c = start_host(port_c, str(REMOTE), "--agent-id", "c")
        hosts.append(c)
        await wait_tools(session, {"c_multiply"})
        assert texts(await session.call_tool("c_multiply", {"a": 2, "b": 21})) == ["42"]
        assert watcher.list_changed >= 2


# -- the wire, seen by another agent (a raw WebSocket client) -------------------------------------


class RawAgent:
    """Another peer host, speaking the bridge protocol's JSON over a WebSocket by hand."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws

    async def send(self, message: Any) -> None:
        await self.ws.send(message if isinstance(message, str) else message.to_json())

    async def receive(self, timeout: float = 20) -> dict[str, Any]:
        with anyio.fail_after(timeout):
            return orjson.loads(await self.ws.recv())

    async def handshake(self, agent_id: str) -> dict[str, Any]:
        from protomcp_host.peers.messages import AgentCapabilities, MCPBridgeProtocol

        hello = MCPBridgeProtocol.create_handshake_request(agent_id, AgentCapabilities(agent_id=agent_id))
        await self.send(hello)
        reply = await self.receive()
        assert reply["message_type"] == "handshake_response" and reply["correlation_id"] == hello.message_id
        return reply

    async def request(
        self, tool: str, arguments: dict[str, Any], priority: str = "normal", **more: Any
    ) -> str:
        from protomcp_host.peers.messages import MCPBridgeProtocol, MessagePriority, ToolRequest

        message = MCPBridgeProtocol.create_request(
            "x", "b", ToolRequest(tool_name=tool, arguments=arguments, **more), MessagePriority(priority)
        )
        await self.send(message)
        return message.message_id


def raw_agent(port: int, token: str = "") -> Any:
    from websockets.asyncio.client import connect

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return connect(bridge_url(port), additional_headers=headers, open_timeout=10)


async def test_a_peer_notification_never_reaches_the_http_sessions(hosts: list[HttpHost]) -> None:
    """An event is addressed to the host, not to any user: over HTTP it goes to stderr only."""
    from protomcp_host.peers.messages import MCPBridgeProtocol
    from tests.support.http import http_session

    port = free_port()
    b = start_host(port, str(BEHAVIOURS), "--agent-id", "b")
    hosts.append(b)
    logged: list[Any] = []

    async def log(params: Any) -> None:
        logged.append(params)

    async with http_session(b.url, logging_callback=log) as mcp, raw_agent(port) as ws:
        agent = RawAgent(ws)
        await agent.handshake("x")
        await agent.send(MCPBridgeProtocol.create_notification("x", "secret", {"for": "the host"}))
        b.wait_stderr(lambda line: '"event_type":"secret"' in line)
        await agent.request("echo", {"text": "after"})  # the event is handled before this request
        assert (await agent.receive())["payload"]["success"] is True
        await mcp.send_ping()
        assert texts(await mcp.call_tool("echo", {"text": "still here"})) == ["still here"]
    assert not [params for params in logged if params.logger == "bridge"]


async def test_priorities_order_queued_requests_at_the_in_flight_limit(hosts: list[HttpHost]) -> None:
    from tests.support.http import http_session

    port = free_port()
    b = start_host(port, str(BEHAVIOURS), "--agent-id", "b", "--bridge-max-in-flight", "1")
    hosts.append(b)
    async with raw_agent(port) as ws:
        agent = RawAgent(ws)
        reply = await agent.handshake("x")
        assert reply["payload"]["accepted"] is True and reply["payload"]["agent_id"] == "b"
        assert "echo" in reply["payload"]["tools"]
        assert any(t["name"] == "echo" for t in reply["payload"]["metadata"]["mcp_tools"])
        blocker = await agent.request("wait_async", {"key": "gate"})  # takes the one slot
        labels = {}
        for priority, label in [
            ("low", "low1"),
            ("normal", "n1"),
            ("urgent", "u1"),
            ("high", "h1"),
            ("normal", "n2"),
            ("urgent", "u2"),
            ("low", "low2"),
        ]:
            labels[await agent.request("echo", {"text": label}, priority)] = label
        async with http_session(b.url) as mcp:  # the MCP side is not behind the bridge's gate
            await mcp.call_tool("release", {"key": "gate"})
        order = []
        for _ in range(8):
            message = await agent.receive()
            assert message["message_type"] == "response", message
            assert message["payload"]["success"] is True
            assert message["payload"]["execution_time"] >= 0
            if message["correlation_id"] == blocker:
                continue
            order.append(labels[message["correlation_id"]])
        assert order == ["u1", "u2", "h1", "n1", "n2", "low1", "low2"]


async def test_bad_requests_get_the_bridge_protocols_error_codes(hosts: list[HttpHost]) -> None:
    port = free_port()
    hosts.append(start_host(port, str(BEHAVIOURS), "--agent-id", "b"))
    async with raw_agent(port) as ws:  # no handshake first
        agent = RawAgent(ws)
        await agent.request("echo", {"text": "hi"})
        refused = await agent.receive()
        assert refused["message_type"] == "error" and refused["payload"]["error_code"] == "UNAUTHORIZED"
    async with raw_agent(port) as ws:
        agent = RawAgent(ws)
        await agent.handshake("x")
        await agent.send("{not json")
        error = await agent.receive()
        assert (
            error["payload"]["error_code"] == "INTERNAL_ERROR"
            and error["payload"]["error_type"] == "invalid_message"
        )
        await agent.send(orjson.dumps({"message_type": "shout", "sender_id": "x", "payload": {}}).decode())
        error = await agent.receive()
        assert "message_type must be one of" in error["payload"]["error_message"]
        missing = await agent.request("nope", {})
        error = await agent.receive()
        assert error["payload"]["error_code"] == "TOOL_NOT_FOUND" and error["correlation_id"] == missing
        assert "echo" in error["payload"]["details"]["available_tools"]
        await agent.request("add", {"a": "one", "b": 2})
        assert (await agent.receive())["payload"]["error_code"] == "INVALID_ARGUMENTS"
        slow = await agent.request("wait_async", {"key": "never"}, timeout=0.3)
        error = await agent.receive()
        assert error["payload"]["error_code"] == "TIMEOUT" and error["correlation_id"] == slow
        failed = await agent.request("fail", {"message": "boom"})
        response = await agent.receive()
        assert response["correlation_id"] == failed and response["payload"]["success"] is False
        assert "boom" in response["payload"]["error"]
    async with raw_agent(port) as ws:  # an agent id that cannot name tools
        agent = RawAgent(ws)
        from protomcp_host.peers.messages import AgentCapabilities, MCPBridgeProtocol

        await agent.send(
            MCPBridgeProtocol.create_handshake_request("bad id", AgentCapabilities(agent_id="bad id"))
        )
        reply = await agent.receive()
        assert reply["payload"]["accepted"] is False and "agent_id" in reply["payload"]["metadata"]["reason"]


async def refused_at_bridge(port: int, token: str = "") -> tuple[int, str]:
    """The HTTP status and text with which /bridge refuses a dialler."""
    from websockets.exceptions import InvalidStatus

    with pytest.raises(InvalidStatus) as refused:
        async with raw_agent(port, token):
            pass
    response = refused.value.response
    return response.status_code, response.body.decode()


async def test_the_bridge_takes_the_peers_own_token_never_a_clients(hosts: list[HttpHost]) -> None:
    port = free_port()
    hosts.append(
        start_host(
            port,
            str(BEHAVIOURS),
            "--agent-id",
            "b",
            "--auth-token-env",
            "B_TOKEN",
            "--bridge-token-env",
            "B_PEERS",
            env={"B_TOKEN": "s3cret", "B_PEERS": "peers-only"},
        )
    )
    assert await refused_at_bridge(port) == (
        403,
        "Unauthorized: a peer sends its bridge token as 'Authorization: Bearer <token>'\n",
    )
    status, why = await refused_at_bridge(port, "s3cret")  # the MCP clients' token
    assert status == 403 and "an MCP client's token opens no link" in why
    async with raw_agent(port, "peers-only") as ws:
        assert (await RawAgent(ws).handshake("x"))["payload"]["accepted"] is True
    os.environ["PEER_TOKEN"] = "peers-only"
    try:
        async with mcp_session(
            "run", str(LOCAL), "--agent-id", "a", "--peer", bridge_url(port), "--peer-token-env", "PEER_TOKEN"
        ) as session:
            await wait_tools(session, {"b_add"})
            assert texts(await session.call_tool("b_add", {"a": 1, "b": 2})) == ["3"]
    finally:
        os.environ.pop("PEER_TOKEN", None)


async def test_under_oauth_no_users_token_makes_a_peer_and_an_agent_id_keeps_its_token(
    hosts: list[HttpHost], tmp_path: Path
) -> None:
    """Two users of an OAuth host: their access tokens open the MCP endpoint, never /bridge
    (without a bridge token the host takes no peers at all); an agent id is bound to the
    bridge token that first registered it, so another peer cannot take it over."""
    import time

    import jwt

    from tests.support.http import http_session
    from tests.transports.http.test_http_security import _keypair

    key, jwks = _keypair(tmp_path)
    issuer = "https://auth.example.com"
    now = int(time.time())
    oauth = ("--oauth-jwks", jwks, "--oauth-issuer", issuer)

    def token(port: int, user: str) -> str:
        claims = {"iss": issuer, "aud": f"http://127.0.0.1:{port}/mcp", "exp": now + 600, "sub": user}
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})

    closed = free_port()
    hosts.append(start_host(closed, str(BEHAVIOURS), "--agent-id", "b", *oauth))
    for user in ("alice", "bob"):
        status, why = await refused_at_bridge(closed, token(closed, user))
        assert status == 403 and "--bridge-token-env" in why
    port = free_port()
    hosts.append(
        start_host(
            port,
            str(BEHAVIOURS),
            "--agent-id",
            "b",
            *oauth,
            "--bridge-token-env",
            "TEAM_1",
            "--bridge-token-env",
            "TEAM_2",
            env={"TEAM_1": "team-one", "TEAM_2": "team-two"},
        )
    )
    for user in ("alice", "bob"):
        async with http_session(
            f"http://127.0.0.1:{port}/mcp", headers={"authorization": f"Bearer {token(port, user)}"}
        ) as session:
            assert texts(await session.call_tool("add", {"a": 1, "b": 1})) == ["2"]
        status, why = await refused_at_bridge(port, token(port, user))
        assert status == 403 and "an MCP client's token opens no link" in why
    async with raw_agent(port, "team-one") as ws:
        assert (await RawAgent(ws).handshake("x"))["payload"]["accepted"] is True
    async with raw_agent(port, "team-two") as ws:  # x went away; within the grace its id is its token's
        reply = await RawAgent(ws).handshake("x")
        assert reply["payload"]["accepted"] is False
        assert "is bound to another bridge token" in reply["payload"]["metadata"]["reason"]
    async with raw_agent(port, "team-two") as ws:
        assert (await RawAgent(ws).handshake("y"))["payload"]["accepted"] is True
    async with raw_agent(port, "team-one") as ws:
        assert (await RawAgent(ws).handshake("x"))["payload"]["accepted"] is True


def test_bridge_options_are_checked() -> None:
    from click.testing import CliRunner

    from protomcp_host.cli.main import main

    runner = CliRunner()
    same_token = ["--auth-token-env", "HOME", "--bridge-token-env", "HOME"]
    for args, message in (
        (["--peer", "ws://h:1/bridge"], "only with --agent-id"),
        (["--agent-id", "1a"], "--agent-id: a letter"),
        (["--agent-id", "a", "--peer", "http://h/bridge"], "ws://HOST:PORT/bridge"),
        (["--agent-id", "a", "--peer-token-env", "PROTOMCP_UNSET_VAR"], "is not set"),
        (["--bridge-token-env", "HOME"], "only with --agent-id"),
        (["--agent-id", "a", "--bridge-token-env", "PROTOMCP_UNSET_VAR"], "is not set"),
        (["--agent-id", "a", "--bridge-token-env", "HOME"], "only with --transport http"),
        (["--agent-id", "a", "--transport", "http", *same_token], "the same token as --auth-token-env"),
        (["--agent-id", "a", "--peer", "1d=ws://h:1/bridge"], "ID is an agent id"),
        (["--agent-id", "a", "--peer", "a=ws://h:1/bridge"], "the agent id a is taken already"),
        (["--agent-id", "a", "--bridge-token-env", "d,2=HOME"], "before = come agent ids"),
        (["--agent-id", "a", "--bridge-token-env", "=HOME"], "before = come agent ids"),
        (["--agent-id", "a", "--bridge-token-env", "HOME", "--bridge-token-env", "d=HOME"], "given twice"),
    ):
        result = runner.invoke(main, ["run", *args])
        assert result.exit_code == 2, result.output
        assert message in result.output


async def test_a_peer_tool_list_change_reaches_the_other_host(hosts: list[HttpHost], tmp_path: Path) -> None:
    """B reloads its tool file (dev): B tells A (`tools_changed`), A's client gets list_changed."""
    tools = tmp_path / "grows.py"
    tools.write_text("from protomcp_sdk import tool\n\n@tool\ndef first() -> str:\n    return 'one'\n")
    port = free_port()
    b = HttpHost.__new__(HttpHost)
    b.proc = subprocess.Popen(
        [*HOST, "dev", str(tools), "--agent-id", "b", "--transport", "http", "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    b.stderr, b._lines = [], threading.Condition()
    threading.Thread(target=b._read_stderr, daemon=True).start()
    hosts.append(b)
    b.wait_stderr(lambda line: "http://" in line)
    watcher = Watcher()
    async with mcp_session(
        "run", str(LOCAL), "--agent-id", "a", "--peer", bridge_url(port), message_handler=watcher.message
    ) as session:
        await wait_tools(session, {"b_first"})
        watcher.changed = anyio.Event()
        tools.write_text(
            "from protomcp_sdk import tool\n\n@tool\ndef first() -> str:\n    return 'one'\n\n"
            "@tool\ndef second() -> str:\n    return 'two'\n"
        )
        with anyio.fail_after(30):
            await watcher.changed.wait()
        await wait_tools(session, {"b_second"})
        assert texts(await session.call_tool("b_second", {})) == ["two"]


async def test_sigterm_lets_the_peers_calls_in_flight_finish(hosts: list[HttpHost], tmp_path: Path) -> None:
    """On SIGTERM a bridged host refuses peers' new requests but answers those in flight, running
    and queued past --bridge-max-in-flight, before it exits (their link stays open meanwhile)."""
    import httpx2

    from protomcp_host.peers.messages import MCPBridgeProtocol, MessagePriority, ToolRequest

    port = free_port()
    b = start_host(
        port,
        str(TOOLS / "tasks_tools.py"),
        "--agent-id",
        "b",
        "--bridge-max-in-flight",
        "4",
        "--drain-timeout",
        "60",
    )
    hosts.append(b)
    gate = tmp_path / "open"
    async with raw_agent(port) as ws, httpx2.AsyncClient(timeout=10) as http:
        agent = RawAgent(ws)
        assert (await agent.handshake("x"))["payload"]["accepted"] is True
        calls = {await agent.request("until_file", {"path": str(gate)}) for _ in range(6)}
        # Answered at once, in order: every call above has reached b (4 run, 2 wait).
        await agent.send(MCPBridgeProtocol.create_request("x", "elsewhere", ToolRequest(tool_name="plain")))
        assert (await agent.receive())["payload"]["error_type"] == "wrong_receiver"
        b.proc.send_signal(signal.SIGTERM)
        with anyio.fail_after(30):  # draining: the port refuses new connections (open links stay)
            while True:
                try:  # (a kept-alive connection is closed instead: also the drain)
                    await http.get(f"http://127.0.0.1:{port}/healthz", headers={"connection": "close"})
                except (httpx2.ConnectError, httpx2.ReadError, httpx2.RemoteProtocolError):
                    break
                await anyio.sleep(0.05)
        late = MCPBridgeProtocol.create_request(
            "x", "b", ToolRequest(tool_name="plain", arguments={"x": 1}), MessagePriority.NORMAL
        )
        await agent.send(late)
        refused = await agent.receive()
        assert refused["correlation_id"] == late.message_id
        assert refused["payload"]["error_type"] == "stopping"
        gate.write_text("")
        answers = [await agent.receive(timeout=30) for _ in calls]
    assert {answer["correlation_id"] for answer in answers} == calls
    assert all(answer["payload"]["success"] for answer in answers), answers
    assert b.proc.wait(30) == 0
