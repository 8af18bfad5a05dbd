"""The options of `run` and `dev`, in reusable groups, and the RunSettings they make.

Each option's default is the RunSettings field's (the one copy of a run's defaults); the HTTP
options default to None, so that a stdio run can say which of them do not apply, and then to
HttpSettings' own. `RunCommand` and `DevCommand` hand their command's function the RunSettings
built from the options given, checked: a combination that cannot be served is a usage error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from protomcp_host.cli.oauth_options import OAUTH_SERVER_OPTIONS, oauth_server_settings
from protomcp_host.settings import DevSettings, RunSettings

if TYPE_CHECKING:
    from protomcp_host.peers.hub import BridgeSettings
    from protomcp_host.transports.http.guard import Authenticator
    from protomcp_host.transports.http.introspection import Introspector
    from protomcp_host.transports.http.server import HttpSettings
    from protomcp_host.upstream.spec import UpstreamSpec

Option = Callable[[Any], Any]  # a click parameter decorator


def option_group(*options: Option) -> Option:
    """Several click options as one decorator; --help lists them in the order given."""

    def apply(fn: Any) -> Any:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return apply


PYTHON = click.option(
    "--python",
    "python",
    default=RunSettings.python,
    show_default="this interpreter",
    help="Python interpreter that runs the tool files (protomcp_sdk must be importable there).",
)

PLUGIN = click.option(
    "--plugin",
    "plugins",
    multiple=True,
    metavar="NAME",
    help="Also serve an installed tool plugin (see `protomcp plugins`); repeatable.",
)

MODULE = click.option(
    "-m",
    "--module",
    "modules",
    multiple=True,
    metavar="MODULE",
    help="Also serve a tool module by import path, e.g. -m mypackage.tools; repeatable.",
)

UPSTREAM = click.option(
    "--upstream",
    "upstreams",
    multiple=True,
    metavar="NAME=CMD|URL",
    help="Also serve the tools, resources and prompts of another MCP server, its tools and prompts "
    "named NAME_<name>: a stdio server's command line (NAME='npx -y some-server --flag'), or a "
    "Streamable HTTP URL (NAME=https://host/mcp). Restarted (stdio) or reconnected (HTTP) when it "
    "goes away. Repeatable. Needs the mcp client library: pip install 'protomcp-tools[upstream]'.",
)

UPSTREAM_TOKEN_ENV = click.option(
    "--upstream-token-env",
    "upstream_token_envs",
    multiple=True,
    metavar="NAME=VAR",
    help="Send 'Authorization: Bearer <token>' to the HTTP upstream NAME, the token being the value "
    "of the environment variable VAR (which tool processes and stdio upstreams do not get).",
)

UPSTREAM_PREFIX = click.option(
    "--upstream-prefix",
    "upstream_prefixes",
    multiple=True,
    metavar="NAME=PREFIX",
    help="Name the upstream NAME's tools and prompts PREFIX<name> instead of NAME_<name> "
    "(NAME= serves them under their own names).",
)

AGENT_ID = click.option(
    "--agent-id",
    metavar="ID",
    help="Take part in a swarm of hosts (the MCP-to-MCP bridge protocol) as agent ID: serve the "
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
    default=30.0,
    show_default=True,
    type=click.FloatRange(min=0),
    metavar="S",
    help="[http] Seconds a peer that dialled in keeps its agent id after its link closed (only its "
    "token may take it meanwhile, so it can reconnect); then the id is free.",
)

BRIDGE_MAX_IN_FLIGHT = click.option(
    "--bridge-max-in-flight",
    default=16,
    show_default=True,
    type=click.IntRange(min=1),
    help="Peer requests this host runs at once; the rest wait, urgent before high before normal "
    "before low, in order of arrival within one priority.",
)

INSTRUCTIONS = click.option(
    "--instructions",
    metavar="TEXT",
    help="How to use these tools, sent to the client (default: the tool files' docstrings).",
)

SERVER_NAME = click.option(
    "--name", "server_name", metavar="NAME", help="Server name initialize reports (default: protomcp)."
)

PAGE_SIZE = click.option(
    "--page-size",
    default=RunSettings.page_size,
    show_default=True,
    type=click.IntRange(min=1),
    help="Tools per tools/list page; clients follow nextCursor for the rest.",
)

CALL_TIMEOUT = click.option(
    "--call-timeout",
    default=RunSettings.call_timeout,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds a tool call may run before it is cancelled and reported as an error (0 = no limit).",
)

STARTUP_TIMEOUT = click.option(
    "--startup-timeout",
    default=RunSettings.startup_timeout,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds a tool file may take to import and list its tools (clients get their tools "
    "when it is done; `initialize` is answered at once).",
)

HEARTBEAT_TIMEOUT = click.option(
    "--heartbeat-timeout",
    default=RunSettings.heartbeat_timeout,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds a tool process may leave a heartbeat unanswered (an async tool blocking its "
    "event loop) before its calls fail and it is replaced (0 = no heartbeat).",
)

DRAIN_TIMEOUT = click.option(
    "--drain-timeout",
    default=RunSettings.drain_timeout,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds running calls may take to finish when the client goes away or a signal "
    "arrives; calls still running then are answered with an error.",
)

MAX_IN_FLIGHT = click.option(
    "--max-in-flight",
    default=RunSettings.max_in_flight,
    show_default=True,
    type=click.IntRange(min=1),
    help="Tool calls one session may have running at once. A call beyond it waits its turn: over "
    "stdio it and the requests after it wait, in order; over HTTP it waits up to 30 s, then is "
    "refused with a 'Server busy' error (-32000). Calls in a batch beyond it are refused at once.",
)

PROCESSES = click.option(
    "--processes",
    default=RunSettings.processes,
    show_default=True,
    type=click.IntRange(min=1),
    metavar="N",
    help="Tool processes per tool file. Each call goes to the least busy one, so CPU-bound sync "
    "tools use N cores; a crash restarts only that process, a reload replaces all N. "
    "Module-level state in a tool file is per process.",
)

STORE = click.option(
    "--store",
    default=RunSettings.store,
    metavar="URL",
    help="Shared state for several hosts: redis://HOST:PORT/DB, with ?prefix=NAME to keep "
    "deployments on one database apart. Modern-era tasks are seen, answered "
    "and cancelled through any host; resource updates published on one host reach listeners on "
    "all of them; an input-required retry (requestState) is accepted by any of them; a principal's "
    "tool-list state is the same on all of them. Needed by --workers N > 1. Needs the "
    "redis client (pip install 'protomcp-tools[redis]').  "
    "[default: this host's memory]",
)

INCLUDE_TAG = click.option(
    "--include-tag",
    "include_tags",
    multiple=True,
    metavar="TAG",
    help="Expose only tools with this tag (@tool(tags={...})); repeatable: any of them.",
)

EXCLUDE_TAG = click.option(
    "--exclude-tag",
    "exclude_tags",
    multiple=True,
    metavar="TAG",
    help="Do not expose tools with this tag; repeatable.",
)

DISCOVERY = click.option(
    "--discovery",
    type=click.Choice(["full", "search"]),
    default=RunSettings.discovery,
    show_default=True,
    help="What tools/list shows: full (every tool) or search (three meta-tools — find_tools, "
    "get_tool_schema, call_tool — plus @tool(pinned=True) tools; the model finds the rest by a "
    "query, ranked with BM25). For large catalogues: far fewer tokens in the model's context.",
)

SCHEMA_REGISTRY = click.option(
    "--schema-registry",
    "schema_registry",
    type=click.Path(file_okay=False, path_type=Path),
    default=RunSettings.schema_registry,
    metavar="DIR",
    help="proto-mcp clients: write each tool's protobuf descriptors to DIR and list them by "
    "reference (bsr_ref) to clients that resolve references from DIR; without it they are "
    "listed inline.",
)


def skills_option(help: str) -> Option:
    """`--skills DIR` (repeatable), as each command that takes folders of skills words it."""
    return click.option(
        "--skills",
        "skills",
        multiple=True,
        type=click.Path(file_okay=False, path_type=Path),
        metavar="DIR",
        help=help,
    )


SKILLS = skills_option(
    "Also serve the skills in DIR (each a folder <name>/SKILL.md with YAML front matter, and "
    "its other files) as the MCP skills extension (SEP-2640): skills/list, skills/get and "
    "skill://<name>/<file> resources. Repeatable."
)

TRANSPORT = click.option(
    "--transport",
    type=click.Choice(["stdio", "http", "sse"]),
    default="stdio",
    show_default=True,
    help="How the AI client connects: stdio (the client starts protomcp as a subprocess), "
    "http (Streamable HTTP at --host/--port/--path) or sse (the deprecated HTTP+SSE transport "
    "of MCP 2024-11-05, at /sse, for old clients).",
)

HTTP_OPTIONS = [
    click.option("--host", default=None, help="[http/sse] Address to listen on.  [default: 127.0.0.1]"),
    click.option(
        "--port",
        default=None,
        type=click.IntRange(0, 65535),
        help="[http/sse] Port to listen on (0 = any free port).  [default: 8000]",
    ),
    click.option("--path", default=None, help="[http] Path of the MCP endpoint.  [default: /mcp]"),
    click.option(
        "--allow-host",
        "allow_hosts",
        multiple=True,
        metavar="HOST",
        help="[http/sse] Also accept requests whose Host header names HOST (repeatable; '*' = any), "
        "e.g. the public name a reverse proxy forwards. Loopback names are always accepted.",
    ),
    click.option(
        "--allow-origin",
        "allow_origins",
        multiple=True,
        metavar="ORIGIN",
        help="[http/sse] Also accept browser requests from ORIGIN, e.g. https://app.example.com "
        "(repeatable; '*' = any). Loopback origins are always accepted.",
    ),
    click.option(
        "--auth-token-env",
        default=None,
        metavar="NAME",
        help="[http/sse] Require 'Authorization: Bearer <token>' where the token is the value of "
        "the environment variable NAME (which tool processes do not get).",
    ),
    click.option(
        "--oauth-jwks",
        default=None,
        metavar="URL|FILE",
        help="[http/sse] OAuth resource-server mode: accept only JWT access tokens signed by a key "
        "of this JWKS (needs --oauth-issuer). Clients discover the authorization server at "
        "/.well-known/oauth-protected-resource.",
    ),
    click.option(
        "--oauth-issuer", default=None, metavar="URL", help="[http/sse] Required 'iss' of access tokens."
    ),
    click.option(
        "--oauth-audience",
        default=None,
        metavar="URL",
        help="[http/sse] Required 'aud' of access tokens.  [default: this server's URL, e.g. "
        "http://127.0.0.1:8000/mcp; set it to the public URL behind a proxy]",
    ),
    click.option(
        "--oauth-scope",
        "oauth_scopes",
        multiple=True,
        metavar="SCOPE",
        help="[http/sse] A scope every access token must grant (repeatable); else 403 insufficient_scope.",
    ),
    click.option(
        "--oauth-jwks-refresh",
        default=None,
        type=click.FloatRange(min=0),
        metavar="SECONDS",
        help="[http/sse] A token signed with a key the JWKS did not have makes the host read the JWKS "
        "URL again, at most once per SECONDS (whether it answers or not); the keys read last stay in "
        "use, and a failure is reported here, not to the client.  [default: 60]",
    ),
    click.option(
        "--oauth-introspect",
        default=None,
        metavar="URL",
        help="[http/sse] OAuth resource-server mode for opaque access tokens: ask this RFC 7662 "
        "introspection endpoint about each token (answers cached up to 30 s), authenticated as the "
        "client named by --oauth-client-id-env and --oauth-client-secret-env (needs --oauth-issuer; "
        "instead of --oauth-jwks). The token must be active and its 'aud' include this server.",
    ),
    click.option(
        "--oauth-leeway",
        default=None,
        type=click.FloatRange(min=0),
        metavar="SECONDS",
        help="[http/sse] Clock skew allowed when checking a JWT access token's exp, nbf and iat: a "
        "token is still accepted this many seconds after it expired.  [default: 30]",
    ),
    click.option(
        "--max-body",
        default=None,
        type=click.IntRange(min=1),
        help="[http/sse] Largest request body in bytes (413 above).  [default: 4194304]",
    ),
    click.option(
        "--max-sessions",
        default=None,
        type=click.IntRange(min=1),
        help="[http] Most sessions at once; initialize gets 503 beyond it.  [default: 10000]",
    ),
    click.option(
        "--session-timeout",
        default=None,
        type=click.FloatRange(min=0),
        help="[http] Seconds an idle session lives before it expires; its client then gets 404 and "
        "initializes again (0 = never).  [default: 1800]",
    ),
    click.option(
        "--header-timeout",
        default=None,
        type=click.FloatRange(min=0, min_open=True),
        help="[http/sse] Seconds a connection may take to send a complete request header, counted "
        "from when it opens or from the first byte of its next request; then it is closed.  "
        "[default: 10]",
    ),
    click.option(
        "--keep-alive-timeout",
        default=None,
        type=click.FloatRange(min=0, min_open=True),
        help="[http/sse] Seconds a kept-alive connection may sit idle between requests before it is "
        "closed.  [default: 5]",
    ),
    click.option(
        "--max-connections",
        default=None,
        type=click.IntRange(min=1),
        help="[http/sse] Most open connections. At the limit a new connection replaces the oldest one "
        "with no request in progress (silent or idle); when every connection is serving a request "
        "it gets 503. Lowered to fit the limit on open files (ulimit -n).  [default: 1000]",
    ),
    click.option(
        "--session-id-header",
        default=None,
        metavar="NAME",
        help="[http] Behind a balancer: a new stateful session takes its id from this request header "
        "(nginx: proxy_set_header NAME $request_id, and hash the same value), so that `hash "
        "$http_mcp_session_id` sends the session's later requests to this host. Ignored unless the "
        "value is 32-128 letters, digits, '-', '_' or '.' and no session has it.",
    ),
    click.option(
        "--workers",
        default=None,
        type=click.IntRange(min=1),
        metavar="N",
        help="[http] Host processes sharing the port, each with its own tool processes; this process "
        "supervises them (a worker that dies is replaced; SIGTERM drains all). More than one needs "
        "--store redis://...: the workers share each principal's tool-list state, modern-era tasks "
        "and the requestState key there. Modern (2026-07-28) requests go to any worker; a stateful "
        "session lives in one worker, which the others pass its requests to.  [default: 1]",
    ),
]
HTTP_FLAGS = {  # parameter name -> flag, for telling a stdio user which flags do not apply
    "host": "--host",
    "port": "--port",
    "path": "--path",
    "allow_hosts": "--allow-host",
    "allow_origins": "--allow-origin",
    "auth_token_env": "--auth-token-env",
    "oauth_jwks": "--oauth-jwks",
    "oauth_issuer": "--oauth-issuer",
    "oauth_audience": "--oauth-audience",
    "oauth_scopes": "--oauth-scope",
    "oauth_jwks_refresh": "--oauth-jwks-refresh",
    "oauth_introspect": "--oauth-introspect",
    "oauth_leeway": "--oauth-leeway",
    "max_body": "--max-body",
    "session_timeout": "--session-timeout",
    "max_sessions": "--max-sessions",
    "header_timeout": "--header-timeout",
    "keep_alive_timeout": "--keep-alive-timeout",
    "max_connections": "--max-connections",
    "workers": "--workers",
    "session_id_header": "--session-id-header",
}
CONNECTION_LIMITS = ("header_timeout", "keep_alive_timeout", "max_connections")
# not used by the HTTP+SSE transport (2024-11-05) (--workers: its sessions would need affinity)
STREAMABLE_ONLY = ("path", "session_timeout", "max_sessions", "workers", "session_id_header")

WATCH = click.option(
    "--watch",
    "watch",
    multiple=True,
    metavar="GLOB",
    help="Also reload when files matching GLOB change (repeatable), e.g. --watch 'data/*.json'.",
)
NO_RELOAD = click.option(
    "--no-reload", is_flag=True, help="Do not watch files; behave like run, with dev diagnostics."
)
UI = click.option(
    "--ui",
    is_flag=True,
    help="Also serve the playground: a page on 127.0.0.1 to call the tools, answer their questions, "
    "read every MCP message and follow reloads and crashes. Its URL (with a per-launch token) is "
    "printed on stderr.",
)
UI_PORT = click.option(
    "--ui-port",
    type=click.IntRange(min=0, max=65535),
    default=None,
    help="[--ui] The playground's port on 127.0.0.1 (0, or taken: any free port).  [default: 6280]",
)

# The groups, each in the order --help lists it
SOURCES = click.argument("files", nargs=-1, type=click.Path(path_type=Path))
SOURCE_OPTIONS = option_group(MODULE, PLUGIN)
UPSTREAM_OPTIONS = option_group(UPSTREAM_PREFIX, UPSTREAM_TOKEN_ENV, UPSTREAM)
BRIDGE_OPTIONS = option_group(
    BRIDGE_MAX_IN_FLIGHT,
    BRIDGE_REBIND_GRACE,
    BRIDGE_TOKEN_ENV,
    PEER_TOKEN_ENV,
    PEER,
    AGENT_ROLE,
    AGENT_NAME,
    AGENT_ID,
)
IDENTITY_OPTIONS = option_group(SERVER_NAME, INSTRUCTIONS)
CATALOG_OPTIONS = option_group(SKILLS, SCHEMA_REGISTRY, DISCOVERY, EXCLUDE_TAG, INCLUDE_TAG)
LIMIT_OPTIONS = option_group(
    MAX_IN_FLIGHT, DRAIN_TIMEOUT, HEARTBEAT_TIMEOUT, STARTUP_TIMEOUT, CALL_TIMEOUT, PAGE_SIZE
)
SERVE_OPTIONS = option_group(
    TRANSPORT, CATALOG_OPTIONS, *HTTP_OPTIONS, *OAUTH_SERVER_OPTIONS, PYTHON, STORE, PROCESSES, LIMIT_OPTIONS
)
RUN_OPTIONS = option_group(
    SOURCES, SOURCE_OPTIONS, UPSTREAM_OPTIONS, BRIDGE_OPTIONS, IDENTITY_OPTIONS, SERVE_OPTIONS
)
DEV_OPTIONS = option_group(RUN_OPTIONS, WATCH, NO_RELOAD, UI, UI_PORT)


class RunCommand(click.Command):
    """`run`: its function is called with the RunSettings its options make (where click would
    pass each option as a keyword argument)."""

    def invoke(self, ctx: click.Context) -> Any:
        assert self.callback is not None
        return ctx.invoke(self.callback, self.settings(ctx.params))

    def settings(self, given: Mapping[str, Any]) -> RunSettings:
        return run_settings(given)


class DevCommand(RunCommand):
    """`dev`: run's settings, and what dev does beside serving (reload, --watch, --ui)."""

    def settings(self, given: Mapping[str, Any]) -> RunSettings:
        if given["ui_port"] is not None and not given["ui"]:
            raise click.UsageError("--ui-port: only with --ui")
        dev = DevSettings(
            reload=not given["no_reload"],
            watch=tuple(given["watch"]),
            ui=given["ui"],
            ui_port=given["ui_port"],
        )
        return run_settings(given, dev)


def run_settings(given: Mapping[str, Any], dev: DevSettings | None = None) -> RunSettings:
    """The RunSettings of run's options (`given` by click parameter name); UsageError for a
    value or a combination that cannot be served."""
    upstreams = upstream_specs(given["upstreams"], given["upstream_token_envs"], given["upstream_prefixes"])
    bridge = bridge_settings(given)
    http = http_settings(given)
    settings = RunSettings(
        files=tuple(given["files"]),
        modules=tuple(given["modules"]),
        plugins=tuple(given["plugins"]),
        upstreams=upstreams,
        skills=tuple(given["skills"]),
        bridge=bridge,
        python=given["python"],
        server_name=given["server_name"],
        instructions=given["instructions"],
        include_tags=tuple(given["include_tags"]),
        exclude_tags=tuple(given["exclude_tags"]),
        discovery=given["discovery"],
        page_size=given["page_size"],
        schema_registry=given["schema_registry"],
        call_timeout=given["call_timeout"],
        startup_timeout=given["startup_timeout"],
        heartbeat_timeout=given["heartbeat_timeout"],
        drain_timeout=given["drain_timeout"],
        max_in_flight=given["max_in_flight"],
        processes=given["processes"],
        store=given["store"],
        http=http,
        oauth_server=oauth_server_settings(given, http),
        auth_token_env=given["auth_token_env"],
        oauth_client_envs=tuple(
            name for name in (given["oauth_client_id_env"], given["oauth_client_secret_env"]) if name
        ),
        dev=dev,
    )
    _check_serving(settings)
    return settings


def _check_serving(settings: RunSettings) -> None:
    """The combinations of valid options that cannot be served."""
    bridge, http = settings.bridge, settings.http
    if bridge is not None and bridge.credentials and http is None:
        raise click.UsageError("--bridge-token-env: only with --transport http (stdio serves no /bridge)")
    if bridge is not None and http is not None and http.workers > 1:
        raise click.UsageError(
            "--agent-id with --workers: every worker would be a separate agent under one id "
            "(peers refuse the second link); bridge one worker and scale tools with --processes"
        )
    if http is not None and http.workers > 1 and settings.store in (None, "memory"):
        raise click.UsageError(
            f"--workers {http.workers} needs --store redis://HOST:PORT/DB: each worker is a host of its "
            "own, and the store is where they share each principal's tool-list state, modern-era tasks "
            "and the requestState key (or serve with one worker and scale tools with --processes)"
        )


def upstream_specs(
    upstreams: tuple[str, ...], token_envs: tuple[str, ...], prefixes: tuple[str, ...]
) -> tuple[UpstreamSpec, ...]:
    """The --upstream options (with --upstream-token-env, --upstream-prefix) as UpstreamSpecs;
    UsageError when malformed."""
    from protomcp_host.upstream.spec import SpecError, parse_specs

    try:
        return tuple(parse_specs(upstreams, token_envs, prefixes))
    except SpecError as exc:
        raise click.UsageError(str(exc)) from None


def bridge_settings(given: Mapping[str, Any]) -> BridgeSettings | None:
    """The bridge options as BridgeSettings, or None without --agent-id."""
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
            raise click.UsageError(f"{', '.join(used)}: only with --agent-id (this host's name in the swarm)")
        return None
    from protomcp_host.peers.hub import AGENT_ID, BridgeSettings

    if not AGENT_ID.match(agent_id):
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
    return BridgeSettings(
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
    from protomcp_host.peers.hub import AGENT_ID

    peer_id, sep, url = given.partition("=")
    if not sep or "://" in peer_id:
        peer_id, url = "", given
    if not url.startswith(("ws://", "wss://")):
        raise click.UsageError(f"--peer {given}: give the peer's bridge as ws://HOST:PORT/bridge (or wss://)")
    if peer_id and not AGENT_ID.match(peer_id):
        raise click.UsageError(f"--peer {given}: ID is an agent id (a letter, then letters, digits, _ or -)")
    return url, peer_id


def _claims(given: str) -> tuple[frozenset[str], str]:
    """`--bridge-token-env [ID,...=]VAR` as (the ids it may claim, empty: any; VAR)."""
    from protomcp_host.peers.hub import AGENT_ID

    ids, sep, name = given.rpartition("=")
    claimed = frozenset(part.strip() for part in ids.split(",")) if sep else frozenset()
    bad = sorted(part for part in claimed if not AGENT_ID.match(part))
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


def http_settings(given: Mapping[str, Any]) -> HttpSettings | None:
    """HttpSettings for --transport http/sse (None for stdio, where HTTP flags are an error);
    an option not given keeps HttpSettings' default."""
    transport: str = given["transport"]
    if transport == "stdio":
        used = [flag for name, flag in HTTP_FLAGS.items() if given[name] not in (None, ())]
        if used:
            raise click.UsageError(f"{', '.join(used)}: only with --transport http or sse")
        return None
    if transport == "sse":
        used = [HTTP_FLAGS[name] for name in STREAMABLE_ONLY if given[name] is not None]
        if used:
            raise click.UsageError(f"{', '.join(used)}: only with --transport http")
    from protomcp_host.transports.http.connections import ConnectionLimits
    from protomcp_host.transports.http.server import HttpSettings

    settings = HttpSettings(
        transport=transport,
        allow_hosts=tuple(given["allow_hosts"]),
        allow_origins=tuple(given["allow_origins"]),
        limits=ConnectionLimits(**{key: given[key] for key in CONNECTION_LIMITS if given[key] is not None}),
    )
    if given["host"]:
        settings.host = given["host"]
    if given["port"] is not None:
        settings.port = given["port"]
    if given["path"]:
        settings.path = "/" + given["path"].lstrip("/")
    if given["workers"]:
        settings.workers = given["workers"]
    _session_options(settings, given)
    settings.auth = _authenticator(given)
    return settings


def _session_options(settings: HttpSettings, given: Mapping[str, Any]) -> None:
    """--max-body, --session-timeout, --max-sessions, --session-id-header."""
    options = settings.options
    if given["max_body"] is not None:
        options.max_body = given["max_body"]
    if given["session_timeout"] is not None:
        options.session_timeout = given["session_timeout"]
    if given["max_sessions"] is not None:
        options.max_sessions = given["max_sessions"]
    if given["session_id_header"]:
        options.session_id_header = given["session_id_header"].lower().encode("latin-1")


OAUTH = (
    "oauth_jwks",
    "oauth_issuer",
    "oauth_audience",
    "oauth_scopes",
    "oauth_jwks_refresh",
    "oauth_introspect",
    "oauth_leeway",
)


def _authenticator(given: Mapping[str, Any]) -> Authenticator | None:
    """--auth-token-env (a bearer token) or the --oauth-* options (an OAuth resource server)."""
    from protomcp_host.transports.http.guard import BearerToken

    auth: Authenticator | None = None
    name = given["auth_token_env"]
    if name:
        token = os.environ.get(name, "")
        if not token:
            raise click.UsageError(f"--auth-token-env {name}: the environment variable {name} is not set")
        auth = BearerToken(token)
    if any(given[key] not in (None, ()) for key in OAUTH) and not given.get("oauth_provider"):
        auth = _oauth(given, auth)  # (with --oauth-provider: cli/oauth_options.py)
    return auth


def _introspector(given: Mapping[str, Any]) -> Introspector:
    """--oauth-introspect URL with the client named by --oauth-client-id-env/-secret-env."""
    from protomcp_host.transports.http.introspection import Introspector

    url = given["oauth_introspect"]
    if not url.startswith(("https://", "http://")):
        raise click.UsageError(f"--oauth-introspect {url}: not an http(s) URL")
    credentials = []
    for option in ("--oauth-client-id-env", "--oauth-client-secret-env"):
        name = given[option[2:].replace("-", "_")]
        if not name:
            raise click.UsageError(f"--oauth-introspect needs {option}: the client it authenticates as")
        value = os.environ.get(name, "")
        if not value:
            raise click.UsageError(f"{option} {name}: the environment variable {name} is not set")
        credentials.append(value)
    client_id, client_secret = credentials
    return Introspector(url, client_id, client_secret)


def _oauth(given: Mapping[str, Any], other: Authenticator | None) -> Authenticator:
    from protomcp_host.transports.http.oauth import JwksError, OAuthResource

    if other is not None:
        raise click.UsageError("use either --auth-token-env or --oauth-jwks/--oauth-introspect, not both")
    if given["oauth_jwks"] and given["oauth_introspect"]:
        raise click.UsageError("use either --oauth-jwks (JWT access tokens) or --oauth-introspect, not both")
    if not (given["oauth_jwks"] or given["oauth_introspect"]) or not given["oauth_issuer"]:
        raise click.UsageError("OAuth mode needs --oauth-issuer and --oauth-jwks or --oauth-introspect")
    resource = OAuthResource(
        given["oauth_jwks"],
        given["oauth_issuer"],
        audience=given["oauth_audience"],
        scopes=tuple(given["oauth_scopes"]),
        introspection=_introspector(given) if given["oauth_introspect"] else None,
    )
    if given["oauth_jwks_refresh"] is not None:
        resource.refresh_after = given["oauth_jwks_refresh"]
    if given["oauth_leeway"] is not None:
        resource.leeway = given["oauth_leeway"]
    try:
        resource.load_keys()
    except JwksError as exc:
        raise click.UsageError(f"--oauth-jwks: {exc}") from None
    return resource
