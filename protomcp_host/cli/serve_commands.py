"""`protomcp run` and `protomcp dev`, which serve, and `protomcp logs`, which follows the dev hosts."""

from __future__ import annotations

from pathlib import Path

import click

from protomcp_host.cli.run_options import DEV_OPTIONS, RUN_OPTIONS, DevCommand, RunCommand
from protomcp_host.settings import RunSettings


@click.command(cls=RunCommand)
@RUN_OPTIONS
def run(settings: RunSettings) -> None:
    """Serve the tools in FILES (files or folders of tool files) over MCP.

    This is the command to put in your AI client's config. Each file, module and plugin
    runs in its own supervised tool process; a tool process that crashes is restarted.

    Tool processes get this environment minus the variable --auth-token-env names, plus
    PROTOMCP_FDS, PROTOMCP_HOST_PID, PROTOMCP_SPOOL and PYTHONUNBUFFERED=1, which the host sets.
    """
    _serve(settings)


@click.command(cls=DevCommand)
@DEV_OPTIONS
def dev(settings: RunSettings) -> None:
    """Serve FILES like run, and reload a tool file the moment you save it.

    The host and the client's session stay up: only the tool process is replaced, so
    your AI client sees new and changed tools without a restart. Python files under
    each tool file's folder are watched (virtualenvs, __pycache__, .git and
    node_modules are skipped), and the files its resources declare with
    @resource(files=[...]) (an app's HTML). A file that fails to load leaves the previous tools
    serving and reports the error here and to the client.
    """
    _serve(settings)


def _serve(settings: RunSettings) -> None:
    from protomcp_host.cli.serving import UsageError, serve

    try:
        serve(settings)
    except UsageError as exc:
        raise click.UsageError(str(exc)) from None


@click.command()
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
