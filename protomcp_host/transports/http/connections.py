"""Bounds on HTTP connections, below the requests: a connection must send a complete request
header soon after it opens (or after the first byte of its next request), a header has a size
limit (431 above it, before it is parsed), an idle kept-alive connection is closed, and the
number of open connections has a cap. A request answered before its body was read (413, 401,
415...) has the rest of its body read and thrown away, up to a bound, before the connection
serves its next request: clients that send the whole body before reading (Python's
http.client, so requests and urllib3) would otherwise get a reset instead of the answer, since
closing a socket with unread data resets it.

Silent connections must not lock real clients out: at the cap, a new connection takes the place
of the oldest one that has no request in progress (a silent one, or an idle kept-alive one, which
HTTP clients reopen transparently); only when every connection is serving a request is the new
one answered 503. uvicorn's own `limit_concurrency` does not fit: it counts silent connections
too and answers the real client 503.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

REPORT_EVERY = 60.0  # seconds between two stderr lines about refused connections
BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 57\r\nconnection: close\r\n\r\n"
    b"Service Unavailable: too many connections are being served"
)


HEADER_TOO_LARGE_TEXT = b"Request Header Fields Too Large: the limit is %d bytes"
SKIP_SLICE = 4096  # bytes of an answered request's body given to the parser at once
HEADER_END = b"\r\n\r\n"


def header_too_large(limit: int) -> bytes:
    body = HEADER_TOO_LARGE_TEXT % limit
    return (
        b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
    )


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout: float = 10.0  # seconds for a request's header (from connect / its first byte)
    max_header: int = 64 * 1024  # bytes of a request line and header fields (431 above)
    keep_alive_timeout: float = 5.0  # seconds an idle kept-alive connection stays open
    max_connections: int = 1000  # open connections at once
    # bytes of a body left unread by an early answer (413...) that are read and thrown away, so
    # that a client sending it whole reads the answer; beyond, the connection is closed
    max_unread_body: int = 16 * 1024 * 1024


class ServerBounds:
    """What the connections of one server share: the limits, the connections the cap may close,
    and the count of refused ones (reported at most every REPORT_EVERY seconds)."""

    def __init__(self, limits: ConnectionLimits, report: Callable[[str], None]) -> None:
        self.limits = limits
        self.report = report
        self.too_large = header_too_large(limits.max_header)
        # Connections without a request in progress, oldest first: the ones the cap may close.
        self.waiting: dict[Any, None] = {}
        self.refused = 0  # connections refused since the last report
        self.reported_at = -REPORT_EVERY  # when that was (monotonic)

    def make_room(self, newcomer: Any) -> bool:
        """Close the oldest connection without a request in progress; whether there was one."""
        for victim in self.waiting:
            if victim is not newcomer:
                del self.waiting[victim]
                victim.transport.close()
                return True
        return False

    def count_refusal(self, serving: int) -> None:
        self.refused += 1
        if time.monotonic() - self.reported_at >= REPORT_EVERY:
            self.report(
                f"protomcp: {serving} connections are serving requests "
                f"(--max-connections {self.limits.max_connections}): refused {self.refused} with 503"
            )
            self.refused, self.reported_at = 0, time.monotonic()


class BoundedConnection(asyncio.Protocol):
    """The header timeout, the header size limit and the connection cap, mixed in before one of
    uvicorn's HTTP/1.1 protocols (`bounded`), which provides the attributes declared below."""

    bounds: ServerBounds  # set on each class `bounded` makes
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    connections: set[Any]  # the server's open connections
    cycle: Any  # the request in progress (None before the first)
    _header_timer: asyncio.TimerHandle | None = None
    _head_seen = 0  # bytes of the request header read so far (while no request is served)
    _head_tail = b""  # its last 3 bytes: the end of the header may straddle two reads
    _unread = -1  # bytes of an answered request's body thrown away so far (-1: none is coming)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        bounds = self.bounds
        bounds.waiting[self] = None
        if len(self.connections) > bounds.limits.max_connections and not bounds.make_room(self):
            del bounds.waiting[self]
            self.transport.write(BUSY)
            self.transport.close()
            bounds.count_refusal(len(self.connections) - 1)
            return
        self._arm()

    def _arm(self) -> None:
        self._header_timer = self.loop.call_later(self.bounds.limits.header_timeout, self._header_late)

    def _header_late(self) -> None:
        self._header_timer = None
        if not self._serving():
            self.transport.close()

    def _serving(self) -> bool:
        cycle = self.cycle
        return cycle is not None and not cycle.response_complete

    def idle(self) -> bool:
        """Open with no request in progress: kept alive between requests (or silent)."""
        return not self._serving() and not self.transport.is_closing()

    def data_received(self, data: bytes) -> None:
        if self._unread >= 0:  # the body of a request already answered
            rest = self._skip_body(data)
            if rest is None:
                return
            data = rest  # what follows the body (nothing, or the start of the next request)
        if data:
            if not self._serving() and self._header_too_large(data):
                # Refused before the parser sees it: a header is held whole until it ends.
                self._forget()
                self.transport.write(self.bounds.too_large)
                self.transport.close()
                return
            super().data_received(data)
        if self._serving():
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            self.bounds.waiting.pop(self, None)
        elif self.transport.get_protocol() is not self:  # upgraded (WebSocket): not ours now
            self._forget()
        elif self._header_timer is None and not self.transport.is_closing():
            self._arm()  # the first bytes of the next request: its header has a deadline

    def _skip_body(self, data: bytes) -> bytes | None:
        """The parser reads the rest of an answered request's body (uvicorn throws it away), a
        slice at a time: what follows the body in this read is returned, to be checked as the
        next request's header (at most a slice of it is not). None: over the bound, closed."""
        at = 0
        skipped = self.cycle
        while at < len(data) and self._unread >= 0:
            piece = data[at : at + SKIP_SLICE]
            at += len(piece)
            self._unread += len(piece)
            if self._unread > self.bounds.limits.max_unread_body:
                self._forget()
                self.transport.close()  # (the client may see a reset: the rest stays unread)
                return None
            super().data_received(piece)  # (httptools: on_message_complete ends the skipping)
            if self.transport.is_closing():
                return None
            if self.cycle is not skipped:  # (h11, which has no such callback: the next request)
                self._unread = -1
        return data[at:]

    def _header_too_large(self, data: bytes) -> bool:
        """Count a read towards the request header; whether the header is now over the limit."""
        limit = self.bounds.limits.max_header
        at = data.find(HEADER_END)
        end: int | None = None if at < 0 else at
        if end is None and self._head_tail:
            at = (self._head_tail + data[:3]).find(HEADER_END)
            if at >= 0:
                end = at - len(self._head_tail)  # (negative: the end began in the last read)
        if end is None:
            self._head_seen += len(data)
            self._head_tail = (self._head_tail + data[-3:])[-3:]
            return self._head_seen > limit
        size = self._head_seen + end + len(HEADER_END)
        if self._head_seen:  # the header ends here; the next starts anew (written only when
            self._head_seen, self._head_tail = 0, b""  # needed: an idle connection stays small)
        return size > limit

    def on_message_complete(self) -> None:
        """(httptools' parser) The end of a request's body."""
        self._unread = -1
        super().on_message_complete()  # type: ignore[misc]  # uvicorn's protocol has it

    def on_response_complete(self) -> None:
        cycle = self.cycle
        super().on_response_complete()  # type: ignore[misc]  # uvicorn's protocol has it
        if cycle is not None and cycle.more_body and not self.transport.is_closing():
            self._unread = 0  # answered before its body was read: the rest is read and skipped
        if not self._serving() and not self.transport.is_closing():
            waiting = self.bounds.waiting
            waiting.pop(self, None)
            waiting[self] = None  # now the youngest idle connection

    def connection_lost(self, exc: Exception | None) -> None:
        self._forget()
        super().connection_lost(exc)

    def _forget(self) -> None:
        self.bounds.waiting.pop(self, None)
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None


def bounded(protocol_class: type[Any], limits: ConnectionLimits, report: Callable[[str], None]) -> type[Any]:
    """`protocol_class` (one of uvicorn's HTTP/1.1 protocols) with the header timeout and the
    connection cap (BoundedConnection); its connections share one ServerBounds. (The keep-alive
    timeout is uvicorn's own `timeout_keep_alive`.)"""
    name = f"Bounded{protocol_class.__name__}"
    return type(name, (BoundedConnection, protocol_class), {"bounds": ServerBounds(limits, report)})


FDS_RESERVED = 256  # file descriptors kept for tool processes' pipes, spool files, the listener


def fit_to_fd_limit(wanted: int) -> int:
    """The connection cap the process can hold: raises the soft limit on open files towards the
    hard one if `wanted` connections need it; a cap beyond what is left is lowered. (Past the
    limit, accept() fails and every client is locked out, whatever the cap says.)"""
    try:
        import resource
    except ImportError:  # not on Unix: the platform's own limits apply
        return wanted
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = wanted + FDS_RESERVED
    if soft != resource.RLIM_INFINITY and soft < needed:
        raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return wanted
    return max(1, soft - FDS_RESERVED)
