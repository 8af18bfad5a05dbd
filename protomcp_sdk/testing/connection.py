"""The host run as a subprocess, spoken to in JSON-RPC lines over its stdio: requests matched
to their answers, the host's own requests and notifications handed to the client, its stderr
kept."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
from collections.abc import Awaitable, Callable

import orjson

from protomcp_sdk.wire.jsontypes import JSONObject

OnRequest = Callable[[str, JSONObject], Awaitable[JSONObject]]
"""(method, params) of a request from the host -> the reply's ``result`` or ``error`` member."""
OnNotification = Callable[[str, JSONObject], Awaitable[None]]


class ClientError(Exception):
    """The host answered with a JSON-RPC error, or went away."""


class HostConnection:
    """One host subprocess (``start``, ``close``) and the JSON-RPC messages exchanged with it."""

    def __init__(self, stderr: list[str], on_request: OnRequest, on_notification: OnNotification) -> None:
        self.stderr = stderr  # the host's stderr lines, as they come
        self.on_request = on_request
        self.on_notification = on_notification
        self.ids = itertools.count(1)  # request ids (and the client's progress tokens)
        self._process: asyncio.subprocess.Process | None = None
        self._readers: list[asyncio.Task[None]] = []
        self._answering: set[asyncio.Task[None]] = set()
        self._waiting: dict[int, asyncio.Future[JSONObject]] = {}

    async def start(self, argv: list[str], env: dict[str, str] | None) -> None:
        self._process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,  # its own process group: cleanup reaches the tool processes too
            limit=1 << 26,  # one JSON-RPC message per line, and results can be large
        )
        self._readers = [
            asyncio.create_task(self._read_messages()),
            asyncio.create_task(self._read_stderr()),
        ]

    async def close(self) -> None:
        """Close stdin (the host then stops its tool processes) and wait; kill what is left."""
        process = self._process
        if process is None:
            return
        self._process = None
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # anything a tool left behind
            # What the host wrote before it exited is still in the pipes: read it to the end (its
            # last stderr lines too), within a bound, before the readers stop.
            await asyncio.wait(self._readers, timeout=2)
            for task in [*self._readers, *self._answering]:
                task.cancel()
            await asyncio.gather(*self._readers, *self._answering, return_exceptions=True)
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(ClientError("the client was closed"))

    async def request(self, method: str, params: JSONObject | None, timeout: float) -> JSONObject:
        """Send one JSON-RPC request and return its result; raises ClientError on an error."""
        request_id = next(self.ids)
        future = self._waiting[request_id] = asyncio.get_running_loop().create_future()
        message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        try:
            reply = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            late = f"no answer to {method} within {timeout:g}s{self.stderr_tail()}"
            raise ClientError(late) from None
        finally:
            self._waiting.pop(request_id, None)
        if "error" in reply:
            error = reply["error"]
            raise ClientError(f"{method} failed: {error.get('message')} (code {error.get('code')})")
        result: JSONObject = reply["result"]
        return result

    def send(self, message: JSONObject) -> None:
        if self._process is None or self._process.stdin is None:
            raise ClientError("the client is not connected (use `async with Client(...)`)")
        self._process.stdin.write(orjson.dumps(message) + b"\n")

    async def _read_messages(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        stdout = self._process.stdout
        while line := await stdout.readline():
            message = orjson.loads(line)
            future = self._waiting.get(message.get("id")) if "method" not in message else None
            if future is not None and not future.done():
                future.set_result(message)
            elif "method" in message and "id" in message:  # the host asks the client
                task = asyncio.create_task(self._answer(message))
                self._answering.add(task)
                task.add_done_callback(self._answering.discard)
            elif "method" in message:
                await self.on_notification(message["method"], message.get("params") or {})
        gone = ClientError(f"the host closed its output{self.stderr_tail()}")
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(gone)

    async def _answer(self, message: JSONObject) -> None:
        reply: JSONObject = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            reply.update(await self.on_request(message["method"], message.get("params") or {}))
        except Exception as exc:  # the tool sees the client's error, as from a real client
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32603, "message": f"{exc}"}}
        with contextlib.suppress(ClientError, OSError):
            self.send(reply)

    async def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        stderr = self._process.stderr  # (close() forgets the process while this reads on to the end)
        while line := await stderr.readline():
            self.stderr.append(line.decode(errors="replace").rstrip("\n"))

    def stderr_tail(self) -> str:
        return ("; host stderr:\n" + "\n".join(self.stderr[-20:])) if self.stderr else ""
