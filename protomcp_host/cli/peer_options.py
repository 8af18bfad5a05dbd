"""The options of peer hosts (--agent-id and the rest of the MCP-to-MCP bridge), and the
PeerSettings they make."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import click

from protomcp_host.cli.options import option_group
from protomcp_host.peers.settings import AGENT_ID as AGENT_ID_PATTERN
from protomcp_host.peers.settings import PeerSettings

AGENT_ID = click.option(
    "--agent-id",
    metavar="ID",
    help="Link this host to peer hosts (the MCP-to-MCP bridge protocol) as agent ID: serve the "
    "bridge at /bridge beside the MCP endpoint (with --transport http; same host checks, and "
    "peers need --bridge-token-env when the MCP endpoint has authentication), add the tools "
    "bridge_notify and bridge_peers, and serve each connected peer's tools as PEERID_<name>.",
)

AGENT_NAME = click.option("--agent-name", metavar="TEXT", help="The agent_name this host tells peers.")

AGENT_ROLE = click.option("--agent-role", metavar="TEXT", help="The agent_role this host tells peers.")

PEER = click.option(
    "--peer",
    "peers",
    multiple=True,
    metavar="[ID=]ws://HOST:PORT/bridge",
    help="Connect to another host's bridge (needs --agent-id); connected again with backoff when "
    "the link drops. Repeatable. Its agent id (ID=, or the one it answers with at the first "
    "handshake) is reserved for it: no peer dialling in may claim it; with ID= it is reserved "
    "from the start and the host dialled must say it is ID.",
)

PEER_TOKEN_ENV = click.option(
    "--peer-token-env",
    metavar="VAR",
    help="Send 'Authorization: Bearer <token>' to the --peer hosts, the token being the value of "
    "the environment variable VAR (kept out of tool processes).",
)

BRIDGE_TOKEN_ENV = click.option(
    "--bridge-token-env",
    "bridge_token_envs",
    multiple=True,
    metavar="[ID,...=]VAR",
    help="[http] Peers dialling /bridge must send 'Authorization: Bearer <token>', the token being "
    "the value of VAR (kept out of tool processes); repeatable, one per peer or group of peers. "
    "ID,...= limits the agent ids a peer with that token may claim. An agent id stays bound to "
    "the token that registered it while its link is open and --bridge-rebind-grace after. An "
    "MCP client's token (--auth-token-env, OAuth) never opens /bridge: with either and no "
    "--bridge-token-env, no peer may dial in.",
)

BRIDGE_REBIND_GRACE = click.option(
    "--bridge-rebind-grace",
    default=PeerSettings.rebind_grace,
    show_default=True,
    type=click.FloatRange(min=0),
    metavar="S",
    help="[http] Seconds a peer that dialled in keeps its agent id after its link closed (only its "
    "token may take it meanwhile, so it can reconnect); then the id is free.",
)

BRIDGE_MAX_IN_FLIGHT = click.option(
    "--bridge-max-in-flight",
    default=PeerSettings.max_in_flight,
    show_default=True,
    type=click.IntRange(min=1),
    help="Peer requests this host runs at once; the rest wait, urgent before high before normal "
    "before low, in order of arrival within one priority.",
)

# In the order --help lists them
PEER_OPTIONS = option_group(
    BRIDGE_MAX_IN_FLIGHT,
    BRIDGE_REBIND_GRACE,
    BRIDGE_TOKEN_ENV,
    PEER_TOKEN_ENV,
    PEER,
    AGENT_ROLE,
    AGENT_NAME,
    AGENT_ID,
)


def peer_settings(given: Mapping[str, Any]) -> PeerSettings | None:
    """The peer options as PeerSettings, or None without --agent-id."""
    agent_id: str | None = given["agent_id"]
    if not agent_id:
        used = [
            f"--{key.replace('_', '-')}"
            for key in ("agent_name", "agent_role", "peer_token_env")
            if given[key]
        ]
        if given["peers"]:
            used.insert(0, "--peer")
        if given["bridge_token_envs"]:
            used.append("--bridge-token-env")
        if used:
            raise click.UsageError(f"{', '.join(used)}: only with --agent-id (this host's name to its peers)")
        return None
    if not AGENT_ID_PATTERN.match(agent_id):
        raise click.UsageError(
            "--agent-id: a letter, then letters, digits, _ or - (peers name its tools ID_<name>)"
        )
    urls: list[str] = []
    peer_ids: dict[str, str] = {}
    for given_peer in given["peers"]:
        url, peer_id = _peer(given_peer)
        if peer_id:
            if peer_id == agent_id or peer_id in peer_ids.values():
                raise click.UsageError(f"--peer {given_peer}: the agent id {peer_id} is taken already")
            peer_ids[url] = peer_id
        urls.append(url)
    token_env: str = given["peer_token_env"] or ""
    token = _secret("--peer-token-env", token_env) if token_env else ""
    credentials: dict[str, str] = {}
    claims: dict[str, frozenset[str]] = {}
    for given_token in given["bridge_token_envs"]:
        ids, name = _claims(given_token)
        if name in credentials:
            raise click.UsageError(f"--bridge-token-env {given_token}: {name} is given twice")
        credentials[name] = _secret("--bridge-token-env", name)
        if ids:
            claims[name] = ids
    client_token = os.environ.get(given["auth_token_env"] or "", "")
    if client_token and client_token in credentials.values():
        raise click.UsageError(
            "--bridge-token-env holds the same token as --auth-token-env: an MCP client's token "
            "never makes a peer; give peers a token of their own"
        )
    return PeerSettings(
        agent_id=agent_id,
        agent_name=given["agent_name"] or "",
        agent_role=given["agent_role"] or "",
        peers=tuple(urls),
        peer_ids=peer_ids,
        token=token,
        token_env=token_env,
        credentials=credentials,
        claims=claims,
        rebind_grace=given["bridge_rebind_grace"],
        max_in_flight=given["bridge_max_in_flight"],
    )


def _peer(given: str) -> tuple[str, str]:
    """`--peer [ID=]ws://HOST:PORT/bridge` as (URL, ID or "")."""
    peer_id, sep, url = given.partition("=")
    if not sep or "://" in peer_id:
        peer_id, url = "", given
    if not url.startswith(("ws://", "wss://")):
        raise click.UsageError(f"--peer {given}: give the peer's bridge as ws://HOST:PORT/bridge (or wss://)")
    if peer_id and not AGENT_ID_PATTERN.match(peer_id):
        raise click.UsageError(f"--peer {given}: ID is an agent id (a letter, then letters, digits, _ or -)")
    return url, peer_id


def _claims(given: str) -> tuple[frozenset[str], str]:
    """`--bridge-token-env [ID,...=]VAR` as (the ids it may claim, empty: any; VAR)."""
    ids, sep, name = given.rpartition("=")
    claimed = frozenset(part.strip() for part in ids.split(",")) if sep else frozenset()
    bad = sorted(part for part in claimed if not AGENT_ID_PATTERN.match(part))
    if sep and (bad or not claimed):
        raise click.UsageError(
            f"--bridge-token-env {given}: before = come agent ids (a letter, then letters, digits, "
            f"_ or -), separated by commas{': not ' + ', '.join(map(repr, bad)) if bad else ''}"
        )
    return claimed, name


def _secret(flag: str, name: str) -> str:
    """The value of the environment variable `name` (RunSettings.hidden_env keeps it out of the
    processes the host starts)."""
    value = os.environ.get(name, "")
    if not value:
        raise click.UsageError(f"{flag}: the environment variable {name} is not set")
    return value
