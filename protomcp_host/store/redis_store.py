"""The shared store on Redis (`--store redis://HOST:PORT/DB`), the one module that speaks Redis
(the maintained `redis` client's asyncio API). Keys are under `protomcp:`; the bus is one
pub/sub channel whose messages are `topic NUL payload`."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.abc
import redis.asyncio
import redis.exceptions

from protomcp_host.store.base import Handler, StoreError

PREFIX = "protomcp:"
BUS = PREFIX + "bus"
STATE_KEY = PREFIX + "state-key"
OUTBOX = 10_000  # bus messages waiting to be sent; beyond it new ones are dropped (and reported)
CONNECT_TIMEOUT = 10.0  # seconds to reach Redis and subscribe at start
RETRY = 1.0  # seconds between attempts to reach Redis again after the connection broke


def _glob(text: str) -> str:
    """`text` as a literal in a Redis MATCH pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def _redacted(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        netloc = f"{parts.username or ''}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


class RedisStore:
    def __init__(self, url: str, report: Callable[[str], None]) -> None:

        self.url = _redacted(url)
        self._report = report
        self._client: Any = redis.asyncio.Redis.from_url(url)
        self._errors: tuple[type[BaseException], ...] = (redis.exceptions.RedisError, OSError)
        self._handlers: list[Handler] = []
        self._outbox: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue(OUTBOX)
        self._dropped = 0
        self._down = False  # an outage was reported (not repeated until it is over)
        self._key: bytes | None = None  # the requestState key this host uses

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            pubsub = self._client.pubsub()
            await pubsub.subscribe(BUS)
            with anyio.fail_after(CONNECT_TIMEOUT):  # confirmed: nothing published from now on is missed
                while ((await pubsub.get_message(timeout=CONNECT_TIMEOUT)) or {}).get("type") != "subscribe":
                    pass
        except (*self._errors, TimeoutError) as exc:
            await self._client.aclose()
            raise StoreError(f"cannot reach the store {self.url}: {exc}") from None
        task_status.started()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._send)
                await self._receive(pubsub)
        finally:
            with anyio.CancelScope(shield=True):
                await pubsub.aclose()
                await self._client.aclose()

    async def _receive(self, pubsub: Any) -> None:
        while True:
            try:
                message = await pubsub.get_message(timeout=None)
            except self._errors as exc:
                self._trouble(f"the store {self.url} is unreachable ({exc}); retrying every {RETRY:g}s")
                await anyio.sleep(RETRY)
                continue  # (redis-py reconnects and subscribes again on the next read)
            if message is None:
                continue
            if message.get("type") == "subscribe" and self._down:
                self._down = False
                self._report(f"protomcp: the store {self.url} is reachable again")
                await self._keep_key()
            if message.get("type") != "message":
                continue
            topic, _, payload = bytes(message["data"]).partition(b"\0")
            for handler in self._handlers:
                handler(topic.decode(), payload)

    async def _send(self) -> None:
        while True:
            topic, payload = await self._outbox.get()
            try:
                await self._client.publish(BUS, topic.encode() + b"\0" + payload)
            except self._errors as exc:
                self._trouble(f"a {topic} notice was not shared: the store {self.url} failed ({exc})")

    def _trouble(self, message: str) -> None:
        """Say it once per outage (the next successful subscription ends the outage)."""
        if not self._down:
            self._down = True
            self._report("protomcp: " + message)

    async def ping(self) -> bool:
        try:
            return bool(await self._client.ping())
        except self._errors:
            return False

    def subscribe(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def publish(self, topic: str, payload: bytes) -> None:
        try:
            self._outbox.put_nowait((topic, payload))
        except asyncio.QueueFull:
            self._dropped += 1
            if self._dropped in (1, 10, 100) or self._dropped % 1000 == 0:
                self._report(f"protomcp: {self._dropped} notices dropped: the store {self.url} is behind")

    async def state_key(self) -> bytes:
        try:
            await self._client.set(STATE_KEY, os.urandom(32), nx=True)  # the first host makes it
            key = await self._client.get(STATE_KEY)
        except self._errors as exc:
            raise StoreError(f"cannot read the state key from {self.url}: {exc}") from None
        if not isinstance(key, bytes) or len(key) != 32:
            raise StoreError(f"{STATE_KEY} in {self.url} is not a 32-byte key")
        self._key = key
        return key

    async def _keep_key(self) -> None:
        """After an outage: a Redis that restarted without its data gets the key back from the
        hosts that use it (the first to return wins; they all hold the same one)."""
        if self._key is None:
            return
        try:
            await self._client.set(STATE_KEY, self._key, nx=True)
        except self._errors as exc:
            self._trouble(f"the state key could not be restored in {self.url} ({exc})")

    async def put(self, key: str, value: bytes, ttl: float) -> None:
        try:
            await self._client.set(PREFIX + key, value, px=max(1, int(ttl * 1000)))
        except self._errors as exc:
            raise StoreError(f"cannot write to {self.url}: {exc}") from None

    async def scan(self, prefix: str) -> list[tuple[str, bytes]]:
        found: list[tuple[str, bytes]] = []
        try:
            async for raw in self._client.scan_iter(match=_glob(PREFIX + prefix) + "*", count=500):
                value = await self._client.get(raw)
                if isinstance(value, bytes):  # (it may have expired meanwhile)
                    found.append((raw.decode()[len(PREFIX) :], value))
        except self._errors as exc:
            raise StoreError(f"cannot read from {self.url}: {exc}") from None
        return found
