"""Start `protomcp ... --transport http` on a free loopback port and talk to it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson

from tests.support.hosts import HOST

URL = re.compile(r"at (http://\S+)$")
ACCEPT = "application/json, text/event-stream"


class HttpHost:
    """A host process serving HTTP; `url` is known once it printed its banner."""

    def __init__(
        self, *args: str, env: dict[str, str] | None = None, transport: str = "http", port: int = 0
    ) -> None:
        self.proc = subprocess.Popen(
            [*HOST, *args, "--transport", transport, "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
        self.stderr: list[str] = []
        self._lines = threading.Condition()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        try:
            line = self.wait_stderr(lambda text: URL.search(text) is not None)
        except BaseException:
            self.terminate()  # a host that did not start is not left behind
            raise
        match = URL.search(line)
        assert match is not None
        self.url = match.group(1)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            with self._lines:
                self.stderr.append(raw.decode(errors="replace").rstrip("\n"))
                self._lines.notify_all()
        with self._lines:
            self.stderr.append("")  # end of output
            self._lines.notify_all()

    def wait_stderr(self, want: Any, timeout: float = 30) -> str:
        """The first stderr line (seen so far or later) for which want(line) is true."""
        seen = 0
        with self._lines:
            while True:
                for line in self.stderr[seen:]:
                    if want(line):
                        return line
                seen = len(self.stderr)
                if self.proc.poll() is not None and seen and self.stderr[-1] == "":
                    raise AssertionError("host exited; stderr:\n" + "\n".join(self.stderr))
                if not self._lines.wait(timeout):
                    raise AssertionError("timed out; stderr:\n" + "\n".join(self.stderr))

    def terminate(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


@asynccontextmanager
async def http_session(url: str, headers: dict[str, str] | None = None, **kwargs: Any) -> AsyncIterator[Any]:
    """An official-SDK ClientSession over Streamable HTTP, initialized."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers=headers or {}, timeout=30) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write, **kwargs) as session,
    ):
        await session.initialize()
        yield session


def rpc(id_: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return orjson.dumps(message)


INITIALIZE = rpc(
    0,
    "initialize",
    {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


async def open_raw_session(client: Any, url: str) -> str:
    """Initialize over raw HTTP; returns the session id."""
    headers = {"accept": ACCEPT, "content-type": "application/json"}
    response = await client.post(url, content=INITIALIZE, headers=headers)
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    headers["mcp-session-id"] = session_id
    assert (await client.post(url, content=INITIALIZED, headers=headers)).status_code == 202
    return session_id


def headers_for(session_id: str, **extra: str) -> dict[str, str]:
    return {"accept": ACCEPT, "content-type": "application/json", "mcp-session-id": session_id, **extra}


def sse_events(text: str) -> list[dict[str, str]]:
    """Parse an SSE body into events (fields id / data / retry / event)."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value
        if fields:
            events.append(fields)
    return events


def answer_of(response: Any) -> Any:
    """The JSON-RPC answer in a POST's response, sent as JSON or as the last event of an SSE stream."""
    if response.headers["content-type"].startswith("application/json"):
        return response.json()
    messages = [orjson.loads(e["data"]) for e in sse_events(response.text) if e.get("data")]
    answers = [m for m in messages if "result" in m or "error" in m]
    assert len(answers) == 1, messages
    return answers[0]
