"""Options several commands share, one declaration each: what to serve (FILES, -m, --plugin,
--upstream, --skills), the interpreter, and the run options (--call-timeout, --discovery...).

Each run option's default is the RunSettings field's (the one copy of a run's defaults). The run
options `install` passes on to the entry it writes are RunOptions: run and install take the
same declaration (install with no default, so only what is given goes into the entry).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from protomcp_host.settings import RunSettings

if TYPE_CHECKING:
    from protomcp_host.upstream.spec import UpstreamSpec
    from protomcp_sdk.wire.rates import Rate

Option = Callable[[Any], Any]  # a click parameter decorator


def option_group(*options: Option) -> Option:
    """Several click options as one decorator; --help lists them in the order given."""

    def apply(fn: Any) -> Any:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return apply


@dataclass(frozen=True)
class RunOption:
    """An option of `run` that `install` passes on to the entry it writes, declared once for both:
    applied as a decorator it is run's option (with its default, shown); `passed_on` is the same
    option as install takes it (no default: only what is given goes into the entry)."""

    flag: str
    name: str  # the click parameter: the RunSettings field it sets
    help: str
    type: click.ParamType[Any] | None = None
    metavar: str | None = None
    multiple: bool = False
    default: Any = None  # run's (the RunSettings field's); None: none to show

    def __call__(self, fn: Any) -> Any:
        shown = self.default is not None
        return self._option(self.help, default=self.default, show_default=shown)(fn)

    def passed_on(self) -> Option:
        return self._option("Run option for the entry (see run).")

    def _option(self, help: str, **defaults: Any) -> Option:
        return click.option(
            self.flag,
            self.name,
            type=self.type,
            metavar=self.metavar,
            multiple=self.multiple,
            help=help,
            **defaults,
        )

    def words(self, value: Any) -> list[str]:
        """The entry's arguments for the value given (None or (): not given)."""
        given = value if isinstance(value, (tuple, list)) else [value]
        return [
            word
            for item in given
            if item is not None
            for word in (self.flag, f"{item:g}" if isinstance(item, float) else str(item))
        ]


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


INSTRUCTIONS = RunOption(
    "--instructions",
    "instructions",
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

CALL_TIMEOUT = RunOption(
    "--call-timeout",
    "call_timeout",
    default=RunSettings.call_timeout,
    type=click.FloatRange(min=0),
    help="Seconds a tool call may run before it is cancelled and reported as an error (0 = no limit).",
)

STARTUP_TIMEOUT = RunOption(
    "--startup-timeout",
    "startup_timeout",
    default=RunSettings.startup_timeout,
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

PROCESSES = RunOption(
    "--processes",
    "processes",
    default=RunSettings.processes,
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

RATE_LIMIT = RunOption(
    "--rate-limit",
    "rate_limits",
    multiple=True,
    metavar="TOOL|*=N/UNIT",
    help="At most N calls of TOOL per second, minute or hour (UNIT) by each caller, e.g. "
    "--rate-limit 'search=10/minute'; '*=N/UNIT' limits every tool without a limit of its own. "
    "Replaces the tool's @tool(rate_limit=...). A caller is the signed-in user (OAuth); callers "
    "without one (stdio, --auth-token-env, no auth) count together. Shared by every host of a "
    "--store. A call over it is an error result saying when to retry. Repeatable.",
)

INCLUDE_TAG = RunOption(
    "--include-tag",
    "include_tags",
    multiple=True,
    metavar="TAG",
    help="Expose only tools with this tag (@tool(tags={...})); repeatable: any of them.",
)

EXCLUDE_TAG = RunOption(
    "--exclude-tag",
    "exclude_tags",
    multiple=True,
    metavar="TAG",
    help="Do not expose tools with this tag; repeatable.",
)

DISCOVERY = RunOption(
    "--discovery",
    "discovery",
    type=click.Choice(["full", "search"]),
    default=RunSettings.discovery,
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

# What to serve, each group in the order --help lists it
SOURCES = click.argument("files", nargs=-1, type=click.Path(path_type=Path))
SOURCE_OPTIONS = option_group(MODULE, PLUGIN)
UPSTREAM_OPTIONS = option_group(UPSTREAM_PREFIX, UPSTREAM_TOKEN_ENV, UPSTREAM)


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


_TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


def rate_limit_specs(given: tuple[str, ...]) -> tuple[tuple[str, Rate], ...]:
    """The --rate-limit options as (tool name or "*", rate); UsageError when malformed."""
    from protomcp_sdk.wire.rates import parse_rate

    limits: dict[str, Rate] = {}
    for spec in given:
        name, sep, text = spec.partition("=")
        name = name.strip()
        if not sep or not (name == "*" or _TOOL_NAME.fullmatch(name)):
            raise click.UsageError(
                f"--rate-limit {spec!r}: expected TOOL=N/UNIT or *=N/UNIT (UNIT: second, minute or "
                "hour), e.g. --rate-limit 'search=10/minute'"
            )
        if name in limits:
            raise click.UsageError(f"--rate-limit: {name!r} is given twice")
        try:
            limits[name] = parse_rate(text)
        except ValueError as exc:
            raise click.UsageError(f"--rate-limit {spec!r}: {exc}") from None
    return tuple(limits.items())


# The run options `install` passes on to the entry it writes, in the order its --help lists them
PASSED_ON = (
    DISCOVERY,
    CALL_TIMEOUT,
    STARTUP_TIMEOUT,
    PROCESSES,
    RATE_LIMIT,
    INCLUDE_TAG,
    EXCLUDE_TAG,
    INSTRUCTIONS,
)
PASSED_ON_OPTIONS = option_group(*(option.passed_on() for option in PASSED_ON))


def run_arguments(given: Mapping[str, Any]) -> list[str]:
    """The entry's `--flag value` words for the PASSED_ON options given (by click parameter
    name; None or (): not given)."""
    return [word for option in PASSED_ON for word in option.words(given[option.name])]
