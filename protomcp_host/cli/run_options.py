"""The options of `run` and `dev` as groups of the shared declarations, and the RunSettings
they make. `RunCommand` and `DevCommand` hand their command's function the RunSettings built
from the options given, checked: a combination that cannot be served is a usage error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from protomcp_host.cli.oauth_options import OAUTH_SERVER_OPTIONS, oauth_server_settings
from protomcp_host.cli.options import (
    CALL_TIMEOUT,
    DISCOVERY,
    DRAIN_TIMEOUT,
    EXCLUDE_TAG,
    HEARTBEAT_TIMEOUT,
    INCLUDE_TAG,
    INSTRUCTIONS,
    MAX_IN_FLIGHT,
    PAGE_SIZE,
    PROCESSES,
    PYTHON,
    RATE_LIMIT,
    SCHEMA_REGISTRY,
    SERVER_NAME,
    SKILLS,
    SOURCE_OPTIONS,
    SOURCES,
    STARTUP_TIMEOUT,
    STORE,
    UPSTREAM_OPTIONS,
    option_group,
    rate_limit_specs,
    upstream_specs,
)
from protomcp_host.cli.peer_options import PEER_OPTIONS, peer_settings
from protomcp_host.cli.transport_options import HTTP_OPTIONS, TRANSPORT, http_settings
from protomcp_host.settings import DevSettings, RunSettings

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

AUDIT_LOG = click.option(
    "--audit-log",
    default=None,
    metavar="FILE|-",
    help="Append one JSON line per tool call to FILE: time (UTC), principal (the signed-in subject; "
    "over stdio the local user), client, tool, outcome (ok, error, refused, cancelled) and duration. "
    "'-' writes to stderr over stdio (stdout is the MCP stream there), to stdout over HTTP. The "
    "workers of --workers append to the same file, a whole line at a time.",
)
AUDIT_ARGUMENTS = click.option(
    "--audit-arguments",
    is_flag=True,
    help="[--audit-log] Also write each call's arguments (they may hold what users would not want kept).",
)

# The groups, each in the order --help lists it
IDENTITY_OPTIONS = option_group(SERVER_NAME, INSTRUCTIONS)
CATALOG_OPTIONS = option_group(SKILLS, SCHEMA_REGISTRY, DISCOVERY, EXCLUDE_TAG, INCLUDE_TAG)
LIMIT_OPTIONS = option_group(
    RATE_LIMIT, MAX_IN_FLIGHT, DRAIN_TIMEOUT, HEARTBEAT_TIMEOUT, STARTUP_TIMEOUT, CALL_TIMEOUT, PAGE_SIZE
)
SERVE_OPTIONS = option_group(
    TRANSPORT,
    CATALOG_OPTIONS,
    *HTTP_OPTIONS,
    *OAUTH_SERVER_OPTIONS,
    PYTHON,
    STORE,
    PROCESSES,
    LIMIT_OPTIONS,
    AUDIT_LOG,
    AUDIT_ARGUMENTS,
)
RUN_OPTIONS = option_group(
    SOURCES, SOURCE_OPTIONS, UPSTREAM_OPTIONS, PEER_OPTIONS, IDENTITY_OPTIONS, SERVE_OPTIONS
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
    bridge = peer_settings(given)
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
        rate_limits=rate_limit_specs(given["rate_limits"]),
        processes=given["processes"],
        store=given["store"],
        http=http,
        oauth_server=oauth_server_settings(given, http),
        auth_token_env=given["auth_token_env"],
        metrics_token_env=given["metrics_token_env"],
        audit_log=given["audit_log"],
        audit_arguments=given["audit_arguments"],
        oauth_client_envs=tuple(
            name for name in (given["oauth_client_id_env"], given["oauth_client_secret_env"]) if name
        ),
        dev=dev,
    )
    _check_serving(settings)
    return settings


def _check_serving(settings: RunSettings) -> None:
    """The combinations of valid options that cannot be served."""
    if settings.audit_arguments and settings.audit_log is None:
        raise click.UsageError("--audit-arguments: only with --audit-log")
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
