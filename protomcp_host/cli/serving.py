"""Serving `run` and `dev`: start the tool processes, open the store, run the host.

No click here: `protomcp run FILE...` with no options (the form AI clients' configs hold) is
served from cli/entry.py through `serve_plain` without importing the CLI (click and every
command's options: ~1.4 MB of resident memory for the host's whole life). The commands in
cli/main.py call `serve` and turn `UsageError` into click's.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from protomcp_host import __version__


class UsageError(Exception):
    """A command line that cannot be served (cli/main.py shows it as click's usage error)."""


def echo(text: str) -> None:
    """A line on stderr in one write: the workers of --workers share it, and a line cut in two
    (print() writes the newline apart when stderr is unbuffered) could be cut into by theirs."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


PLAIN_RUN: dict[str, Any] = {
    # what `protomcp run FILE...` passes with every option at its default
    # (tests/cli/test_cli.py checks it against the click command's defaults)
    "modules": (),
    "plugins": (),
    "server_name": None,
    "instructions": None,
    "python": sys.executable,
    "call_timeout": 300.0,
    "page_size": 1000,
    "include_tags": (),
    "exclude_tags": (),
    "processes": 1,
    "store": None,
    "discovery": "full",
    "schema_registry": None,
    "http": None,
    "token_env": None,
    "upstreams": [],
    "bridge": None,
    "skills": (),
    "drain_timeout": 5.0,
    "max_in_flight": 1000,
    "startup_timeout": 30.0,
    "heartbeat_timeout": 15.0,
}


def serve_plain(paths: list[str]) -> None:
    """`protomcp run PATHS...` without options."""
    try:
        serve(tuple(map(Path, paths)), **PLAIN_RUN)
    except UsageError as exc:  # (none is possible with files and no options; said like click)
        echo(f"Error: {exc}")
        sys.exit(2)


def _check_upstreams(specs: list[Any]) -> None:
    """Before anything starts: the mcp library is there, and the upstreams' tokens are set
    (and kept out of the processes the host starts)."""
    import importlib.util

    from protomcp_host.processes.launch import SECRET_ENV
    from protomcp_host.upstream.spec import EXTRA_HINT

    if importlib.util.find_spec("mcp") is None:
        raise UsageError(f"--upstream needs the official MCP client library: {EXTRA_HINT}")
    for spec in specs:
        if spec.token_env:
            if not os.environ.get(spec.token_env):
                raise UsageError(
                    f"--upstream-token-env {spec.name}={spec.token_env}: the environment variable "
                    f"{spec.token_env} is not set"
                )
            SECRET_ENV.add(spec.token_env)


def _load_skills(folders: tuple[Path, ...], page_size: int) -> Any:
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


def serve(files: tuple[Path, ...], **options: Any) -> None:
    """Start the tool processes, open the store, serve until the client goes or a signal comes."""
    import signal

    # Signals before the event loop's own handlers exist: remembered, then a clean shutdown.
    signalled: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _: signalled.append(signum))
    from protomcp_host.processes.launch import SECRET_ENV, StartupError, end_prestart, launch, tool_files

    SECRET_ENV.add("PROTOMCP_STATE_KEY")  # the requestState key (calls.rounds): not for tool code
    modules, plugins = options.pop("modules"), options.pop("plugins")
    token_env = options.pop("token_env", None)
    if not (files or modules or plugins or options["upstreams"] or options["bridge"] or options["skills"]):
        raise UsageError(
            "nothing to serve: give tool FILES, -m MODULE, --plugin NAME, --upstream, --peer or --skills"
        )
    options["skill_folders"] = options["skills"]
    options["skills"] = _load_skills(options["skills"], options["page_size"])
    if options["upstreams"]:
        _check_upstreams(options["upstreams"])
    worker = None
    http = options.get("http")
    if http is not None and http.workers > 1:
        from protomcp_host.transports.http.affinity import Affinity
        from protomcp_host.transports.http.workers import inherited_socket

        http.sock = inherited_socket()
        http.affinity = Affinity.from_env()
        if http.sock is None:  # the parent: it serves no tools itself
            sys.exit(_run_workers(files, http, options.get("drain_timeout", 5.0), signalled))
        worker = os.environ.get("PROTOMCP_WORKER", "?")
    # Start the tool processes first, so they boot while this process imports the host.
    try:
        sources = list(files)
        if modules or plugins:
            from protomcp_host.cli.plugins import resolve

            sources += resolve(list(modules), list(plugins), options["python"])
        launched = {file: launch(file, options["python"]) for file in tool_files(sources)}
        end_prestart()
        if options["instructions"] is None:
            from protomcp_host.processes.launch import module_docstring

            docs = [module_docstring(file) for file in launched]
            options["instructions"] = "\n\n".join(doc for doc in docs if doc) or None
    except StartupError as exc:
        echo(f"protomcp: cannot start: {exc}")
        sys.exit(1)
    except OSError as exc:
        echo(f"protomcp: cannot start the tool process with {options['python']}: {exc.strerror}")
        sys.exit(1)
    # (after the launch: the store module imports anyio, which the tool processes need not wait for)
    from protomcp_host.store.base import StoreError
    from protomcp_host.store.open import open_store

    try:
        options["store"] = open_store(options.pop("store"), echo)
    except StoreError as exc:
        echo(f"protomcp: cannot start: {exc}")
        sys.exit(1)
    import anyio

    from protomcp_host.app import serve as serve_host

    def say(host: Any, url: str | None, reload: bool) -> str:
        if worker is not None:  # one of --workers N: the parent says where it serves
            from protomcp_host.transports.http.workers import say_ready

            say_ready()
            return f"protomcp: worker {worker} (pid {os.getpid()}) serving"
        from protomcp_host.cli.banner import banner

        return banner(host, url, reload, token_env)

    timeout = options.pop("call_timeout")
    options.update(call_timeout=timeout or None, signalled=signalled, banner=say)
    sys.exit(anyio.run(lambda: serve_host(launched, **options), backend="asyncio"))


def _run_workers(files: tuple[Path, ...], http: Any, drain_timeout: float, signalled: list[int]) -> int:
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
