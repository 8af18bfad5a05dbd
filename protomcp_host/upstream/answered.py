"""Which of our requests a stdio upstream has answered: `watch_answers`.

The mcp client drops the answer to a request it gave up (cancelled, timed out) without a
word, so nothing else tells that the upstream finished one, and while it may still be
running, a question the upstream asks may be its (see questions.Questions.owner_of). The
streams between the mcp client and the upstream's process are watched instead: the JSON-RPC
id of each request a forwarding task sends (`OWNER` names the request of that task), then
the answers that come back.
"""

from __future__ import annotations

from contextvars import ContextVar
from types import TracebackType
from typing import Any, Protocol, Self

import anyio


class Answerable(Protocol):
    answered: bool  # set once the upstream has answered it


class _Ids:
    """The requests sent on one connection and not answered yet, by JSON-RPC id."""

    def __init__(self) -> None:
        self.waiting: dict[str, Answerable] = {}


def _key(request_id: Any) -> str:
    return str(request_id)  # 7 and "7" are one id, as the mcp client correlates them


class _Watched:
    """A memory object stream of the mcp client's, passed through (closing, context manager)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> Self:
        await self._stream.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        result: bool | None = await self._stream.__aexit__(exc_type, exc, tb)
        return result


class _Sent(_Watched):
    """The write stream: notes the id of each request that a forwarding task sends."""

    def __init__(self, stream: Any, ids: _Ids, owner: ContextVar[Any]) -> None:
        super().__init__(stream)
        self._ids, self._owner = ids, owner

    async def send(self, item: Any, /) -> None:
        from mcp.types import JSONRPCRequest

        request = self._owner.get()
        if request is not None and isinstance(getattr(item, "message", None), JSONRPCRequest):
            self._ids.waiting[_key(item.message.id)] = request
        await self._stream.send(item)


class _Received(_Watched):
    """The read stream: marks a request answered when its answer (result or error) arrives,
    before the mcp client sees it (and drops it, if the request was given up)."""

    def __init__(self, stream: Any, ids: _Ids) -> None:
        super().__init__(stream)
        self._ids = ids

    async def receive(self) -> Any:
        from mcp.types import JSONRPCError, JSONRPCResponse

        item = await self._stream.receive()
        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            request = self._ids.waiting.pop(_key(message.id), None)
            if request is not None:
                request.answered = True
        return item

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


def watch_answers(read: Any, write: Any, owner: ContextVar[Any]) -> tuple[Any, Any]:
    """The connection's streams, watched: a request (the `owner` of the task that sends it) is
    marked `answered` once the upstream answers it."""
    ids = _Ids()
    return _Received(read, ids), _Sent(write, ids, owner)
