"""Fixtures every test folder shares, the `fast` tier's guard, and what keeps tests that run at
once (pytest-xdist workers) out of each other's way. The helpers the fixtures use live in
tests/support/."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.support.cluster import nginx, redis_url  # noqa: F401 (fixtures: real redis-server and nginx)
from tests.support.hosts import RawHost, ToolProcessOnPipes
from tests.support.http import HttpHost

# Property tests are judged by their examples, not by their speed: on a busy machine (the suite's
# own workers share the cores) a slow example is no failure.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """Tests marked `anyio` run on asyncio (the host's event loop), not on trio."""
    return "asyncio"


@pytest.fixture
def tool_process() -> Iterator[Any]:
    """Start tool processes on frame pipes (ToolProcessOnPipes); all end with the test."""
    started: list[ToolProcessOnPipes] = []

    def start(file: Path, **env: str) -> ToolProcessOnPipes:
        process = ToolProcessOnPipes(file, **env)
        started.append(process)
        return process

    yield start
    for process in started:
        process.close()


@pytest.fixture
def raw_host() -> Iterator[Any]:
    """Start `protomcp` hosts on stdio (RawHost); all end with the test."""
    hosts: list[RawHost] = []

    def start(*args: str, **kwargs: Any) -> RawHost:
        host = RawHost(*args, **kwargs)
        hosts.append(host)
        return host

    yield start
    for host in hosts:
        host.close()


@pytest.fixture
def http_host() -> Iterator[Any]:
    """Start `protomcp run ... --transport http` hosts (HttpHost); all end with the test."""
    hosts: list[HttpHost] = []

    def start(*args: str, **kwargs: Any) -> HttpHost:
        host = HttpHost(*args, **kwargs)
        hosts.append(host)
        return host

    yield start
    for host in hosts:
        host.terminate()


# -- speed: the suite starts thousands of Python processes -----------------------------------


def pytest_configure(config: pytest.Config) -> None:
    """Where PYTHONDONTWRITEBYTECODE is set (containers, CI), every host and tool process the
    tests start would compile protomcp's modules again (about 0.1 s of CPU each), and every
    xdist worker would rewrite every test module's asserts again: keep the bytecode instead,
    outside the checkout, in a private folder of this user (the processes inherit it)."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    folder = Path(tempfile.gettempdir()) / f"protomcp-tests-pycache-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.stat().st_uid != os.getuid():
        return  # someone else's: compile as asked
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = str(folder)
    sys.dont_write_bytecode = False
    sys.pycache_prefix = str(folder)


# -- isolation: nothing a test starts writes where another test (or the user) reads ----------


@pytest.fixture(scope="session", autouse=True)
def private_runtime_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """`protomcp dev` journals into the per-user runtime folder, which `protomcp logs` lists: each
    test process (an xdist worker) gets its own, inherited by the hosts it starts."""
    saved = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(tmp_path_factory.mktemp("xdg-runtime"))
    yield
    if saved is None:
        os.environ.pop("XDG_RUNTIME_DIR", None)
    else:
        os.environ["XDG_RUNTIME_DIR"] = saved


# -- the fast tier: `pytest -m fast` runs the tests that start no process ---------------------

_SPAWNING_EVENTS = frozenset(
    {"subprocess.Popen", "os.posix_spawn", "os.fork", "os.forkpty", "os.exec", "os.spawn", "os.system"}
)


class _NoProcesses:
    """While a test marked `fast` runs, starting a process fails it: the tier stays honest."""

    test: str | None = None  # the node id of the fast test running

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        if self.test is not None and event in _SPAWNING_EVENTS:
            what = args[0] if args else ""
            raise RuntimeError(
                f"{self.test} is marked fast but starts a process ({event}: {what!r}); "
                "a test that starts one is not in the fast tier"
            )


_no_processes = _NoProcesses()
sys.addaudithook(_no_processes.audit)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    if item.get_closest_marker("fast") is not None:
        _no_processes.test = item.nodeid
    try:
        return (yield)
    finally:
        _no_processes.test = None
