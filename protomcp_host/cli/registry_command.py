"""`protomcp registry`: a server.json for the official MCP Registry, from the tool files (their
description and the variables they declare), with the packages and remotes that run them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from protomcp_host.cli.loading import err
from protomcp_host.cli.options import PYTHON, SOURCES

if TYPE_CHECKING:
    from protomcp_host.cli.python_project import PythonProject


@click.command()
@SOURCES
@click.option(
    "--name",
    "server_name",
    required=True,
    metavar="NAMESPACE/NAME",
    help="The server's name in the registry: io.github.OWNER/NAME for the GitHub login OWNER, or "
    "com.example/NAME for a domain you own (the registry checks either when you publish).",
)
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("server.json"),
    show_default=True,
    help="The server.json to write.",
)
@click.option(
    "--mcpb",
    "mcpb",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="OUT.mcpb",
    help="Also build the tools' MCP Bundle into OUT.mcpb (as `pack` does) and list it, with its "
    "sha256; needs --mcpb-url.",
)
@click.option(
    "--mcpb-url",
    metavar="URL",
    help="Where OUT.mcpb will be downloaded from, which the server.json names: a GitHub or GitLab "
    "release asset, e.g. https://github.com/OWNER/REPO/releases/download/v1.0.0/NAME.mcpb.",
)
@click.option(
    "--pypi",
    is_flag=True,
    help="The project the FILES belong to (the pyproject.toml beside or above them) is published "
    "on PyPI: list that package, run with uvx, and check its README for the mcp-name marker.",
)
@click.option(
    "--remote",
    "remotes",
    multiple=True,
    metavar="URL",
    help="Also list a deployed server: the public https:// URL of its Streamable HTTP endpoint; repeatable.",
)
@click.option(
    "--version",
    "version",
    help="The server's version (default: the pyproject.toml's); one per publication.",
)
@click.option(
    "--description",
    help="One line, at most 100 characters (default: the first tool file's docstring, else the "
    "pyproject.toml's description).",
)
@click.option("--repository", metavar="URL", help="The source repository, on GitHub or GitLab.")
@PYTHON
def registry(
    files: tuple[Path, ...],
    server_name: str,
    out: Path,
    mcpb: Path | None,
    mcpb_url: str | None,
    pypi: bool,
    remotes: tuple[str, ...],
    version: str | None,
    description: str | None,
    repository: str | None,
    python: str,
) -> None:
    """Write a server.json for the official MCP Registry (registry.modelcontextprotocol.io)
    listing the tools in FILES: the schema's current version, the server's name, description and
    version, and a package for each way to run it (--mcpb, --pypi) with the environment variables
    the files declare with env(); --remote lists a deployed server. Every file is loaded first.

    Publish it with the registry's own CLI, mcp-publisher (login, then publish).
    """
    from protomcp_host.cli import pack as packer
    from protomcp_host.cli import server_json as doc
    from protomcp_host.cli.python_project import ProjectError, find_project

    if not files:
        raise click.UsageError("give the tool FILES the server serves")
    if not (mcpb or pypi or remotes):
        raise click.UsageError(
            "nothing runs the server: give --mcpb OUT.mcpb --mcpb-url URL, --pypi or --remote URL"
        )
    if (mcpb is None) != (mcpb_url is None):
        raise click.UsageError(
            "--mcpb and --mcpb-url go together: the bundle, and where it is downloaded from"
        )
    try:
        doc.check_name(server_name)
        warnings = doc.check_mcpb_url(mcpb_url) if mcpb_url else []
        for url in remotes:
            doc.check_remote_url(url)
        source = doc.repository(repository) if repository else None
        project = find_project(files[0])
        given_version = version is not None
        version = doc.check_version(version or _project_version(project))
        distribution, notes = _check_pypi(project, server_name, version, warnings) if pypi else (None, [])
    except (doc.RegistryError, ProjectError) as exc:
        raise click.ClickException(str(exc)) from None
    try:
        bundle = packer.plan(
            list(files),
            [],
            "uv",
            python,
            name=server_name.split("/")[1],
            version=version,
            description=description,
            fallback_description=project.description if project else None,
        )
        summary = doc.check_description(bundle.description)
        variables = bundle.variables()
        packages: list[dict[str, Any]] = []
        if mcpb is not None and mcpb_url is not None:  # (written last: every check is behind)
            packages.append(doc.mcpb_package(mcpb_url, packer.write(bundle, mcpb, say=err), variables))
        if distribution is not None:
            packages.append(doc.pypi_package(*distribution, variables))
        document = doc.server_json(
            server_name, summary, version, packages=packages, remotes=remotes, repository=source
        )
    except (packer.PackError, doc.RegistryError) as exc:
        raise click.ClickException(str(exc)) from None
    problems = doc.schema_errors(document)
    if problems:  # (what is built above always validates: this guards the builder)
        raise click.ClickException(
            "the server.json does not validate against the registry's schema:\n" + "\n".join(problems)
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(doc.dumps(document))
    for warning in warnings:
        err(click.style("warning: ", fg="yellow", bold=True) + warning)
    kinds = [str(p["registryType"]) for p in packages] + ["remote"] * len(remotes)
    click.echo(
        f"wrote {out} ({server_name} {version}: {', '.join(kinds)}; "
        f"{len(variables)} environment variable{'s' * (len(variables) != 1)})"
    )
    if project is not None and not given_version:
        click.echo(f"(the version of {project.file})")
    for note in notes:
        click.echo(note)
    if mcpb is not None:
        click.echo(f"upload {mcpb} to {mcpb_url} before publishing (its sha256 is in {out})")
    login = "github" if server_name.startswith("io.github.") else "dns (or http)"
    click.echo(
        f"publish it with the registry's CLI: mcp-publisher login {login}, then mcp-publisher publish {out}"
    )


def _project_version(project: PythonProject | None) -> str:
    if project is not None and project.version:
        return str(project.version)
    raise click.UsageError(
        "give --version: the server's version (no pyproject.toml with a version was found)"
    )


def _check_pypi(
    project: PythonProject | None, server_name: str, version: str, warnings: list[str]
) -> tuple[tuple[str, str], list[str]]:
    """--pypi: the project's distribution (name, version), and the notes to print. Its README
    must hold the registry's ownership marker, and `uvx NAME` runs its console script NAME: what
    is missing is added to `warnings`."""
    from protomcp_host.cli.server_json import RegistryError, check_version, readme_declares

    if project is None or not project.name:
        raise RegistryError("--pypi: no pyproject.toml with a [project] name beside or above the FILES")
    released = check_version(project.version or version, f"{project.file}'s version")
    if released != version:
        warnings.append(
            f"--pypi: the server's version is {version} and the package's {released} ({project.file}): "
            "the registry expects them to match"
        )
    marker = f"<!-- mcp-name: {server_name} -->"
    notes: list[str] = []
    readme = project.readme_text()
    if readme is None:
        warnings.append(
            f"--pypi: no README found for {project.file}; the registry publishes a PyPI package only "
            f"when its README (its PyPI description) holds the line {marker}"
        )
    elif not readme_declares(readme[1], server_name):
        warnings.append(
            f"--pypi: {readme[0]} lacks the line {marker}: the registry checks the package's PyPI "
            "description (its README) for it, so add it and release the package before publishing"
        )
    else:
        notes.append(
            f"{readme[0]} holds `mcp-name: {server_name}`, which the registry looks for in the "
            "package's PyPI description: release the package with it before publishing"
        )
    if not project.runs_as(project.name):
        warnings.append(
            f"--pypi: clients run a PyPI server as `uvx {project.name}`, which runs the console script "
            f"{project.name!r}, and {project.file} declares none ([project.scripts])"
        )
    return (project.name, released), notes
