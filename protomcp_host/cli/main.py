"""The `protomcp` command."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import Any

import click

from protomcp_host import __version__
from protomcp_host.cli.options import (
    DEV_OPTIONS,
    PYTHON,
    RUN_OPTIONS,
    SOURCE_OPTIONS,
    SOURCES,
    UPSTREAM_OPTIONS,
    DevCommand,
    RunCommand,
    skills_option,
    upstream_specs,
)
from protomcp_host.settings import RunSettings


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="protomcp")
def main() -> None:
    """protomcp: serve Python functions as MCP tools to Claude Desktop, Claude Code, Cursor or VS Code.

    Write a tool file with @tool functions, then point your AI client at
    `protomcp run /abs/path/tools.py` (or use `protomcp dev` while you edit it).
    """


@main.command(cls=RunCommand)
@RUN_OPTIONS
def run(settings: RunSettings) -> None:
    """Serve the tools in FILES (files or folders of tool files) over MCP.

    This is the command to put in your AI client's config. Each file, module and plugin
    runs in its own supervised tool process; a tool process that crashes is restarted.

    Tool processes get this environment minus the variable --auth-token-env names, plus
    PROTOMCP_FDS, PROTOMCP_HOST_PID, PROTOMCP_SPOOL and PYTHONUNBUFFERED=1, which the host sets.
    """
    _serve(settings)


@main.command(cls=DevCommand)
@DEV_OPTIONS
def dev(settings: RunSettings) -> None:
    """Serve FILES like run, and reload a tool file the moment you save it.

    The host and the client's session stay up: only the tool process is replaced, so
    your AI client sees new and changed tools without a restart. Python files under
    each tool file's folder are watched (virtualenvs, __pycache__, .git and
    node_modules are skipped). A file that fails to load leaves the previous tools
    serving and reports the error here and to the client.
    """
    _serve(settings)


def _serve(settings: RunSettings) -> None:
    from protomcp_host.cli.serving import UsageError, serve

    try:
        serve(settings)
    except UsageError as exc:
        raise click.UsageError(str(exc)) from None


SKILLS_OPTION = skills_option(
    "Also the skills in DIR (folders <name>/SKILL.md), as `run --skills DIR` serves them; repeatable."
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
@SOURCE_OPTIONS
@SKILLS_OPTION
@UPSTREAM_OPTIONS
@click.option("--json", "as_json", is_flag=True, help="Print the MCP tools/list result as JSON.")
@PYTHON
def list_command(
    files: tuple[Path, ...],
    modules: tuple[str, ...],
    plugins: tuple[str, ...],
    skills: tuple[Path, ...],
    as_json: bool,
    python: str,
    upstreams: tuple[str, ...],
    upstream_token_envs: tuple[str, ...],
    upstream_prefixes: tuple[str, ...],
) -> None:
    """Print the tools in FILES, -m modules, --plugin plugins and --upstream servers: name,
    description and parameters; then their resources, resource templates and prompts, and the
    --skills, if any."""
    import orjson

    specs = upstream_specs(upstreams, upstream_token_envs, upstream_prefixes)
    served_skills = _load_skill_folders(skills)
    sources = (
        _sources(files, modules, plugins, python, skills=skills)
        if files or modules or plugins or not specs
        else []
    )
    settings = RunSettings(python=python, upstreams=specs, skills=skills)
    served = _with_client(sources, settings, _list_everything, skills=served_skills)
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
@SOURCE_OPTIONS
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
@SOURCE_OPTIONS
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
@SOURCE_OPTIONS
@click.option(
    "--args", "args", default="{}", show_default=True, help="Arguments as a JSON object, e.g. '{\"a\": 1}'."
)
@click.option("--json", "as_json", is_flag=True, help="Print the full MCP CallToolResult as JSON.")
@click.option(
    "--call-timeout",
    default=RunSettings.call_timeout,
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
@UPSTREAM_OPTIONS
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
    upstreams: tuple[str, ...],
    upstream_token_envs: tuple[str, ...],
    upstream_prefixes: tuple[str, ...],
) -> None:
    """Call TOOL from FILE (or from -m MODULE / --plugin NAME / --upstream, then without FILE)
    once and print its result (exit status 1 if it is an error).

    Arguments are KEY=VALUE pairs (VALUE is read as JSON, e.g. n=3 or tags='["a"]', except
    for text parameters) and/or --args JSON. Progress and log messages go to stderr. A URI
    instead of TOOL reads that resource (`call tools.py config://app`); a prompt's name
    renders the prompt (its KEY=VALUE arguments are text).
    """
    from protomcp_host.cli.reading import is_uri
    from protomcp_host.cli.show import CallDisplay

    specs = upstream_specs(upstreams, upstream_token_envs, upstream_prefixes)
    files: tuple[Path, ...] = ()
    if not (modules or plugins or specs) or (
        len(words) > 1 and "=" not in words[0] and Path(words[0]).exists()
    ):
        files, words = tuple(Path(w) for w in words[:1]), words[1:]
    if not words:
        raise click.UsageError("missing TOOL (give FILE TOOL, or -m MODULE TOOL)")
    tool, pairs = words[0], words[1:]
    sources = _sources(files, modules, plugins, python) if files or modules or plugins or not specs else []
    arguments = _json_object(args)
    if binary:
        if specs or is_uri(tool):
            raise click.UsageError("--binary calls a tool of FILES (no --upstream, no resource URI)")
        from protomcp_host.cli.binary_call import call_binary

        sys.exit(call_binary(sources, tool, pairs, arguments, as_json, call_timeout or None, python))
    display = CallDisplay(tool)
    # what the call prints reaches the display as log messages: shown once, not echoed on stderr
    settings = RunSettings(python=python, upstreams=specs, call_timeout=call_timeout, echo_requests=False)
    once = partial(_call_once, tool, pairs, arguments, sources, display)
    kind, result = _with_client(sources, settings, once, on_message=display)
    _show_result(kind, result, as_json)


def _json_object(text: str) -> dict[str, Any]:
    """--args: a JSON object."""
    import orjson

    try:
        arguments = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint="--args") from None
    if not isinstance(arguments, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--args")
    return arguments


async def _call_once(
    tool: str,
    pairs: tuple[str, ...],
    given: dict[str, Any],
    sources: list[Path],
    display: Any,
    request: Any,
) -> tuple[str, dict[str, Any]]:
    """`protomcp call`: read the resource `tool` names, or call the tool, or (no such tool)
    render the prompt of that name. `given`: the --args object."""
    from protomcp_host.cli.reading import find_prompt, is_uri, prompt_arguments
    from protomcp_host.cli.show import parse_pairs
    from protomcp_host.transports.direct import RequestFailed, list_tools

    if is_uri(tool):  # a resource: read it
        if pairs or given:
            raise click.UsageError("a resource URI takes no arguments")
        return "resource", await request("resources/read", {"uri": tool})
    arguments = dict(given)
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
                texts = prompt_arguments(pairs, given)
            except ValueError as problem:
                raise click.BadParameter(str(problem), param_hint="KEY=VALUE") from None
            return "prompt", await request("prompts/get", {"name": tool, "arguments": texts})
        from protomcp_host.cli.undecorated import undecorated_hint

        hint = undecorated_hint(sources, tool)
        raise click.ClickException(f"{exc} ({hint})" if hint else str(exc)) from None
    finally:
        display.close()


def _show_result(kind: str, result: dict[str, Any], as_json: bool) -> None:
    """Print what `protomcp call` got; exit status 1 for a tool's error."""
    import orjson

    from protomcp_host.cli.reading import contents_text, messages_text

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


def _with_client(
    files: list[Path], settings: RunSettings, action: Any, on_message: Any = None, skills: Any = None
) -> Any:
    """`action(request)` with a client of a host of `files` (in this process) and its result;
    `skills`: those of the `settings.skills` folders."""
    import anyio

    from protomcp_host.app import Host
    from protomcp_host.processes.launch import StartupError, tool_files
    from protomcp_host.transports.direct import RequestFailed, direct_client

    async def go() -> Any:
        host = Host(tool_files(files), settings, stderr=_err, skills=skills)
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
@SOURCE_OPTIONS
@UPSTREAM_OPTIONS
@PYTHON
def doctor(
    files: tuple[Path, ...],
    modules: tuple[str, ...],
    plugins: tuple[str, ...],
    python: str,
    upstreams: tuple[str, ...],
    upstream_token_envs: tuple[str, ...],
    upstream_prefixes: tuple[str, ...],
) -> None:
    """Check the interpreter, tool FILES, upstream MCP servers and AI client configs; say how to
    fix each problem. Upstreams (given here or in a client's protomcp entry) are connected to
    once and their tools counted.

    Exits with status 1 when a problem was found.
    """
    specs = upstream_specs(upstreams, upstream_token_envs, upstream_prefixes)
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
    problems = anyio.run(diagnose, sources, python, Place.current(), show, list(specs), backend="asyncio")
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
@skills_option("Also serve the skills in DIR (see run): the folder goes into the bundle; repeatable.")
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
    skills: tuple[Path, ...],
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

    if not (files or plugins or skills):
        raise click.UsageError("nothing to pack: give tool FILES, --plugin NAME or --skills DIR")
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
            skills=list(skills),
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
@SOURCE_OPTIONS
@UPSTREAM_OPTIONS
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
@skills_option(
    "Also serve the skills in DIR (see run; made absolute, checked unless --no-check); repeatable."
)
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
    discovery: str | None,
    call_timeout: float | None,
    startup_timeout: float | None,
    processes: int | None,
    include_tag: tuple[str, ...],
    exclude_tag: tuple[str, ...],
    instructions: str | None,
    skills: tuple[Path, ...],
    upstreams: tuple[str, ...],
    upstream_token_envs: tuple[str, ...],
    upstream_prefixes: tuple[str, ...],
) -> None:
    """Add the tools in FILES (and -m modules, --plugin plugins) to an AI client's MCP configuration.

    CLIENT is claude-desktop, claude-code, cursor, vscode, gemini-cli, goose, or mcp-json (print a
    portable "mcpServers" entry). Paths are made absolute, modules and plugins are kept by
    name; other servers in the config are
    kept and the previous file is saved next to it as .bak.
    """
    from protomcp_host.cli import install as installer

    options = installer.run_arguments(  # passed on as given
        {
            "discovery": discovery,
            "call_timeout": call_timeout,
            "startup_timeout": startup_timeout,
            "processes": processes,
            "include_tag": include_tag,
            "exclude_tag": exclude_tag,
            "instructions": instructions,
        }
    )
    if ui and not dev:
        raise click.UsageError("--ui: only with --dev (the playground is dev's)")
    # kept as options (commands made absolute); an upstream's token variable needs --env
    specs = [spec.absolute() for spec in upstream_specs(upstreams, upstream_token_envs, upstream_prefixes)]
    try:
        variables = installer.parse_env(env, env_file)
        sources = (  # checks the modules exist
            _sources(files, modules, plugins, sys.executable, skills=skills)
            if files or modules or plugins or not specs
            else []
        )
        if not no_check:
            _refuse_unloadable(tuple(sources), variables)
            _load_skill_folders(skills)  # one run would refuse stops it here
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
                upstreams=specs,
                skills=skills,
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
