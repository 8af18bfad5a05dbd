"""`--workers N`: a stateful (2025-11-25 and older) session lives in one worker, and every request
of that session is served there, whichever worker the kernel handed the connection to.

A session id belongs to worker `crc32(id) % N + 1`: a worker makes new ids that hash to itself,
and a balancer's offered id (--session-id-header) is taken by the worker it hashes to. A worker
that gets a request naming a session of another passes it on, as it came, to that worker's
private Unix socket (each worker serves the same app there too) and relays the answer back,
streamed. Only those requests pay for the extra hop: modern-era requests carry no session and
are served where they land.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import secrets
import socket
import zlib
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

import anyio
import anyio.abc
import h11

from protomcp_host.transports.http.asgi import (
    BodyTooLarge,
    ClientGone,
    Receive,
    Scope,
    Send,
    read_body,
    refuse,
)

FOLDER_ENV = "PROTOMCP_WORKERS_DIR"  # where the workers' private sockets are (made by the parent)
COUNT_ENV = "PROTOMCP_WORKERS"  # how many workers there are
WORKER_ENV = "PROTOMCP_WORKER"  # this worker's number (1..N)
HOP_BY_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"upgrade", b"te"}
# a relayed answer's headers left out: the relaying worker's server sets its own Date (one Date)
NOT_RELAYED = HOP_BY_HOP | {b"date"}
READ_SIZE = 65536
STARTUP_TIMEOUT = 60.0  # seconds a worker may take to load its tool files and serve
# A new session whose worker is being replaced waits as long as the replacement may take to start
# (tool files that import heavy libraries take many seconds; so does any start on a busy machine).
REPLACEMENT_WAIT = STARTUP_TIMEOUT


@dataclass(frozen=True)
class Affinity:
    worker: int  # this worker's number, 1..count
    count: int
    folder: str

    @classmethod
    def from_env(cls) -> Affinity | None:
        """In a worker of `--workers N` (N > 1): its place among the others; None elsewhere."""
        folder, count, worker = (os.environ.get(name) for name in (FOLDER_ENV, COUNT_ENV, WORKER_ENV))
        if not (folder and count and worker) or int(count) < 2:
            return None
        return cls(int(worker), int(count), folder)

    def owner(self, session_id: str) -> int:
        """The worker a session id belongs to (the same answer in every worker)."""
        return zlib.crc32(session_id.encode("latin-1", "replace")) % self.count + 1

    def new_id(self) -> str:
        """A fresh session id (192 random bits) that belongs to this worker."""
        while True:
            session_id = secrets.token_urlsafe(24)
            if self.owner(session_id) == self.worker:
                return session_id

    def path(self, worker: int) -> str:
        return os.path.join(self.folder, f"{worker}.sock")

    def listen(self) -> socket.socket:
        """This worker's private socket (a replaced worker takes over its predecessor's path)."""
        path = self.path(self.worker)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(path)
        sock.listen(128)
        return sock

    async def forward(
        self,
        worker: int,
        scope: Scope,
        body: bytes | None,
        receive: Receive,
        send: Send,
        limits: tuple[int, float],
        report: Callable[[str], None],
        *,
        wait: float = 0.0,
    ) -> None:
        """Serve the request at `worker` and relay its answer (a stream as it comes); `body` is
        None when the request's body was not read yet (`limits`: its most bytes, and seconds to
        read it); `wait`: seconds to wait for a worker being replaced (a session that does not
        exist yet can begin in its replacement; one that did is gone with it). The relay ends
        when either side does; an answer the worker cut short is cut for the client too (`report`
        tells the operator)."""
        if body is None:
            try:
                body = await read_body(receive, *limits)
            except BodyTooLarge:
                await refuse(send, 413, f"Payload Too Large: the limit is {limits[0]} bytes")
                return
            except TimeoutError:
                await refuse(send, 408, "Request Timeout: the request body arrived too slowly")
                return
            except ClientGone:
                return
        query = scope.get("query_string") or b""
        target = (scope.get("raw_path") or scope["path"].encode()) + (b"?" + query if query else b"")
        headers = [(k, v) for k, v in scope["headers"] if k not in HOP_BY_HOP]
        headers += [(b"content-length", str(len(body)).encode()), (b"connection", b"close")]
        if not any(name == b"host" for name, _ in headers):  # (HTTP/1.0 may leave it out; h11 needs it)
            headers.append((b"host", b"localhost"))
        deadline = anyio.current_time() + wait
        while True:
            stream = await self._connect(worker, max(0.0, deadline - anyio.current_time()))
            if stream is None:  # the worker is gone (being replaced): so is the session
                await refuse(send, 404, "Session not found: it expired or was ended; initialize a new one")
                return
            conn = h11.Connection(h11.CLIENT)
            request = conn.send(h11.Request(method=scope["method"], target=target, headers=headers))
            request += conn.send(h11.Data(data=body)) if body else b""
            request += conn.send(h11.EndOfMessage())
            relayed: Relayed | None = None  # (None: the client went away first)
            async with stream, anyio.create_task_group() as tg:

                async def end_when_the_client_goes() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    tg.cancel_scope.cancel()

                tg.start_soon(end_when_the_client_goes)
                await stream.send(request)
                relayed = await _relay(conn, stream, send)
                tg.cancel_scope.cancel()
            if relayed is Relayed.CUT:
                report(
                    f"protomcp: worker {worker} went away mid-answer to a request of a session it "
                    f"held, relayed by worker {self.worker}: the client's connection is cut"
                )
                _cutting.set(True)  # (uvicorn closes it: the response is left unfinished)
                logging.getLogger("uvicorn.error").addFilter(_not_cut)  # (kept once)
            if relayed is not Relayed.NONE:
                return
            if anyio.current_time() >= deadline:  # (a new session may try the replacement)
                await refuse(send, 502, "Bad Gateway: the worker holding the session did not answer")
                return

    async def _connect(self, worker: int, wait: float) -> anyio.abc.ByteStream | None:
        """A connection to the worker's socket; None when it does not serve within `wait`s
        (polled: its replacement is another process, started by the parent)."""
        deadline = anyio.current_time() + wait
        while True:
            try:
                return await anyio.connect_unix(self.path(worker))
            except OSError:
                if anyio.current_time() >= deadline:
                    return None
                await anyio.sleep(0.05)


_cutting: ContextVar[bool] = ContextVar("protomcp_relay_cut", default=False)


def _not_cut(record: logging.LogRecord) -> bool:
    """uvicorn logs "ASGI callable returned without completing response." as it closes a
    connection whose response was left unfinished; a relay that cut one said why itself."""
    return not _cutting.get()


class Relayed(enum.Enum):
    """How a relayed answer ended."""

    WHOLE = "whole"
    NONE = "none"  # none began (a worker killed as it took the connection: nothing reached the client)
    CUT = "cut"  # the worker went away mid-answer: the client's response is left unfinished


async def _relay(conn: h11.Connection, stream: anyio.abc.ByteStream, send: Send) -> Relayed:
    """The worker's answer, event by event, to the client. An answer cut short is left unfinished
    for the client too: its server then closes the connection, as the worker's death closed a
    direct client's, so the client knows the answer did not come (and does not read a clean end
    as "nothing more to say")."""
    started = False
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError:  # it went away mid-answer
            return Relayed.CUT if started else Relayed.NONE
        if event is h11.NEED_DATA:
            try:
                data = await stream.receive(READ_SIZE)
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                data = b""  # (the end: h11 says next whether the answer was whole)
            conn.receive_data(data)
            continue
        if isinstance(event, h11.Response):
            headers = [(k, v) for k, v in event.headers if k not in NOT_RELAYED]
            await send({"type": "http.response.start", "status": event.status_code, "headers": headers})
            started = True
        elif isinstance(event, h11.Data):
            await send({"type": "http.response.body", "body": bytes(event.data), "more_body": True})
        elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
            break
    if not started:
        return Relayed.NONE
    await send({"type": "http.response.body", "body": b"", "more_body": False})
    return Relayed.WHOLE
