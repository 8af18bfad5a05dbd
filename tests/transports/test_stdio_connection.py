"""The stdio connection's explicit state (protomcp_host.transports.stdio.StdioConnection), with a
stub host: its phases only move forward, and each line goes to the era that serves it. The
behaviour end to end (flow control, shutdown, proto-mcp) is pinned by the stdio e2e tests."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import orjson
import pytest

from protomcp_host.protocol.request_meta import PROTOCOL_VERSION
from protomcp_host.transports.stdio import CLOSING, DRAINING, READING, StdioConnection


class StubSession:
    def __init__(self) -> None:
        self.in_flight: dict[bytes, Any] = {}


class StubConnection:
    def __init__(self) -> None:
        self.session = StubSession()
        self.on_call_end: Callable[[], None] | None = None
        self.fed: list[bytes] = []

    def feed(self, line: bytes) -> None:
        self.fed.append(line)

    def feed_loaded(self, line: bytes, data: Any) -> None:  # (a line parsed once, for its era)
        assert data == orjson.loads(line)
        self.fed.append(line)


class StubHost:
    max_in_flight = 4
    startup_error = None

    def __init__(self) -> None:
        self.ready = anyio.Event()
        self.stateful = StubConnection()
        self.modern: list[StubConnection] = []

    def connect(self, write: Any) -> StubConnection:
        return self.stateful

    def connect_modern(
        self, write: Any, principal: str = "local", *, measured: bool = False
    ) -> StubConnection:
        self.modern.append(StubConnection())
        return self.modern[-1]

    def stderr(self, text: str) -> None:
        pass


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_end, write_end = os.pipe()
    yield read_end, write_end
    os.close(read_end)
    os.close(write_end)


def line(method: str, params: dict[str, Any] | None = None, **extra: Any) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "method": method, "params": params or {}, **extra})


async def test_the_phases_only_move_forward(pipe: tuple[int, int]) -> None:
    connection = StdioConnection(StubHost(), 1.0, pipe[1])  # type: ignore[arg-type]
    assert connection.phase is READING
    with pytest.raises(RuntimeError):
        connection.enter(CLOSING)  # draining comes first
    connection.enter(DRAINING)
    connection.enter(CLOSING)
    for phase in (READING, DRAINING, CLOSING):
        with pytest.raises(RuntimeError):
            connection.enter(phase)


async def test_each_line_goes_to_its_era(pipe: tuple[int, int]) -> None:
    host = StubHost()
    connection = StdioConnection(host, 1.0, pipe[1])  # type: ignore[arg-type]
    stateful = line("tools/list", id=1)
    connection.handle(stateful)
    assert host.stateful.fed == [stateful] and not host.modern  # no modern connection until needed

    modern = line("tools/list", {"_meta": {PROTOCOL_VERSION: "2026-07-28"}}, id=2)
    connection.handle(modern)
    connection.handle(modern)
    assert len(host.modern) == 1 and host.modern[0].fed == [modern, modern]  # made once
    assert host.stateful.fed == [stateful]

    cancel = line("notifications/cancelled", {"requestId": 2})
    connection.handle(cancel)  # ids of either era: both hear it
    assert host.modern[0].fed[-1] == cancel and host.stateful.fed[-1] == cancel


async def test_held_lines_wait_for_the_tool_files(pipe: tuple[int, int]) -> None:
    host = StubHost()
    connection = StdioConnection(host, 1.0, pipe[1])  # type: ignore[arg-type]
    initialize, listing = line("initialize", id=1), line("tools/list", id=2)
    connection.held.extend([initialize, listing])
    connection.take_held()
    assert host.stateful.fed == [initialize] and list(connection.held) == [listing]
    host.ready.set()
    connection.take_held()
    assert host.stateful.fed == [initialize, listing] and not connection.held
