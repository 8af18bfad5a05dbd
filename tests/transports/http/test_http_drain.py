"""SIGTERM to an HTTP host loses no connection a client (a balancer) had already made: the ones
waiting in the listening socket's queue, which the host had not accepted yet, are answered too,
not reset (a balancer that had written a POST on one answers its client 502 rather than send it
elsewhere). With --workers, the parent's copy of the socket is closed too, so none waits there.

The host is stopped (SIGSTOP) while the connections are made and their requests written: they
all wait in the queue. It then gets SIGTERM and goes on (SIGCONT)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.http import HttpHost
from tests.support.scale import CPU

QUEUED = 64  # connections made while the host is stopped (more than asyncio accepts at a time)


META = {  # (no tasks extension: a call is answered in its response)
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


def request(host: str, index: int, tool: str = "whoami", **arguments: Any) -> bytes:
    """A 2026-07-28 tools/call, as bytes on the wire (one per connection)."""
    params = {"name": tool, "arguments": arguments, "_meta": META}
    body = orjson.dumps({"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": params})
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}\r\naccept: application/json, text/event-stream\r\n"
        "content-type: application/json\r\nmcp-protocol-version: 2026-07-28\r\n"
        f"mcp-method: tools/call\r\nmcp-name: {tool}\r\nconnection: close\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def response(connection: socket.socket) -> bytes:
    """Everything the host sent on `connection` until it closed it (b"" or a reset: nothing)."""
    received = b""
    try:
        while chunk := connection.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    finally:
        connection.close()
    return received


def host_processes(host: HttpHost) -> list[int]:
    """The host's process, and with --workers its workers (not the tool processes)."""
    pids = [host.proc.pid]
    children = subprocess.run(["pgrep", "-P", str(host.proc.pid)], capture_output=True, text=True)
    for child in map(int, children.stdout.split()):
        command = open(f"/proc/{child}/cmdline", "rb").read()  # noqa: SIM115 (read at once)
        if b"protomcp_host" in command:
            pids.append(child)
    return pids


def serving(ip: str, port: int, address: str, hosts: set[int]) -> None:
    """Until each of `hosts` answered a call: each has finished starting, so none sets the
    listening socket's queue short again (uvicorn listens with a short one before the host
    lengthens it) while the test stops them."""
    seen: set[int] = set()
    for _ in range(50):
        connections = [socket.create_connection((ip, port), timeout=30) for _ in range(8)]
        for index, connection in enumerate(connections):
            connection.sendall(request(address, index))
        for connection in connections:
            answer = orjson.loads(response(connection).split(b"\r\n\r\n", 1)[1])
            seen.add(answer["result"]["structuredContent"]["host"])
        if hosts <= seen:
            return
    raise AssertionError(f"not every host answered: {seen} of {hosts}")


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("workers", ["1", "2"], ids=["run", "workers-2"])
def test_connections_queued_at_sigterm_are_answered(workers: str, redis_url: str) -> None:
    host = HttpHost("run", str(CPU), "--workers", workers, "--store", redis_url, "--drain-timeout", "20")
    try:
        address = host.url.split("/")[2]
        ip, port = address.rsplit(":", 1)
        stopped = host_processes(host)
        assert len(stopped) == 1 + (int(workers) if workers != "1" else 0)
        serving(ip, int(port), address, {stopped[-1]} if workers == "1" else set(stopped[1:]))
        connections: list[socket.socket] = []
        try:
            for pid in stopped:
                os.kill(pid, signal.SIGSTOP)
            for index in range(QUEUED):
                connection = socket.create_connection((ip, int(port)), timeout=30)
                connection.sendall(request(address, index))
                connections.append(connection)
            host.proc.send_signal(signal.SIGTERM)  # (pending until it goes on)
        finally:
            for pid in stopped:
                os.kill(pid, signal.SIGCONT)
        answers = [response(connection) for connection in connections]
        statuses = [answer.split(b" ", 2)[1].decode() if answer else "reset" for answer in answers]
        assert statuses == ["200"] * QUEUED, statuses
        for index, answer in enumerate(answers):
            message: Any = orjson.loads(answer.split(b"\r\n\r\n", 1)[1])
            assert message["id"] == index and "host" in message["result"]["structuredContent"], message
        assert host.proc.wait(30) == 0
    finally:
        host.terminate()


def test_a_draining_workers_host_refuses_new_connections(redis_url: str, tmp_path: Path) -> None:
    """While a --workers host drains, a new connection is refused at once (a balancer tries
    another host) rather than queued on the parent's copy of the socket, where nobody accepts it
    (before: it waited there until the host exited, then was reset)."""
    host = HttpHost("run", str(CPU), "--workers", "2", "--store", redis_url, "--drain-timeout", "20")
    address = host.url.split("/")[2]
    ip, port = address.rsplit(":", 1)
    gate, mark = tmp_path / "gate", tmp_path / "running"
    try:
        workers = host_processes(host)[1:]
        running = socket.create_connection((ip, int(port)), timeout=30)
        running.sendall(request(address, 1, "wait_for", path=str(gate), mark=str(mark)))
        deadline = time.monotonic() + 30
        while not mark.exists():  # (written by the tool process once the call runs)
            assert time.monotonic() < deadline, "the call did not start"
            time.sleep(0.02)
        host.proc.send_signal(signal.SIGTERM)
        host.wait_stderr(lambda line: "draining" in line and "1 call(s) in flight" in line)
        while all(alive(pid) for pid in workers):  # (the other worker, idle, drains and exits)
            assert time.monotonic() < deadline, "no worker stopped"
            time.sleep(0.02)
        # Every worker has closed its copy of the socket now; so has the parent.
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((ip, int(port)), timeout=10).close()
        gate.touch()
        answer = response(running)
        assert answer.startswith(b"HTTP/1.1 200"), answer
        assert orjson.loads(answer.split(b"\r\n\r\n", 1)[1])["result"]["structuredContent"]["saw"] is True
        assert host.proc.wait(30) == 0
    finally:
        host.terminate()
