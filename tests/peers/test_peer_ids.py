"""Who may be which agent id on a bridge (issue 37, item 3), with real hosts on loopback.

A peer dialling in with any bridge token used to be able to handshake as `data` before the hub's
own `--peer` dial reached the real `data`: it got the clients' `data_lookup` arguments, and the
real peer was refused until the hub restarted. Now the ids of `--peer`s are theirs alone, a
token may be limited to ids, and an inbound peer's id is free again once its link has been
closed for --bridge-rebind-grace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.peers.test_peers import LOCAL, RawAgent, bridge_url, raw_agent, start_host, texts, wait_tools
from tests.support.hosts import BEHAVIOURS
from tests.support.http import HttpHost, http_session
from tests.support.ports import free_port

pytest.importorskip("mcp")
pytest.importorskip("websockets")

DATA_TOOLS = '''
from protomcp_sdk import tool


@tool
def lookup(key: str) -> str:
    """A record of the data host."""
    return f"record {key} from the real data host"
'''


@pytest.fixture
def hosts() -> Iterator[list[HttpHost]]:
    started: list[HttpHost] = []
    yield started
    for host in started:
        host.terminate()


@pytest.fixture
def data_tools(tmp_path: Path) -> Path:
    path = tmp_path / "data_tools.py"
    path.write_text(DATA_TOOLS)
    return path


async def reason_refused(port: int, token: str, agent_id: str) -> str:
    """The handshake of a peer dialling in as `agent_id`: why it was refused ("" if accepted)."""
    async with raw_agent(port, token) as ws:
        reply = await RawAgent(ws).handshake(agent_id)
    payload = reply["payload"]
    return "" if payload["accepted"] else str(payload["metadata"]["reason"])


async def test_an_inbound_peer_cannot_take_a_configured_peers_id(
    hosts: list[HttpHost], data_tools: Path
) -> None:
    port_hub, port_data = free_port(), free_port()
    hub = start_host(
        port_hub,
        str(LOCAL),
        "--agent-id",
        "hub",
        "--peer",
        f"data={bridge_url(port_data)}",  # not up yet: the hub dials it again with backoff
        "--bridge-token-env",
        "PEERS_TOKEN",
        env={"PEERS_TOKEN": "any-peer"},
    )
    hosts.append(hub)
    why = await reason_refused(port_hub, "any-peer", "data")
    assert "'data' is reserved for the configured peer" in why and bridge_url(port_data) in why
    hosts.append(start_host(port_data, str(data_tools), "--agent-id", "data"))
    async with http_session(hub.url) as client:
        await wait_tools(client, {"data_lookup"})
        result = await client.call_tool("data_lookup", {"key": "k1"})
        assert texts(result) == ["record k1 from the real data host"]


async def test_a_dialled_peer_cuts_off_an_inbound_one_holding_its_learned_id(
    hosts: list[HttpHost], data_tools: Path
) -> None:
    """`--peer URL` without ID=: the id is learned at the first handshake; a peer that dialled in
    under it before is cut off then, and the real peer serves."""
    port_hub, port_data = free_port(), free_port()
    hub = start_host(
        port_hub,
        str(LOCAL),
        "--agent-id",
        "hub",
        "--peer",
        bridge_url(port_data),
        "--bridge-token-env",
        "PEERS_TOKEN",
        env={"PEERS_TOKEN": "any-peer"},
    )
    hosts.append(hub)
    async with raw_agent(port_hub, "any-peer") as ws:
        impostor = RawAgent(ws)
        assert (await impostor.handshake("data"))["payload"]["accepted"] is True
        hosts.append(start_host(port_data, str(data_tools), "--agent-id", "data"))
        with anyio.fail_after(30):
            while True:  # until the hub closes the impostor's link (tools_changed may come first)
                try:
                    await ws.recv()
                except Exception:
                    break
    hub.wait_stderr(lambda line: "peer data dialled in under the id of --peer" in line)
    async with http_session(hub.url) as client:
        await wait_tools(client, {"data_lookup"})
        result = await client.call_tool("data_lookup", {"key": "k2"})
        assert texts(result) == ["record k2 from the real data host"]
    why = await reason_refused(port_hub, "any-peer", "data")
    assert "'data' is reserved for the configured peer" in why


async def test_a_token_limited_to_ids_cannot_claim_another(hosts: list[HttpHost]) -> None:
    port = free_port()
    hosts.append(
        start_host(
            port,
            str(BEHAVIOURS),
            "--agent-id",
            "b",
            "--bridge-token-env",
            "data,images=WORKERS_TOKEN",
            env={"WORKERS_TOKEN": "workers"},
        )
    )
    why = await reason_refused(port, "workers", "x")
    assert why == "bridge token WORKERS_TOKEN may claim only agent_id data, images, not 'x'"
    assert await reason_refused(port, "workers", "images") == ""


async def test_an_inbound_peers_id_is_free_again_after_the_grace(hosts: list[HttpHost]) -> None:
    port = free_port()
    host = start_host(
        port,
        str(BEHAVIOURS),
        "--agent-id",
        "b",
        "--bridge-token-env",
        "TEAM_1",
        "--bridge-token-env",
        "TEAM_2",
        "--bridge-rebind-grace",
        "3",
        env={"TEAM_1": "team-one", "TEAM_2": "team-two"},
    )
    hosts.append(host)
    assert await reason_refused(port, "team-one", "x") == ""
    host.wait_stderr(lambda line: "peer x went away" in line)
    why = await reason_refused(port, "team-two", "x")  # within the grace: still team one's
    assert "is bound to another bridge token" in why
    host.wait_stderr(lambda line: "agent_id x is free again" in line)
    assert await reason_refused(port, "team-two", "x") == ""
