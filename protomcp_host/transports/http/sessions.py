"""One Streamable HTTP session: a protocol Session and its Router, plus the SSE streams its
messages travel on. A message related to a client request goes to that request's stream; any
other goes to the session's standalone (GET) stream."""

from __future__ import annotations

import time

import anyio
import orjson

from protomcp_host.transports.http.event_stream import EventStream, ReplayBudget, dropped_line
from protomcp_host.transports.ports import Sessions

GET_STREAM = "0"
GET_KEEP = 1_000  # unrelated messages kept for a GET stream that is not connected
REPLAY_BYTES = 32 << 20  # bytes of stream messages a session keeps (unread or for resumption)
RESPONSE_PREFIX = b'{"jsonrpc":"2.0","id":'
DONE_STREAMS_KEPT = 32  # finished streams kept for a late resumption (per session)
DONE_STREAMS_FOR = 30.0  # seconds a finished stream stays resumable after it was last written out


def is_response(data: bytes, request_id: bytes) -> bool:
    """Whether `data` is the answer (result or error) to the request with this id."""
    head = RESPONSE_PREFIX + request_id
    return data.startswith(head) and data.startswith((b',"result":', b',"error":'), len(head))


class HttpSession:
    def __init__(
        self, session_id: str, host: Sessions, principal: str | None = None, replay_bytes: int = REPLAY_BYTES
    ) -> None:
        self.id = session_id
        self.host = host
        self.principal = principal  # the authenticated caller that created it: only it may use it
        self.router = host.connect(self.write)
        self.router.on_call_end = self._call_ended
        self.session = self.router.session
        self.pending: dict[bytes, EventStream] = {}  # request id -> the stream that carries its answer
        self.budget = ReplayBudget(replay_bytes, lambda: host.stderr(dropped_line(session_id, replay_bytes)))
        self.get_stream = EventStream(GET_STREAM, keep=GET_KEEP, budget=self.budget)
        self.streams: dict[str, EventStream] = {GET_STREAM: self.get_stream}
        self.batches: list[tuple[frozenset[bytes], EventStream]] = []
        self.connections = 0
        self.last_active = time.monotonic()
        self.closed = False
        self._next_key = 0
        self._finished: dict[str, float] = {}  # key -> when: finished streams kept for a resumption
        self._slot: anyio.Event | None = None  # set when a call ends, for requests waiting their turn

    # -- streams ---------------------------------------------------------------------
    def open_stream(self, request_id: bytes) -> EventStream:
        self._next_key += 1
        stream = EventStream(str(self._next_key), budget=self.budget)
        self.streams[stream.key] = stream
        self.pending[request_id] = stream
        return stream

    def open_batch(self, request_ids: frozenset[bytes]) -> EventStream:
        self._next_key += 1
        stream = EventStream(str(self._next_key), budget=self.budget)
        self.batches.append((request_ids, stream))
        return stream

    def in_use(self, request_id: bytes) -> bool:
        """Whether a request with this id is still in progress here (alone or in a batch)."""
        return (
            request_id in self.pending
            or request_id in self.session.in_flight
            or (bool(self.batches) and any(request_id in ids for ids, _ in self.batches))
        )

    def abandon(self, request_id: bytes, stream: EventStream) -> None:
        """A request that was never handed to the session (its client left while it waited)."""
        if self.pending.get(request_id) is stream:
            del self.pending[request_id]
        self.streams.pop(stream.key, None)
        stream.release()

    # -- --max-in-flight: calls beyond it wait their turn -----------------------------------
    def full(self) -> bool:
        return len(self.session.in_flight) >= self.host.max_in_flight

    async def wait_turn(self) -> None:
        """Until a running call of this session ends (the caller bounds the wait)."""
        if self._slot is None:
            self._slot = anyio.Event()
        await self._slot.wait()

    def _call_ended(self) -> None:
        if self._slot is not None:
            self._slot.set()
            self._slot = None

    def cancelled(self, request_id: bytes) -> None:
        """The client cancelled this request: no answer will come, so its stream ends empty."""
        stream = self.pending.pop(request_id, None)
        if stream is not None:
            stream.done = True
            stream.close()
            self.streams.pop(stream.key, None)
            stream.release()
            self._call_ended()  # it may have been waiting for its turn

    def forget(self, stream: EventStream) -> None:
        """The stream's last message reached a connection: nothing is left to resume."""
        if stream is not self.get_stream:
            self.streams.pop(stream.key, None)
            stream.release()

    def keep_finished(self, stream: EventStream) -> None:
        """A connection is done with the stream (it dropped, or it was handed the last message, which
        is not the client having read it): a finished stream stays resumable a while (bounded)."""
        if stream is self.get_stream or not stream.done:
            return
        now = time.monotonic()
        self._finished.pop(stream.key, None)
        self._finished[stream.key] = now  # (the newest last)
        self.let_go_of_finished(now)

    def let_go_of_finished(self, now: float) -> None:
        """Finished streams past DONE_STREAMS_FOR, or beyond the DONE_STREAMS_KEPT newest, go."""
        for key, since in list(self._finished.items()):
            if len(self._finished) <= DONE_STREAMS_KEPT and now - since <= DONE_STREAMS_FOR:
                break
            del self._finished[key]
            old = self.streams.pop(key, None)
            if old is not None:
                old.release()

    # -- messages from the router ----------------------------------------------------
    def write(self, data: bytes, related: bytes | None = None) -> None:
        if data[:1] == b"[" and self._to_batch(data):  # a batch's answer (its ids are its own)
            return
        if related is not None:
            stream = self.pending.get(related)
            if stream is not None:
                last = is_response(data, related)
                if last:
                    del self.pending[related]
                stream.push(data, last=last)
                if last and not stream.attached:
                    self.keep_finished(stream)  # finished while nobody listened: keep it, bounded
                return
            if is_response(data, related):
                return  # its request's stream is gone (session closing); never on the GET stream
        self.get_stream.push(data)

    def _to_batch(self, data: bytes) -> bool:
        try:
            answers = orjson.loads(data)
            ids = frozenset(orjson.dumps(a.get("id")) for a in answers if isinstance(a, dict))
        except (orjson.JSONDecodeError, TypeError):
            return False
        for index, (expected, stream) in enumerate(self.batches):
            if ids <= expected:
                del self.batches[index]
                stream.push(data, last=True)
                return True
        return False

    # -- lifetime --------------------------------------------------------------------
    def touch(self) -> None:
        self.last_active = time.monotonic()

    def idle_for(self, now: float) -> float:
        if self.connections or self.session.in_flight:
            return 0.0
        return now - self.last_active

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._call_ended()
        self.router.cancel_all()
        self.host.disconnect(self.router)
        for stream in self.streams.values():
            stream.close()
        for _, stream in self.batches:
            stream.close()
