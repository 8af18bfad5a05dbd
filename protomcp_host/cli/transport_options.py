"""How clients connect: --transport and the HTTP options (address, host and origin checks,
authentication, limits, workers), and the HttpSettings they make.

The HTTP options default to None, so that a stdio run can say which of them do not apply, and
then to HttpSettings' own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from protomcp_host.transports.http.guard import Authenticator
    from protomcp_host.transports.http.introspection import Introspector
    from protomcp_host.transports.http.server import HttpSettings

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
        "--metrics-token-env",
        default=None,
        metavar="NAME",
        help="[http/sse] GET /metrics (Prometheus) answers loopback clients without a token; with this "
        "option, clients elsewhere (or behind a proxy: a request with X-Forwarded-For, Forwarded or "
        "X-Real-IP) are let in with 'Authorization: Bearer <token>', the token being the value of the "
        "environment variable NAME (which tool processes do not get). Without it they get 403.",
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


def _flags(options: list[Any]) -> dict[str, str]:
    """Parameter name -> flag of each option (read from the declarations, not a second list)."""

    def nothing(**_: Any) -> None:
        pass

    declared: Any = nothing
    for option in reversed(options):  # (click lists a command's options in decorator order)
        declared = option(declared)
    return {param.name: param.opts[0] for param in click.command()(declared).params if param.name}


HTTP_FLAGS = _flags(HTTP_OPTIONS)  # for telling a stdio user which flags do not apply
CONNECTION_LIMITS = ("header_timeout", "keep_alive_timeout", "max_connections")
# not used by the HTTP+SSE transport (2024-11-05) (--workers: its sessions would need affinity)
STREAMABLE_ONLY = ("path", "session_timeout", "max_sessions", "workers", "session_id_header")


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
    settings.metrics_token = _metrics_token(given["metrics_token_env"])
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


def _metrics_token(name: str | None) -> str | None:
    """--metrics-token-env NAME: the token scrapers other than loopback present."""
    if not name:
        return None
    token = os.environ.get(name, "")
    if not token:
        raise click.UsageError(f"--metrics-token-env {name}: the environment variable {name} is not set")
    return token


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
