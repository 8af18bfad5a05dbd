"""The `protomcp` command."""

from __future__ import annotations

import os
import sys
from functools import partial
from pathlib import Path
from typing import Any

import click

from protomcp_host import __version__

FILES = click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
SOURCES = click.argument("files", nargs=-1, type=click.Path(path_type=Path))
PYTHON = click.option(
    "--python",
    "python",
    default=sys.executable,
    show_default="this interpreter",
    help="Python interpreter that runs the tool files (protomcp_sdk must be importable there).",
)


def _serve_options(fn: Any) -> Any:
    fn = click.option(
        "--page-size",
        default=1000,
        show_default=True,
        type=click.IntRange(min=1),
        help="Tools per tools/list page; clients follow nextCursor for the rest.",
    )(fn)
    fn = click.option(
        "--call-timeout",
        default=300.0,
        show_default=True,
        type=click.FloatRange(min=0),
        help="Seconds a tool call may run before it is cancelled and reported as an error (0 = no limit).",
    )(fn)
    fn = click.option(
        "--startup-timeout",
        default=30.0,
        show_default=True,
        type=click.FloatRange(min=0, min_open=True),
        help="Seconds a tool file may take to import and list its tools (clients get their tools "
        "when it is done; `initialize` is answered at once).",
    )(fn)
    fn = click.option(
        "--heartbeat-timeout",
        default=15.0,
        show_default=True,
        type=click.FloatRange(min=0),
        help="Seconds a tool process may leave a heartbeat unanswered (an async tool blocking its "
        "event loop) before its calls fail and it is replaced (0 = no heartbeat).",
    )(fn)
    fn = click.option(
        "--drain-timeout",
        default=5.0,
        show_default=True,
        type=click.FloatRange(min=0),
        help="Seconds running calls may take to finish when the client goes away or a signal "
        "arrives; calls still running then are answered with an error.",
    )(fn)
    fn = click.option(
        "--max-in-flight",
        default=1000,
        show_default=True,
        type=click.IntRange(min=1),
        help="Tool calls one session may have running at once. A call beyond it waits its turn: over "
        "stdio it and the requests after it wait, in order; over HTTP it waits up to 30 s, then is "
        "refused with a 'Server busy' error (-32000). Calls in a batch beyond it are refused at once.",
    )(fn)
    fn = click.option(
        "--processes",
        default=1,
        show_default=True,
        type=click.IntRange(min=1),
        metavar="N",
        help="Tool processes per tool file. Each call goes to the least busy one, so CPU-bound sync "
        "tools use N cores; a crash restarts only that process, a reload replaces all N. "
        "Module-level state in a tool file is per process.",
    )(fn)
    fn = click.option(
        "--store",
        default=None,
        metavar="URL",
        help="Shared state for several hosts: redis://HOST:PORT/DB, with ?prefix=NAME to keep "
        "deployments on one database apart. Modern-era tasks are seen, answered "
        "and cancelled through any host; resource updates published on one host reach listeners on "
        "all of them; an input-required retry (requestState) is accepted by any of them; a principal's "
        "tool-list state is the same on all of them. Needed by --workers N > 1. Needs the "
        "redis client (pip install 'protomcp-tools[redis]').  "
        "[default: this host's memory]",
    )(fn)
    fn = PYTHON(fn)
    for option in reversed(HTTP_OPTIONS):
        fn = option(fn)
    fn = click.option(
        "--include-tag",
        "include_tags",
        multiple=True,
        metavar="TAG",
        help="Expose only tools with this tag (@tool(tags={...})); repeatable: any of them.",
    )(fn)
    fn = click.option(
        "--exclude-tag",
        "exclude_tags",
        multiple=True,
        metavar="TAG",
        help="Do not expose tools with this tag; repeatable.",
    )(fn)
    fn = click.option(
        "--discovery",
        type=click.Choice(["full", "search"]),
        default="full",
        show_default=True,
        help="What tools/list shows: full (every tool) or search (three meta-tools — find_tools, "
        "get_tool_schema, call_tool — plus @tool(pinned=True) tools; the model finds the rest by a "
        "query, ranked with BM25). For large catalogues: far fewer tokens in the model's context.",
    )(fn)
    fn = click.option(
        "--schema-registry",
        "schema_registry",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        metavar="DIR",
        help="proto-mcp clients: write each tool's protobuf descriptors to DIR and list them by "
        "reference (bsr_ref) to clients that resolve references from DIR; without it they are "
        "listed inline.",
    )(fn)
    fn = click.option(
        "--skills",
        "skills",
        multiple=True,
        type=click.Path(file_okay=False, path_type=Path),
        metavar="DIR",
        help="Also serve the skills in DIR (each a folder <name>/SKILL.md with YAML front matter, and "
        "its other files) as the MCP skills extension (SEP-2640): skills/list, skills/get and "
        "skill://<name>/<file> resources. Repeatable.",
    )(fn)
    fn = click.option(
        "--transport",
        type=click.Choice(["stdio", "http", "sse"]),
        default="stdio",
        show_default=True,
        help="How the AI client connects: stdio (the client starts protomcp as a subprocess), "
        "http (Streamable HTTP at --host/--port/--path) or sse (the deprecated HTTP+SSE transport "
        "of MCP 2024-11-05, at /sse, for old clients).",
    )(fn)
    return fn


def _source_options(fn: Any) -> Any:
    fn = click.option(
        "--plugin",
        "plugins",
        multiple=True,
        metavar="NAME",
        help="Also serve an installed tool plugin (see `protomcp plugins`); repeatable.",
    )(fn)
    fn = click.option(
        "-m",
        "--module",
        "modules",
        multiple=True,
        metavar="MODULE",
        help="Also serve a tool module by import path, e.g. -m mypackage.tools; repeatable.",
    )(fn)
    return fn


def _upstream_options(fn: Any) -> Any:
    fn = click.option(
        "--upstream",
        "upstreams",
        multiple=True,
        metavar="NAME=CMD|URL",
        help="Also serve the tools, resources and prompts of another MCP server, its tools and prompts "
        "named NAME_<name>: a stdio server's command line (NAME='npx -y some-server --flag'), or a "
        "Streamable HTTP URL (NAME=https://host/mcp). Restarted (stdio) or reconnected (HTTP) when it "
        "goes away. Repeatable. Needs the mcp client library: pip install 'protomcp-tools[upstream]'.",
    )(fn)
    fn = click.option(
        "--upstream-token-env",
        "upstream_token_envs",
        multiple=True,
        metavar="NAME=VAR",
        help="Send 'Authorization: Bearer <token>' to the HTTP upstream NAME, the token being the value "
        "of the environment variable VAR (which tool processes and stdio upstreams do not get).",
    )(fn)
    fn = click.option(
        "--upstream-prefix",
        "upstream_prefixes",
        multiple=True,
        metavar="NAME=PREFIX",
        help="Name the upstream NAME's tools and prompts PREFIX<name> instead of NAME_<name> "
        "(NAME= serves them under their own names).",
    )(fn)
    return fn


def _bridge_options(fn: Any) -> Any:
    fn = click.option(
        "--agent-id",
        metavar="ID",
        help="Take part in a swarm of hosts (the MCP-to-MCP bridge protocol) as agent ID: serve the "
        "bridge at /bridge beside the MCP endpoint (with --transport http; same host checks, and "
        "peers need --bridge-token-env when the MCP endpoint has authentication), add the tools "
        "bridge_notify and bridge_peers, and serve each connected peer's tools as PEERID_<name>.",
    )(fn)
    fn = click.option("--agent-name", metavar="TEXT", help="The agent_name this host tells peers.")(fn)
    fn = click.option("--agent-role", metavar="TEXT", help="The agent_role this host tells peers.")(fn)
    fn = click.option(
        "--peer",
        "peers",
        multiple=True,
        metavar="ws://HOST:PORT/bridge",
        help="Connect to another host's bridge (needs --agent-id); connected again with backoff when "
        "the link drops. Repeatable.",
    )(fn)
    fn = click.option(
        "--peer-token-env",
        metavar="VAR",
        help="Send 'Authorization: Bearer <token>' to the --peer hosts, the token being the value of "
        "the environment variable VAR (kept out of tool processes).",
    )(fn)
    fn = click.option(
        "--bridge-token-env",
        "bridge_token_envs",
        multiple=True,
        metavar="VAR",
        help="[http] Peers dialling /bridge must send 'Authorization: Bearer <token>', the token being "
        "the value of VAR (kept out of tool processes); repeatable, one per peer or group of peers: "
        "an agent id stays bound to the token that first registered it. An MCP client's token "
        "(--auth-token-env, OAuth) never opens /bridge: with either and no --bridge-token-env, no "
        "peer may dial in.",
    )(fn)
    fn = click.option(
        "--bridge-max-in-flight",
        default=16,
        show_default=True,
        type=click.IntRange(min=1),
        help="Peer requests this host runs at once; the rest wait, urgent before high before normal "
        "before low, in order of arrival within one priority.",
    )(fn)
    return fn


BRIDGE_KEYS = (
    "agent_id",
    "agent_name",
    "agent_role",
    "peers",
    "peer_token_env",
    "bridge_token_envs",
    "bridge_max_in_flight",
)


def bridge_settings(options: dict[str, Any]) -> Any:
    """Take the bridge options out of `options`: BridgeSettings, or None without --agent-id."""
    given = {key: options.pop(key, None) for key in BRIDGE_KEYS}
    if not given["agent_id"]:
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

    if not AGENT_ID.match(given["agent_id"]):
        raise click.UsageError(
            "--agent-id: a letter, then letters, digits, _ or - (peers name its tools ID_<name>)"
        )
    for url in given["peers"]:
        if not url.startswith(("ws://", "wss://")):
            raise click.UsageError(
                f"--peer {url}: give the peer's bridge as ws://HOST:PORT/bridge (or wss://)"
            )
    token = _secret("--peer-token-env", given["peer_token_env"]) if given["peer_token_env"] else ""
    credentials = {name: _secret("--bridge-token-env", name) for name in given["bridge_token_envs"] or ()}
    client_token = os.environ.get(options.get("auth_token_env") or "", "")
    if client_token and client_token in credentials.values():
        raise click.UsageError(
            "--bridge-token-env holds the same token as --auth-token-env: an MCP client's token "
            "never makes a peer; give peers a token of their own"
        )
    return BridgeSettings(
        agent_id=given["agent_id"],
        agent_name=given["agent_name"] or "",
        agent_role=given["agent_role"] or "",
        peers=tuple(given["peers"]),
        token=token,
        credentials=credentials,
        max_in_flight=given["bridge_max_in_flight"] or 16,
    )


def _secret(flag: str, name: str) -> str:
    """The value of the environment variable `name`, kept out of tool processes from now on."""
    from protomcp_host.processes.launch import SECRET_ENV

    value = os.environ.get(name, "")
    if not value:
        raise click.UsageError(f"{flag}: the environment variable {name} is not set")
    SECRET_ENV.add(name)
    return value


def upstream_specs(options: dict[str, Any]) -> list[Any]:
    """Take the --upstream options out of `options` as UpstreamSpecs (UsageError when malformed)."""
    from protomcp_host.upstream.spec import SpecError, parse_specs

    try:
        return parse_specs(
            options.pop("upstreams", ()),
            options.pop("upstream_token_envs", ()),
            options.pop("upstream_prefixes", ()),
        )
    except SpecError as exc:
        raise click.UsageError(str(exc)) from None


def _identity_options(fn: Any) -> Any:
    fn = click.option(
        "--instructions",
        metavar="TEXT",
        help="How to use these tools, sent to the client (default: the tool files' docstrings).",
    )(fn)
    fn = click.option(
        "--name", "server_name", metavar="NAME", help="Server name initialize reports (default: protomcp)."
    )(fn)
    return fn


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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="protomcp")
def main() -> None:
    """protomcp: serve Python functions as MCP tools to Claude Desktop, Claude Code, Cursor or VS Code.

    Write a tool file with @tool functions, then point your AI client at
    `protomcp run /abs/path/tools.py` (or use `protomcp dev` while you edit it).
    """


@main.command()
@SOURCES
@_source_options
@_upstream_options
@_bridge_options
@_identity_options
@_serve_options
def run(files: tuple[Path, ...], **options: Any) -> None:
    """Serve the tools in FILES (files or folders of tool files) over MCP.

    This is the command to put in your AI client's config. Each file, module and plugin
    runs in its own supervised tool process; a tool process that crashes is restarted.

    Tool processes get this environment minus the variable --auth-token-env names, plus
    PROTOMCP_FDS, PROTOMCP_HOST_PID, PROTOMCP_SPOOL and PYTHONUNBUFFERED=1, which the host sets.
    """
    _serve_command(files, options)


@main.command()
@SOURCES
@_source_options
@_upstream_options
@_bridge_options
@_identity_options
@_serve_options
@click.option(
    "--watch",
    "watch",
    multiple=True,
    metavar="GLOB",
    help="Also reload when files matching GLOB change (repeatable), e.g. --watch 'data/*.json'.",
)
@click.option("--no-reload", is_flag=True, help="Do not watch files; behave like run, with dev diagnostics.")
@click.option(
    "--ui",
    is_flag=True,
    help="Also serve the playground: a page on 127.0.0.1 to call the tools, answer their questions, "
    "read every MCP message and follow reloads and crashes. Its URL (with a per-launch token) is "
    "printed on stderr.",
)
@click.option(
    "--ui-port",
    type=click.IntRange(min=0, max=65535),
    default=None,
    help="[--ui] The playground's port on 127.0.0.1 (0, or taken: any free port).  [default: 6280]",
)
def dev(
    files: tuple[Path, ...],
    watch: tuple[str, ...],
    no_reload: bool,
    ui: bool,
    ui_port: int | None,
    **options: Any,
) -> None:
    """Serve FILES like run, and reload a tool file the moment you save it.

    The host and the client's session stay up: only the tool process is replaced, so
    your AI client sees new and changed tools without a restart. Python files under
    each tool file's folder are watched (virtualenvs, __pycache__, .git and
    node_modules are skipped). A file that fails to load leaves the previous tools
    serving and reports the error here and to the client.
    """
    if ui_port is not None and not ui:
        raise click.UsageError("--ui-port: only with --ui")
    companions: tuple[Any, ...] = (_journal,)  # first: it hears the playground's URL
    if ui:
        companions += (partial(_playground, ui_port),)
    _serve_command(files, options, reload=not no_reload, watch=watch, companions=companions)


async def _playground(port: int | None, host: Any, shutdown: Any, *, task_status: Any) -> None:
    """The --ui companion; imported only once the tool processes have been launched (a port
    taken, say by a sibling copy, falls back to a free one)."""
    from protomcp_host.playground.server import serve_playground

    await serve_playground(host, shutdown, UI_PORT if port is None else port, task_status=task_status)


async def _journal(host: Any, shutdown: Any, *, task_status: Any) -> None:
    """dev's journal for `protomcp logs`."""
    from protomcp_host.cli.devjournal import journal_companion

    await journal_companion(host, shutdown, task_status=task_status)


UI_PORT = 6280


SERVE_KEYS = (
    "modules",
    "plugins",
    "server_name",
    "instructions",
    "python",
    "call_timeout",
    "page_size",
    "include_tags",
    "exclude_tags",
    "processes",
    "store",
    "discovery",
    "schema_registry",
    "skills",
)


def _serve_command(files: tuple[Path, ...], options: dict[str, Any], **extra: Any) -> None:
    """What run and dev share: split the options into serve settings, hardening bounds and
    HTTP settings (what is left), then serve."""
    limits = _pop_limits(options)
    upstreams = upstream_specs(options)
    bridge = bridge_settings(options)
    transport = options.pop("transport")
    settings = {key: options.pop(key) for key in SERVE_KEYS}
    token_env = options.get("auth_token_env")
    http = _http_settings(transport, options)
    if bridge is not None and bridge.credentials and http is None:
        raise click.UsageError("--bridge-token-env: only with --transport http (stdio serves no /bridge)")
    if bridge is not None and http is not None and http.workers > 1:
        raise click.UsageError(
            "--agent-id with --workers: every worker would be a separate agent under one id "
            "(peers refuse the second link); bridge one worker and scale tools with --processes"
        )
    if http is not None and http.workers > 1 and settings["store"] in (None, "memory"):
        raise click.UsageError(
            f"--workers {http.workers} needs --store redis://HOST:PORT/DB: each worker is a host of its "
            "own, and the store is where they share each principal's tool-list state, modern-era tasks "
            "and the requestState key (or serve with one worker and scale tools with --processes)"
        )
    _serve(
        files,
        **settings,
        **extra,
        http=http,
        token_env=token_env,
        upstreams=upstreams,
        bridge=bridge,
        **limits,
    )


LIMITS = ("drain_timeout", "max_in_flight", "startup_timeout", "heartbeat_timeout")


def _pop_limits(given: dict[str, Any]) -> dict[str, Any]:
    """Take the hardening bounds (--drain-timeout, --max-in-flight, ...) out of the keyword
    arguments collected with the HTTP options."""
    return {name: given.pop(name) for name in LIMITS if name in given}


def _http_settings(transport: str, given: dict[str, Any]) -> Any:
    """HttpSettings for --transport http/sse (None for stdio, where HTTP flags are an error)."""
    if transport == "stdio":
        used = [flag for name, flag in HTTP_FLAGS.items() if given.get(name) not in (None, ())]
        if used:
            raise click.UsageError(f"{', '.join(used)}: only with --transport http or sse")
        return None
    if transport == "sse":
        used = [HTTP_FLAGS[name] for name in STREAMABLE_ONLY if given.get(name) is not None]
        if used:
            raise click.UsageError(f"{', '.join(used)}: only with --transport http")
    from protomcp_host.transports.http.connections import ConnectionLimits
    from protomcp_host.transports.http.guard import BearerToken
    from protomcp_host.transports.http.server import HttpSettings
    from protomcp_host.transports.http.streamable import HttpOptions

    options = HttpOptions()
    if given.get("max_body") is not None:
        options.max_body = given["max_body"]
    if given.get("session_timeout") is not None:
        options.session_timeout = given["session_timeout"]
    if given.get("max_sessions") is not None:
        options.max_sessions = given["max_sessions"]
    if given.get("session_id_header"):
        options.session_id_header = given["session_id_header"].lower().encode("latin-1")
    settings = HttpSettings(
        transport=transport,
        host=given.get("host") or "127.0.0.1",
        port=8000 if given.get("port") is None else given["port"],
        path="/" + (given.get("path") or "/mcp").lstrip("/"),
        allow_hosts=tuple(given.get("allow_hosts") or ()),
        allow_origins=tuple(given.get("allow_origins") or ()),
        options=options,
        limits=ConnectionLimits(
            **{key: given[key] for key in CONNECTION_LIMITS if given.get(key) is not None}
        ),
        workers=given.get("workers") or 1,
    )
    name = given.get("auth_token_env")
    if name:
        from protomcp_host.processes.launch import SECRET_ENV

        token = os.environ.get(name, "")
        if not token:
            raise click.UsageError(f"--auth-token-env {name}: the environment variable {name} is not set")
        settings.auth = BearerToken(token)
        SECRET_ENV.add(name)  # the token stays out of tool processes' environment
    oauth = {
        name: given.get(name)
        for name in ("oauth_jwks", "oauth_issuer", "oauth_audience", "oauth_scopes", "oauth_jwks_refresh")
    }
    if any(value not in (None, ()) for value in oauth.values()):
        settings.auth = _oauth(settings.auth, **oauth)
    return settings


def _oauth(other: Any, oauth_jwks: str | None, oauth_issuer: str | None, **rest: Any) -> Any:
    from protomcp_host.transports.http.oauth import JwksError, OAuthResource

    if other is not None:
        raise click.UsageError("use either --auth-token-env or --oauth-jwks, not both")
    if not oauth_jwks or not oauth_issuer:
        raise click.UsageError("OAuth mode needs both --oauth-jwks and --oauth-issuer")
    resource = OAuthResource(
        oauth_jwks, oauth_issuer, audience=rest["oauth_audience"], scopes=tuple(rest["oauth_scopes"] or ())
    )
    if rest["oauth_jwks_refresh"] is not None:
        resource.refresh_after = rest["oauth_jwks_refresh"]
    try:
        resource.load_keys()
    except JwksError as exc:
        raise click.UsageError(f"--oauth-jwks: {exc}") from None
    return resource


def _serve(files: tuple[Path, ...], **options: Any) -> None:
    from protomcp_host.cli.serving import UsageError, serve

    try:
        serve(files, **options)
    except UsageError as exc:
        raise click.UsageError(str(exc)) from None


SKILLS_OPTION = click.option(
    "--skills",
    "skills",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Also the skills in DIR (folders <name>/SKILL.md), as `run --skills DIR` serves them; repeatable.",
)


def _load_skill_folders(folders: tuple[Path, ...]) -> Any:
    """--skills of list and inspect: the skills (None without the option); a bad one is an error."""
    if not folders:
        return None
    from protomcp_host.skillfolder import SkillError, load_skills

    try:
        return load_skills(folders)
    except (SkillError, OSError) as exc:
        raise click.ClickException(str(exc)) from None


@main.command(name="list")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@_source_options
@SKILLS_OPTION
@_upstream_options
@click.option("--json", "as_json", is_flag=True, help="Print the MCP tools/list result as JSON.")
@PYTHON
def list_command(
    files: tuple[Path, ...],
    modules: tuple[str, ...],
    plugins: tuple[str, ...],
    skills: tuple[Path, ...],
    as_json: bool,
    python: str,
    **given: Any,
) -> None:
    """Print the tools in FILES, -m modules, --plugin plugins and --upstream servers: name,
    description and parameters; then their resources, resource templates and prompts, and the
    --skills, if any."""
    import orjson

    upstreams = upstream_specs(given)
    served_skills = _load_skill_folders(skills)
    sources = (
        _sources(files, modules, plugins, python, skills=skills)
        if files or modules or plugins or not upstreams
        else []
    )
    served = _with_client(sources, python, _list_everything, skills=served_skills, upstreams=upstreams)
    if as_json:
        shown = {key: value for key, value in served.items() if value or key == "tools"}
        click.echo(orjson.dumps(shown, option=orjson.OPT_INDENT_2).decode())
        return
    from protomcp_host.cli.show import signature

    for entry in served["tools"]:
        click.echo(f"{entry['name']}{signature(entry.get('inputSchema', {}))}")
        _describe(entry)
    for key, title, name_of in LISTED[1:]:
        if served[key]:
            click.echo(f"\n{title}:")
            for entry in served[key]:
                click.echo(name_of(entry))
                _describe(entry)


def _describe(entry: dict[str, Any]) -> None:
    description = (entry.get("description") or entry.get("frontmatter", {}).get("description") or "").strip()
    if description:
        click.echo(f"    {description.splitlines()[0]}")


def _prompt_line(entry: dict[str, Any]) -> str:
    arguments = [a["name"] + ("" if a.get("required") else "?") for a in entry.get("arguments") or []]
    return f"{entry['name']}({', '.join(arguments)})"


LISTED: list[tuple[str, str, Any]] = [  # result key, heading, how an entry is shown
    ("tools", "Tools", None),
    ("resources", "Resources", lambda entry: f"{entry['uri']}  {entry.get('name', '')}".rstrip()),
    (
        "resourceTemplates",
        "Resource templates",
        lambda e: f"{e['uriTemplate']}  {e.get('name', '')}".rstrip(),
    ),
    ("prompts", "Prompts", _prompt_line),
    ("skills", "Skills", lambda entry: f"{entry['uri']}  ({len(entry['resources'])} files)"),
]
LIST_METHODS = {
    "tools": "tools/list",
    "resources": "resources/list",
    "resourceTemplates": "resources/templates/list",
    "prompts": "prompts/list",
    "skills": "skills/list",
}


async def _list_everything(request: Any) -> dict[str, list[dict[str, Any]]]:
    """Every page of tools/list, resources/list, resources/templates/list and prompts/list."""
    from protomcp_host.transports.direct import RequestFailed

    served: dict[str, list[dict[str, Any]]] = {}
    for key, method in LIST_METHODS.items():
        served[key] = []
        cursor: str | None = None
        while True:
            try:
                page = await request(method, {"cursor": cursor} if cursor else {})
            except RequestFailed:
                if key == "tools":
                    raise
                break  # not offered (no resources or prompts at all, no --skills)
            served[key].extend(page.get(key) or [])
            if not (cursor := page.get("nextCursor")):
                break
    return served


@main.command(name="inspect")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@_source_options
@SKILLS_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (see docs/guide/cli.md).")
@PYTHON
def inspect_command(
    files: tuple[Path, ...],
    modules: tuple[str, ...],
    plugins: tuple[str, ...],
    skills: tuple[Path, ...],
    as_json: bool,
    python: str,
) -> None:
    """Report everything FILES (and -m modules, --plugin plugins) serve: tools with their
    schemas, resources, templates, prompts, completions, middleware, lifespan, and warnings;
    and the skills of --skills folders.

    Nothing is served and no lifespan runs: each file is only imported. Exits with status 1
    when a file fails to load, two files define the same name (which `run` refuses) or a
    skill is not fit to serve.
    """
    import orjson

    from protomcp_host.cli.inspection import inspect_files, inspect_skills, render
    from protomcp_host.cli.show import signature
    from protomcp_host.processes.launch import StartupError, tool_files

    try:
        found = tool_files(_sources(files, modules, plugins, python, skills=skills))
    except StartupError as exc:
        raise click.ClickException(str(exc)) from None
    report = inspect_files(found, python)
    if skills:
        inspect_skills(report, skills)
    if as_json:
        click.echo(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
    else:
        render(report, click.echo, signature)
    sys.exit(0 if report["ok"] else 1)


@main.command(name="proto-schema")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@_source_options
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write DIR/protomcp/tools/<tool>.proto (and protomcp/options.proto) instead of printing.",
)
@PYTHON
def proto_schema_command(
    files: tuple[Path, ...], modules: tuple[str, ...], plugins: tuple[str, ...], out: Path | None, python: str
) -> None:
    """Print each tool's JSON Schema as a .proto file: <Tool>Request from its input schema,
    <Tool>Response from its output schema (the messages proto-mcp clients see).

    Constraints, descriptions and defaults that protobuf types cannot say travel in the
    (protomcp.field_schema) option, so the schema converts back unchanged. The files compile
    with protoc beside protomcp/options.proto (written by --out). Exits with status 1 when a
    file fails to load.
    """
    from protomcp_host.cli.inspection import inspect_files
    from protomcp_host.processes.launch import StartupError, tool_files
    from protomcp_sdk.wire import options_pb2, protoschema

    try:
        found = tool_files(_sources(files, modules, plugins, python))
    except StartupError as exc:
        raise click.ClickException(str(exc)) from None
    report = inspect_files(found, python)
    for entry in report["files"]:
        if not entry["ok"]:
            click.echo(f"protomcp: {entry['label']} failed to load:\n{entry.get('error', '')}", err=True)
        for tool in entry["tools"]:
            file = protoschema.tool_messages(tool["name"], tool["inputSchema"], tool.get("outputSchema"))
            text = protoschema.proto_source(file)
            if out is None:
                click.echo(f"// ---- {file.name} (tool {tool['name']} of {entry['label']})\n{text}")
                continue
            target = out / file.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            click.echo(f"wrote {target}")
    if out is not None:
        options = out / options_pb2.DESCRIPTOR.name
        options.parent.mkdir(parents=True, exist_ok=True)
        options.write_text((Path(options_pb2.__file__).parent / "options.proto").read_text(encoding="utf-8"))
    sys.exit(0 if all(entry["ok"] for entry in report["files"]) else 1)


def _sources(
    files: tuple[Path, ...],
    modules: tuple[str, ...],
    plugins: tuple[str, ...],
    python: str,
    *,
    skills: tuple[Path, ...] = (),
) -> list[Path]:
    """FILES plus the source files of -m modules and --plugin plugins (as run finds them); none
    at all is an error unless there are --skills (list and inspect) to show."""
    from protomcp_host.processes.launch import StartupError

    if not (files or modules or plugins):
        if skills:
            return []
        raise click.UsageError("nothing to load: give tool FILES, -m MODULE or --plugin NAME")
    if not (modules or plugins):
        return list(files)
    from protomcp_host.cli.plugins import resolve

    try:
        return [*files, *resolve(list(modules), list(plugins), python)]
    except StartupError as exc:
        raise click.ClickException(str(exc)) from None


@main.command()
@click.argument("words", nargs=-1, metavar="[FILE] TOOL [KEY=VALUE]...")
@_source_options
@click.option(
    "--args", "args", default="{}", show_default=True, help="Arguments as a JSON object, e.g. '{\"a\": 1}'."
)
@click.option("--json", "as_json", is_flag=True, help="Print the full MCP CallToolResult as JSON.")
@click.option(
    "--call-timeout",
    default=300.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds the call may run before it is cancelled and reported as an error (0 = no limit).",
)
@click.option(
    "--binary",
    is_flag=True,
    help="Call over proto-mcp instead of JSON-RPC: start `protomcp run` on the files and "
    "send the arguments as the tool's protobuf message (--json prints the result's content, isError "
    "and structured data).",
)
@_upstream_options
@PYTHON
def call(
    words: tuple[str, ...],
    modules: tuple[str, ...],
    plugins: tuple[str, ...],
    args: str,
    as_json: bool,
    call_timeout: float,
    binary: bool,
    python: str,
    **given: Any,
) -> None:
    """Call TOOL from FILE (or from -m MODULE / --plugin NAME / --upstream, then without FILE)
    once and print its result (exit status 1 if it is an error).

    Arguments are KEY=VALUE pairs (VALUE is read as JSON, e.g. n=3 or tags='["a"]', except
    for text parameters) and/or --args JSON. Progress and log messages go to stderr. A URI
    instead of TOOL reads that resource (`call tools.py config://app`); a prompt's name
    renders the prompt (its KEY=VALUE arguments are text).
    """
    import orjson

    from protomcp_host.cli.reading import contents_text, find_prompt, is_uri, messages_text, prompt_arguments
    from protomcp_host.cli.show import CallDisplay, parse_pairs
    from protomcp_host.transports.direct import RequestFailed, list_tools

    upstreams = upstream_specs(given)

    files: tuple[Path, ...] = ()
    if not (modules or plugins or upstreams) or (
        len(words) > 1 and "=" not in words[0] and Path(words[0]).exists()
    ):
        files, words = tuple(Path(w) for w in words[:1]), words[1:]
    if not words:
        raise click.UsageError("missing TOOL (give FILE TOOL, or -m MODULE TOOL)")
    tool, pairs = words[0], words[1:]
    sources = (
        _sources(files, modules, plugins, python) if files or modules or plugins or not upstreams else []
    )
    try:
        arguments = orjson.loads(args)
    except orjson.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint="--args") from None
    if not isinstance(arguments, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--args")
    if binary:
        if upstreams or is_uri(tool):
            raise click.UsageError("--binary calls a tool of FILES (no --upstream, no resource URI)")
        from protomcp_host.cli.binary_call import call_binary

        sys.exit(call_binary(sources, tool, pairs, arguments, as_json, call_timeout or None, python))
    display = CallDisplay(tool)

    async def one_call(request: Any) -> tuple[str, dict[str, Any]]:
        if is_uri(tool):  # a resource: read it
            if pairs or arguments:
                raise click.UsageError("a resource URI takes no arguments")
            return "resource", await request("resources/read", {"uri": tool})
        if pairs:
            schemas = {entry["name"]: entry.get("inputSchema", {}) for entry in await list_tools(request)}
            try:
                arguments.update(parse_pairs(pairs, schemas.get(tool, {})))
            except ValueError as exc:
                raise click.BadParameter(str(exc), param_hint="KEY=VALUE") from None
        params = {"name": tool, "arguments": arguments, "_meta": {"progressToken": 1}}
        try:
            return "tool", await request("tools/call", params)
        except RequestFailed as exc:
            if not str(exc).startswith("Unknown tool"):
                raise click.ClickException(str(exc)) from None
            if await find_prompt(request, tool) is not None:  # a prompt: render it
                try:
                    texts = prompt_arguments(pairs, orjson.loads(args))
                except ValueError as problem:
                    raise click.BadParameter(str(problem), param_hint="KEY=VALUE") from None
                return "prompt", await request("prompts/get", {"name": tool, "arguments": texts})
            from protomcp_host.cli.undecorated import undecorated_hint

            hint = undecorated_hint(sources, tool)
            raise click.ClickException(f"{exc} ({hint})" if hint else str(exc)) from None
        finally:
            display.close()

    kind, result = _with_client(
        sources,
        python,
        one_call,
        call_timeout=call_timeout or None,
        on_message=display,
        echo_requests=False,  # what the call prints reaches the display as log messages: shown once
        upstreams=upstreams,
    )
    if as_json:
        click.echo(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    elif kind == "resource":
        click.echo("\n".join(contents_text(result)))
    elif kind == "prompt":
        click.echo("\n".join(messages_text(result, _describe_block)))
    else:
        for block in result.get("content", []):
            click.echo(_describe_block(block))
    sys.exit(1 if result.get("isError") else 0)


def _describe_block(block: dict[str, Any]) -> str:
    import orjson

    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        return f"[{kind} {block.get('mimeType')}, {len(block.get('data', '')) * 3 // 4} bytes]"
    if kind == "resource_link":
        return f"[resource link {block.get('uri')}]"
    if kind == "resource":
        resource = block.get("resource", {})
        return resource.get("text") or f"[resource {resource.get('uri')}]"
    return orjson.dumps(block).decode()


def _with_client(files: list[Path], python: str, action: Any, on_message: Any = None, **options: Any) -> Any:
    import anyio

    from protomcp_host.app import Host
    from protomcp_host.processes.launch import StartupError, tool_files
    from protomcp_host.transports.direct import RequestFailed, direct_client

    async def go() -> Any:
        host = Host(tool_files(files), python=python, stderr=_err, share_output=True, **options)
        async with direct_client(host, on_message=on_message) as request:
            return await action(request)

    try:
        return anyio.run(go, backend="asyncio")
    except StartupError as exc:
        raise click.ClickException(str(exc)) from None
    except RequestFailed as exc:
        raise click.ClickException(str(exc)) from None


def _err(text: str) -> None:
    click.echo(text, err=True)


@main.command()
@PYTHON
def plugins(python: str) -> None:
    """List the tool plugins installed distributions offer (entry-point group protomcp.plugins)."""
    from protomcp_host.cli import plugins as found
    from protomcp_host.processes.launch import StartupError

    try:
        installed = found.installed(python)
    except StartupError as exc:
        raise click.ClickException(str(exc)) from None
    if not installed:
        click.echo(f"No tool plugins installed for {python} (entry-point group {found.GROUP}).")
        return
    for plugin in installed:
        where = str(plugin.file) if plugin.file else f"problem: {plugin.error}"
        click.echo(f"{plugin.name}  {plugin.module}  ({plugin.distribution} {plugin.version})  {where}")
    click.echo(f"Serve one with: protomcp run --plugin {installed[0].name}")


@main.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@_source_options
@_upstream_options
@PYTHON
def doctor(
    files: tuple[Path, ...], modules: tuple[str, ...], plugins: tuple[str, ...], python: str, **given: Any
) -> None:
    """Check the interpreter, tool FILES, upstream MCP servers and AI client configs; say how to
    fix each problem. Upstreams (given here or in a client's protomcp entry) are connected to
    once and their tools counted.

    Exits with status 1 when a problem was found.
    """
    upstreams = upstream_specs(given)
    import anyio

    from protomcp_host.cli.doctor import Finding, diagnose, interpreter_line
    from protomcp_host.cli.install import Place

    def show(finding: Finding) -> None:
        mark = click.style("ok ", fg="green") if finding.ok else click.style("!! ", fg="red", bold=True)
        click.echo(mark + finding.text)
        if finding.detail:
            click.echo("\n".join("     " + line for line in finding.detail.splitlines()))
        if finding.fix:
            click.echo("   -> " + finding.fix)

    click.echo(interpreter_line())
    sources = _sources(files, modules, plugins, python) if modules or plugins else list(files)
    problems = anyio.run(diagnose, sources, python, Place.current(), show, upstreams, backend="asyncio")
    click.echo(f"{problems} problem{'s' * (problems != 1)} found." if problems else "No problems found.")
    sys.exit(1 if problems else 0)


@main.command()
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option(
    "-n",
    "--lines",
    "tail",
    default=20,
    show_default=True,
    type=click.IntRange(min=0),
    help="Records of the latest host's journal to show before following.",
)
def logs(file: Path | None, tail: int) -> None:
    """Follow what the `protomcp dev` hosts serving FILE do, live: loads and load errors with
    their tracebacks, calls and answers, what calls print and log, crashes, the playground URL (--ui).

    Meant for hosts an AI client started (their stderr is the client's): each dev host keeps a
    journal of its own (at most 2 MiB) in a per-user runtime folder. Without FILE: list the
    running dev hosts. Ctrl+C stops following.
    """
    from protomcp_host.cli.devjournal import runtime_dir
    from protomcp_host.cli.logs import describe_hosts, follow

    try:
        folder = runtime_dir()
    except OSError as exc:
        raise click.ClickException(str(exc)) from None
    if file is None:
        for line in describe_hosts(folder):
            click.echo(line)
        return
    import contextlib

    with contextlib.suppress(KeyboardInterrupt):
        follow(folder, file, lambda line: click.echo(line), tail=tail)


@main.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--plugin",
    "plugins",
    multiple=True,
    metavar="NAME",
    help="Also serve an installed tool plugin: the bundle depends on its distribution; repeatable.",
)
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The bundle to write.  [default: NAME.mcpb]",
)
@click.option(
    "--type",
    "kind",
    type=click.Choice(["uv", "python"]),
    default="uv",
    show_default=True,
    help="uv: dependencies installed by the client with uv (Claude Desktop); python: protomcp and "
    "every dependency inside the bundle, for this platform and Python version (clients that run "
    "no uv, e.g. Claude Code plugins).",
)
@click.option("--name", help="The bundle's name (default: the tool file's name).")
@click.option("--version", "version", default="0.1.0", show_default=True, help="The bundle's version.")
@click.option("--author", help="The author's name (default: your login name).")
@click.option("--description", help="One line (default: the first tool file's docstring).")
@PYTHON
def pack(
    files: tuple[Path, ...],
    plugins: tuple[str, ...],
    out: Path | None,
    kind: str,
    name: str | None,
    version: str,
    author: str | None,
    description: str | None,
    python: str,
) -> None:
    """Build an MCP Bundle (.mcpb, manifest 0.4) of the tools in FILES (files or folders):
    Claude Desktop installs it by double-click, with a settings form for the environment
    variables the files declare with env() (secret ones masked).

    The bundle holds the tool files, a pyproject.toml depending on protomcp-tools (and on what
    the files' `# /// script` blocks list), and an entry that runs `protomcp run` on them; its
    manifest lists their tools and prompts. Every file is loaded first: one that fails stops it.
    """
    from protomcp_host.cli import pack as packer

    if not (files or plugins):
        raise click.UsageError("nothing to pack: give tool FILES or --plugin NAME")
    try:
        bundle = packer.plan(
            list(files),
            list(plugins),
            kind,
            python,
            name=name,
            version=version,
            author=author,
            description=description,
        )
        written = packer.write(bundle, out or Path(f"{bundle.name}.mcpb"), say=_err)
    except packer.PackError as exc:
        raise click.ClickException(str(exc)) from None
    tools = sum(len(entry["tools"]) for entry in bundle.report["files"])
    settings = len(bundle.variables())
    click.echo(
        f"wrote {written} ({kind} bundle: {tools} tool{'s' * (tools != 1)}, "
        f"{settings} setting{'s' * (settings != 1)}); open it with Claude Desktop to install it"
    )


CLIENT = click.argument(
    "client",
    type=click.Choice(
        ["claude-desktop", "claude-code", "cursor", "vscode", "gemini-cli", "goose", "mcp-json"]
    ),
)


@main.command()
@CLIENT
@SOURCES
@_source_options
@_upstream_options
@click.option("--name", help="Server name in the client's config (default: the tool file's name).")
@click.option(
    "--env", "env", multiple=True, metavar="KEY=VALUE", help="Environment for the server (repeatable)."
)
@click.option(
    "--env-file", type=click.Path(path_type=Path, dir_okay=False), help="Read KEY=VALUE lines from a file."
)
@click.option("--dev", is_flag=True, help="Install `protomcp dev` (hot reload) instead of `protomcp run`.")
@click.option(
    "--ui",
    is_flag=True,
    help="[--dev] The dev host also serves the playground; `protomcp logs` prints its URL.",
)
@click.option("--force", is_flag=True, help="Replace an existing server of the same name.")
@click.option(
    "--no-check",
    is_flag=True,
    help="Install even if FILES do not load now (by default they are loaded first, with the --env given).",
)
@click.option(
    "--discovery", type=click.Choice(["full", "search"]), help="Run option for the entry (see run)."
)
@click.option("--call-timeout", type=click.FloatRange(min=0), help="Run option for the entry (see run).")
@click.option(
    "--startup-timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Run option for the entry (see run).",
)
@click.option(
    "--processes", type=click.IntRange(min=1), metavar="N", help="Run option for the entry (see run)."
)
@click.option("--include-tag", multiple=True, metavar="TAG", help="Run option for the entry (see run).")
@click.option("--exclude-tag", multiple=True, metavar="TAG", help="Run option for the entry (see run).")
@click.option("--instructions", metavar="TEXT", help="Run option for the entry (see run).")
def install(
    client: str,
    files: tuple[Path, ...],
    modules: tuple[str, ...],
    plugins: tuple[str, ...],
    name: str | None,
    env: tuple[str, ...],
    env_file: Path | None,
    dev: bool,
    ui: bool,
    force: bool,
    no_check: bool,
    **given: Any,
) -> None:
    """Add the tools in FILES (and -m modules, --plugin plugins) to an AI client's MCP configuration.

    CLIENT is claude-desktop, claude-code, cursor, vscode, gemini-cli, goose, or mcp-json (print a
    portable "mcpServers" entry). Paths are made absolute, modules and plugins are kept by
    name; other servers in the config are
    kept and the previous file is saved next to it as .bak.
    """
    from protomcp_host.cli import install as installer

    options = installer.run_arguments(given)  # --discovery, --call-timeout...: passed on as given
    if ui and not dev:
        raise click.UsageError("--ui: only with --dev (the playground is dev's)")
    # kept as options (commands made absolute); an upstream's token variable needs --env
    upstreams = [spec.absolute() for spec in upstream_specs(given)]
    try:
        variables = installer.parse_env(env, env_file)
        sources = (  # checks the modules exist
            _sources(files, modules, plugins, sys.executable)
            if files or modules or plugins or not upstreams
            else []
        )
        if not no_check:
            _refuse_unloadable(tuple(sources), variables)
        click.echo(
            installer.install(
                client,
                list(files),
                name=name,
                env=variables,
                dev=dev,
                ui=ui,
                force=force,
                modules=modules,
                plugins=plugins,
                upstreams=upstreams,
                options=options,
            )
        )
    except installer.InstallError as exc:
        raise click.ClickException(str(exc)) from None


def _refuse_unloadable(files: tuple[Path, ...], env: dict[str, str]) -> None:
    """Load FILES as the client will (with its environment); stop with the error if one fails."""
    import anyio

    from protomcp_host.cli.doctor import check_file

    for file in files:
        if not file.exists():
            continue  # install says which are missing
        findings = anyio.run(check_file, file.resolve(), sys.executable, env, backend="asyncio")
        failed = next((f for f in findings if not f.ok and f.detail), None)
        if failed is not None:
            raise click.ClickException(
                f"{failed.text}, so the client could not start it; nothing was installed:\n{failed.detail}\n"
                "fix the file (or pass --no-check to install it anyway)"
            )


@main.command()
@CLIENT
@click.argument("name")
@click.option("--force", is_flag=True, help="Remove the entry even if protomcp did not write it.")
def uninstall(client: str, name: str, force: bool) -> None:
    """Remove the server NAME from an AI client's MCP configuration (other servers are kept)."""
    from protomcp_host.cli import install as installer

    try:
        click.echo(installer.uninstall(client, name, force=force))
    except installer.InstallError as exc:
        raise click.ClickException(str(exc)) from None


if __name__ == "__main__":
    main()
