"""Start the real `protomcp` host and tool processes, and talk to them (the fixtures that
start them are in tests/conftest.py)."""

from __future__ import annotations

import os
import queue
import select
import subprocess
import sys
import textwrap
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[2]  # the checkout
TOOLS = ROOT / "tests" / "tools"  # the tool files the tests serve
EXAMPLES = ROOT / "examples" / "tools"
BEHAVIOURS = TOOLS / "behaviours.py"
HOST = [sys.executable, "-m", "protomcp_host"]


def write_atomic(path: Path, source: str) -> None:
    """Write like an editor that saves via rename, so the watcher never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(textwrap.dedent(source))
    os.replace(tmp, path)


@asynccontextmanager
async def mcp_session(*args: str, **session_kwargs: Any) -> AsyncIterator[Any]:
    """An official-SDK ClientSession connected to `protomcp <args>` over stdio."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=HOST[0], args=[*HOST[1:], *args], env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write, **session_kwargs) as session:
        await session.initialize()
        yield session


class RawHost:
    """`protomcp run` driven line by line, for wire-level tests."""

    def __init__(self, *args: str, read_stdout: bool = True, read_stderr: bool = True) -> None:
        self.proc = subprocess.Popen(
            [*HOST, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr: list[str] = []
        self._stderr_grew = threading.Condition()
        self._stderr_reader: threading.Thread | None = None
        if read_stdout:
            self.start_reading_stdout()
        if read_stderr:
            self.start_reading_stderr()

    def start_reading_stdout(self) -> None:
        threading.Thread(target=self._read_stdout, daemon=True).start()

    def start_reading_stderr(self) -> None:
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._stderr_grew:
                self.stderr.append(line.decode(errors="replace"))
                self._stderr_grew.notify_all()
        with self._stderr_grew:
            self.stderr_closed = True
            self._stderr_grew.notify_all()

    stderr_closed = False

    def wait_stderr(self, text: str, timeout: float = 15) -> str:
        """Wait until the host's stderr holds `text`; returns all of it so far."""
        with self._stderr_grew:
            found = self._stderr_grew.wait_for(
                lambda: text in "".join(self.stderr) or self.stderr_closed, timeout
            )
            joined = "".join(self.stderr)
        if not found or text not in joined:
            raise AssertionError(f"{text!r} not on stderr:\n{joined}")
        return joined

    def stderr_text(self, timeout: float = 10) -> str:
        """Everything the host wrote on stderr (after it exited: all of it)."""
        if self.proc.poll() is not None and self._stderr_reader is not None:
            self._stderr_reader.join(timeout)
        return "".join(self.stderr)

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_raw(orjson.dumps(message) + b"\n")

    def recv(self, timeout: float = 10) -> Any:
        line = self.lines.get(timeout=timeout)
        if line is None:
            raise EOFError("host closed stdout; stderr:\n" + "".join(self.stderr))
        return orjson.loads(line)

    def recv_response(self, request_id: Any, timeout: float = 10) -> Any:
        """The response with this id, skipping notifications (which are returned in .skipped)."""
        while True:
            message = self.recv(timeout)
            if isinstance(message, dict) and "method" in message:
                continue
            if isinstance(message, dict) and message.get("id") != request_id:
                raise AssertionError(f"expected id {request_id!r}, got {message!r}")
            return message

    def request(self, request_id: Any, method: str, params: Any = None) -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.recv_response(request_id)

    def initialize(self, version: str = "2025-06-18") -> Any:
        result = self.request(
            0,
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def close(self, timeout: float = 15) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()


class ToolProcessOnPipes:
    """`python -m protomcp_sdk FILE` alone on its frame pipes, as the host starts it; the test
    plays the host, frame by frame."""

    def __init__(self, file: Path, **env: str) -> None:
        from protomcp_sdk.wire import framing

        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "protomcp_sdk", str(file)],
            pass_fds=(to_child_r, from_child_w),
            env={**os.environ, "PROTOMCP_FDS": f"{to_child_r},{from_child_w}", **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self.decoder = framing.FrameDecoder()
        self.frames: deque[Any] = deque()

    def send(self, data: bytes) -> None:
        os.write(self.to_child, data)

    def next_frame(self, timeout: float = 20) -> Any:
        """The next frame the process wrote (an AssertionError if none comes in time)."""
        deadline = time.monotonic() + timeout
        while not self.frames:
            if not select.select([self.from_child], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise AssertionError(f"no frame from the tool process within {timeout}s")
            data = os.read(self.from_child, 65536)
            if not data:
                raise AssertionError("the tool process closed its frame pipe")
            self.frames.extend(self.decoder.feed(data))
        return self.frames.popleft()

    def close_input(self) -> None:
        """What the host does to stop it: close the pipe it reads."""
        if self.to_child >= 0:
            os.close(self.to_child)
            self.to_child = -1

    def close(self) -> None:
        self.close_input()
        os.close(self.from_child)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        assert self.proc.stderr is not None
        self.proc.stderr.close()
