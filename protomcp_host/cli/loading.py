"""What the commands that load tool files share: the files of FILES, -m modules and --plugin
plugins; the skills of --skills folders; a host in this process with a client to ask it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from protomcp_host.settings import RunSettings


def load_skill_folders(folders: tuple[Path, ...]) -> Any:
    """--skills of list and inspect: the skills (None without the option); a bad one is an error."""
    if not folders:
        return None
    from protomcp_host.skillfolder import SkillError, load_skills

    try:
        return load_skills(folders)
    except (SkillError, OSError) as exc:
        raise click.ClickException(str(exc)) from None


def source_files(
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


def with_client(
    files: list[Path],
    settings: RunSettings,
    action: Any,
    on_message: Any = None,
    skills: Any = None,
    with_host: bool = False,
) -> Any:
    """`action(request)` with a client of a host of `files` (in this process) and its result
    (`action(request, host)` with `with_host`: what MCP does not list, such as scopes);
    `skills`: those of the `settings.skills` folders."""
    import anyio

    from protomcp_host.app import Host
    from protomcp_host.processes.launch import StartupError, tool_files
    from protomcp_host.transports.direct import RequestFailed, direct_client

    async def go() -> Any:
        host = Host(tool_files(files), settings, stderr=err, skills=skills)
        async with direct_client(host, on_message=on_message) as request:
            return await (action(request, host) if with_host else action(request))

    try:
        return anyio.run(go, backend="asyncio")
    except StartupError as exc:
        raise click.ClickException(str(exc)) from None
    except RequestFailed as exc:
        raise click.ClickException(str(exc)) from None


def err(text: str) -> None:
    click.echo(text, err=True)
