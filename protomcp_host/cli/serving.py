"""Serving `run` and `dev`: start the tool processes, open the store, run the host.

No click here: `protomcp run FILE...` with no options (the form AI clients' configs hold) is
served from cli/entry.py through `serve_plain` without importing the CLI (click and every
command's options: ~1.4 MB of resident memory for the host's whole life). The commands in
cli/serve_commands.py build the RunSettings from their options, call `serve` and turn `UsageError` into
click's.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from protomcp_host import __version__
from protomcp_host.settings import DevSettings, RunSettings

if TYPE_CHECKING:
    from anyio import Event
    from anyio.abc import TaskStatus

    from protomcp_host.app import Host
    from protomcp_host.processes.launch import Launched
    from protomcp_host.protocol.skills import Skills
    from protomcp_host.run import Companion
    from protomcp_host.store.base import Store
    from protomcp_host.transports.http.server import HttpSettings
    from protomcp_host.upstream.spec import UpstreamSpec


class UsageError(Exception):
    """A command line that cannot be served (cli/serve_commands.py shows it as click's usage error)."""


def echo(text: str) -> None:
    """A line on stderr in one write: the workers of --workers share it, and a line cut in two
    (print() writes the newline apart when stderr is unbuffered) could be cut into by theirs."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def plain_settings(paths: Sequence[str]) -> RunSettings:
    """What `protomcp run PATHS...` without options is asked to do: every setting at its default."""
    return RunSettings(files=tuple(Path(path) for path in paths))


def serve_plain(paths: list[str]) -> None:
    """`protomcp run PATHS...` without options."""
    try:
        serve(plain_settings(paths))
    except UsageError as exc:  # (none is possible with files and no options; said like click)
        echo(f"Error: {exc}")
        sys.exit(2)


def _check_upstreams(specs: tuple[UpstreamSpec, ...]) -> None:
    """Before anything starts: the mcp library is there, and the upstreams' tokens are set."""
    import importlib.util

    from protomcp_host.upstream.spec import EXTRA_HINT

    if importlib.util.find_spec("mcp") is None:
        raise UsageError(f"--upstream needs the official MCP client library: {EXTRA_HINT}")
    for spec in specs:
        if spec.token_env and not os.environ.get(spec.token_env):
            raise UsageError(
                f"--upstream-token-env {spec.name}={spec.token_env}: the environment variable "
                f"{spec.token_env} is not set"
            )


def _load_skills(folders: tuple[Path, ...], page_size: int) -> Skills | None:
    """--skills: the skills to serve (None without the option); a bad one stops the start."""
    if not folders:
        return None
    from protomcp_host.skillfolder import SkillError, load_skills

    try:
        return load_skills(folders, page_size)
    except SkillError as exc:
        echo(f"protomcp: cannot start: {exc}")
        sys.exit(1)
    except OSError as exc:
        echo(f"protomcp: cannot start: --skills: {exc}")
        sys.exit(1)


def serve(settings: RunSettings) -> None:
    """Start the tool processes, open the store, serve until the client goes or a signal comes."""
    import signal

    # Signals before the event loop's own handlers exist: remembered, then a clean shutdown.
    signalled: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _: signalled.append(signum))
    if not (
        settings.files
        or settings.modules
        or settings.plugins
        or settings.upstreams
        or settings.bridge
        or settings.skills
    ):
        raise UsageError(
            "nothing to serve: give tool FILES, -m MODULE, --plugin NAME, --upstream, --peer or --skills"
        )
    skills = _load_skills(settings.skills, settings.page_size)
    if settings.upstreams:
        _check_upstreams(settings.upstreams)
    worker = _worker(settings, signalled)
    launched, settings = _launch(settings)
    store = _open_store(settings.store)
    import anyio

    from protomcp_host.run import serve as serve_host

    run = partial(
        serve_host,
        settings,
        launched,
        store=store,
        skills=skills,
        signalled=signalled,
        banner=partial(_banner, worker, settings.auth_token_env),
        companions=_companions(settings.dev),
    )
    sys.exit(anyio.run(run, backend="asyncio"))


def _worker(settings: RunSettings, signalled: list[int]) -> str | None:
    """--workers N: this process's worker number (None: no workers). The parent, which
    serves no tools itself, supervises the workers here and exits."""
    http = settings.http
    if http is None or http.workers <= 1:
        return None
    from protomcp_host.transports.http.affinity import Affinity
    from protomcp_host.transports.http.workers import inherited_socket

    http.sock = inherited_socket()
    http.affinity = Affinity.from_env()
    if http.sock is None:  # the parent
        sys.exit(_run_workers(http, settings.drain_timeout, signalled))
    return os.environ.get("PROTOMCP_WORKER", "?")


def _launch(settings: RunSettings) -> tuple[dict[Path, Launched], RunSettings]:
    """Start the tool processes first, so they boot while this process imports the host. The
    settings come back with the instructions filled in (None: the tool files' docstrings)."""
    from protomcp_host.processes.launch import StartupError, end_prestart, launch, tool_files

    python, hidden = settings.python, settings.hidden_env
    try:
        sources = list(settings.files)
        if settings.modules or settings.plugins:
            from protomcp_host.cli.plugins import resolve

            sources += resolve(list(settings.modules), list(settings.plugins), python, hidden)
        how = settings.launch_settings()
        launched = {file: launch(file, how) for file in tool_files(sources)}
        end_prestart()
    except StartupError as exc:
        echo(f"protomcp: cannot start: {exc}")
        sys.exit(1)
    except OSError as exc:
        echo(f"protomcp: cannot start the tool process with {python}: {exc.strerror}")
        sys.exit(1)
    if settings.instructions is None:
        from protomcp_host.processes.launch import module_docstring

        docs = [module_docstring(file) for file in launched]
        settings = replace(settings, instructions="\n\n".join(doc for doc in docs if doc) or None)
    return launched, settings


def _open_store(url: str | None) -> Store:
    """--store URL (opened after the launch: the store module imports anyio, which the tool
    processes need not wait for)."""
    from protomcp_host.store.base import StoreError
    from protomcp_host.store.open import open_store

    try:
        return open_store(url, echo)
    except StoreError as exc:
        echo(f"protomcp: cannot start: {exc}")
        sys.exit(1)


def _banner(worker: str | None, token_env: str | None, host: Host, url: str | None, reload: bool) -> str:
    """What run/dev print for a person at a terminal (a worker of --workers: that it serves)."""
    if worker is not None:  # the parent says where it serves
        from protomcp_host.transports.http.workers import say_ready

        say_ready()
        return f"protomcp: worker {worker} (pid {os.getpid()}) serving"
    from protomcp_host.cli.banner import banner

    return banner(host, url, reload, token_env)


UI_PORT = 6280  # dev --ui: the playground's port unless it is taken


def _companions(dev: DevSettings | None) -> tuple[Companion, ...]:
    """What runs beside a dev host: its journal (first: it hears the playground's URL), and
    with --ui the playground."""
    if dev is None:
        return ()
    if dev.ui:
        return (_journal, partial(_playground, dev.ui_port))
    return (_journal,)


async def _playground(
    port: int | None, host: Host, shutdown: Event, *, task_status: TaskStatus[None]
) -> None:
    """The --ui companion; imported only once the tool processes have been launched (a port
    taken, say by a sibling copy, falls back to a free one)."""
    from protomcp_host.playground.server import serve_playground

    await serve_playground(host, shutdown, UI_PORT if port is None else port, task_status=task_status)


async def _journal(host: Host, shutdown: Event, *, task_status: TaskStatus[None]) -> None:
    """dev's journal for `protomcp logs`."""
    from protomcp_host.cli.devjournal import journal_companion

    await journal_companion(host, shutdown, task_status=task_status)


def _run_workers(http: HttpSettings, drain_timeout: float, signalled: list[int]) -> int:
    """--workers N: bind the port, start N copies of this command on it, supervise them."""
    import anyio

    from protomcp_host.processes.launch import StartupError
    from protomcp_host.transports.http.server import listen, url_of
    from protomcp_host.transports.http.workers import run_workers

    try:
        sock = listen(http)
    except StartupError as exc:
        echo(f"protomcp: cannot start: {exc}")
        return 1
    url = url_of(http, sock.getsockname()[1])

    def announce() -> None:
        echo(f"protomcp {__version__}: {http.workers} workers serving at {url}")

    command = [sys.executable, "-m", "protomcp_host", *sys.argv[1:]]
    try:
        return anyio.run(
            run_workers,
            command,
            sock,
            http.workers,
            drain_timeout,
            echo,
            announce,
            signalled,
            backend="asyncio",
        )
    finally:
        sock.close()
