"""The commands that show what tool files serve, without serving them: `protomcp list`,
`inspect` and `proto-schema`; and `protomcp plugins`, the tool plugins installed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from protomcp_host.cli.loading import load_skill_folders, source_files, with_client
from protomcp_host.cli.options import (
    PYTHON,
    SOURCE_OPTIONS,
    SOURCES,
    UPSTREAM_OPTIONS,
    skills_option,
    upstream_specs,
)
from protomcp_host.settings import RunSettings

SKILLS_OPTION = skills_option(
    "Also the skills in DIR (folders <name>/SKILL.md), as `run --skills DIR` serves them; repeatable."
)


@click.command(name="list")
@SOURCES
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
    served_skills = load_skill_folders(skills)
    sources = (
        source_files(files, modules, plugins, python, skills=skills)
        if files or modules or plugins or not specs
        else []
    )
    settings = RunSettings(python=python, upstreams=specs, skills=skills)
    scopes: dict[tuple[str, str], list[str]] = {}

    async def listing(request: Any, host: Any) -> dict[str, list[dict[str, Any]]]:
        served = await _list_everything(request)
        scopes.update(_scopes_of(host, served))
        return served

    served = with_client(sources, settings, listing, skills=served_skills, with_host=True)
    if as_json:
        shown = {key: value for key, value in served.items() if value or key == "tools"}
        click.echo(orjson.dumps(shown, option=orjson.OPT_INDENT_2).decode())
        return
    from protomcp_host.cli.show import signature

    def marks(key: str, entry: dict[str, Any]) -> str:
        needed = scopes.get((key, _key_of(key, entry)))
        return f"  [scopes={','.join(needed)}]" if needed else ""

    from protomcp_host.cli.inspection import app_flags

    for entry in served["tools"]:
        flags = app_flags((entry.get("_meta") or {}).get("ui"))  # MCP Apps: the app it shows
        app = f"  [{' '.join(flags)}]" if flags else ""
        click.echo(f"{entry['name']}{signature(entry.get('inputSchema', {}))}{marks('tools', entry)}{app}")
        _describe(entry)
    for key, title, name_of in LISTED[1:]:
        if served[key]:
            click.echo(f"\n{title}:")
            for entry in served[key]:
                click.echo(name_of(entry) + marks(key, entry))
                _describe(entry)


def _describe(entry: dict[str, Any]) -> None:
    description = (entry.get("description") or entry.get("frontmatter", {}).get("description") or "").strip()
    if description:
        click.echo(f"    {description.splitlines()[0]}")


def _app(resource: dict[str, Any]) -> str:
    from protomcp_host.cli.inspection import app_mark

    return app_mark(resource)


def _prompt_line(entry: dict[str, Any]) -> str:
    arguments = [a["name"] + ("" if a.get("required") else "?") for a in entry.get("arguments") or []]
    return f"{entry['name']}({', '.join(arguments)})"


LISTED: list[tuple[str, str, Any]] = [  # result key, heading, how an entry is shown
    ("tools", "Tools", None),
    (
        "resources",
        "Resources",
        lambda entry: f"{entry['uri']}  {entry.get('name', '')}".rstrip() + _app(entry),
    ),
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


def _scopes_of(host: Any, served: dict[str, list[dict[str, Any]]]) -> dict[tuple[str, str], list[str]]:
    """The OAuth scopes each listed entry needs (@tool(scopes=...)), by (result key, name):
    the host's, since MCP lists do not carry them."""
    found: dict[tuple[str, str], list[str]] = {}
    kept = {
        "tools": host.catalog.get,
        "resources": host.features.resources.get,
        "resourceTemplates": host.features.templates.get,
        "prompts": host.features.prompts.get,
    }
    for key, lookup in kept.items():
        for entry in served.get(key, []):
            owned = lookup(_key_of(key, entry))
            if owned is not None and owned.scopes:
                found[(key, _key_of(key, entry))] = sorted(owned.scopes)
    return found


def _key_of(key: str, entry: dict[str, Any]) -> str:
    """What names a listed entry: a resource's URI, a template's URI template, else its name."""
    field = {"resources": "uri", "resourceTemplates": "uriTemplate"}.get(key, "name")
    return str(entry.get(field, ""))


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


@click.command(name="inspect")
@SOURCES
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
        found = tool_files(source_files(files, modules, plugins, python, skills=skills))
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


@click.command(name="proto-schema")
@SOURCES
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
        found = tool_files(source_files(files, modules, plugins, python))
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


@click.command()
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
