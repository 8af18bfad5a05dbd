"""The commands that put tools into AI clients: `protomcp install` and `uninstall` (a client's
MCP configuration), `pack` (an MCP Bundle) and `doctor` (what stops a client from using them)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from protomcp_host.cli.loading import err, load_skill_folders, source_files
from protomcp_host.cli.options import (
    PASSED_ON_OPTIONS,
    PYTHON,
    SOURCE_OPTIONS,
    SOURCES,
    UPSTREAM_OPTIONS,
    rate_limit_specs,
    run_arguments,
    skills_option,
    upstream_specs,
)


@click.command()
@SOURCES
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
    sources = source_files(files, modules, plugins, python) if modules or plugins else list(files)
    problems = anyio.run(diagnose, sources, python, Place.current(), show, list(specs), backend="asyncio")
    click.echo(f"{problems} problem{'s' * (problems != 1)} found." if problems else "No problems found.")
    sys.exit(1 if problems else 0)


@click.command()
@SOURCES
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
        written = packer.write(bundle, out or Path(f"{bundle.name}.mcpb"), say=err)
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


@click.command()
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
@PASSED_ON_OPTIONS
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
    skills: tuple[Path, ...],
    upstreams: tuple[str, ...],
    upstream_token_envs: tuple[str, ...],
    upstream_prefixes: tuple[str, ...],
    **passed_on: Any,  # the values of the PASSED_ON run options, by name (None or (): not given)
) -> None:
    """Add the tools in FILES (and -m modules, --plugin plugins) to an AI client's MCP configuration.

    CLIENT is claude-desktop, claude-code, cursor, vscode, gemini-cli, goose, or mcp-json (print a
    portable "mcpServers" entry). Paths are made absolute, modules and plugins are kept by
    name; other servers in the config are
    kept and the previous file is saved next to it as .bak.
    """
    from protomcp_host.cli import install as installer

    rate_limit_specs(passed_on["rate_limits"])  # a malformed one is refused here, not when the client starts
    options = run_arguments(passed_on)  # passed on as given
    if ui and not dev:
        raise click.UsageError("--ui: only with --dev (the playground is dev's)")
    # kept as options (commands made absolute); an upstream's token variable needs --env
    specs = [spec.absolute() for spec in upstream_specs(upstreams, upstream_token_envs, upstream_prefixes)]
    try:
        variables = installer.parse_env(env, env_file)
        sources = (  # checks the modules exist
            source_files(files, modules, plugins, sys.executable, skills=skills)
            if files or modules or plugins or not specs
            else []
        )
        if not no_check:
            _refuse_unloadable(tuple(sources), variables)
            load_skill_folders(skills)  # one run would refuse stops it here
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


@click.command()
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
