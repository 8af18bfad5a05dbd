"""Requests the tool process sends the host (middleware registration, tool-list control, a
call's requests for the client), matched to their answers by request id."""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import threading
from collections.abc import Callable

from protomcp_sdk.runtime.context import Reply
from protomcp_sdk.wire import envelope_pb2 as pb


class HostRequests:
    """Sends requests to the host and completes each one's future with its answer frame."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, loop_thread: int, send: Callable[[pb.Envelope], None]
    ) -> None:
        self.loop = loop
        self.loop_thread = loop_thread
        self.send = send
        self.waiting: dict[str, asyncio.Future[pb.Envelope] | concurrent.futures.Future[pb.Envelope]] = {}
        self._ids = itertools.count(1)

    def ask(self, envelope: pb.Envelope) -> Reply:
        """Send a request to the host; the future completes with its answer frame. An asyncio
        future on the loop (async tools), a concurrent one from call threads (sync tools)."""
        envelope.request_id = request_id = f"p{next(self._ids)}"  # p: asked by the process
        future: asyncio.Future[pb.Envelope] | concurrent.futures.Future[pb.Envelope]
        if threading.get_ident() == self.loop_thread:
            future = self.loop.create_future()
        else:
            future = concurrent.futures.Future()
        self.waiting[request_id] = future
        self.send(envelope)
        return future

    def answered(self, envelope: pb.Envelope) -> None:
        """The host's answer to one of our requests."""
        future = self.waiting.pop(envelope.request_id, None)
        if future is not None and not future.done():
            future.set_result(envelope)
