"""The shared store on Redis (`--store redis://HOST:PORT/DB[?prefix=NAME]`), the one module that
speaks Redis (the maintained `redis` client's asyncio API). One deployment's keys are under
`protomcp:` (`NAME:protomcp:` with a prefix). NAME is one segment (letters, digits, `_.-`, no
`:`) and never `protomcp`, so no deployment's keys fall inside another's (a SCAN of one never
finds the other's records); its bus is one pub/sub channel named after the
keys' namespace and the database number (Redis pub/sub ignores database numbers), whose
messages are `topic NUL payload`. A stored record starts with one byte: `F` for a final record
(never replaced), `-` for one that may be. A principal's user state (`user_*`) is one Redis key
per value, `user:{SPACE}:v:NAME` (Redis expires it), and a sorted set `user:{SPACE}:keys` of its
names by expiry, which keeps the count bound exact under concurrency (one script per change)."""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio
import anyio.abc
import redis.asyncio
import redis.exceptions

from protomcp_host.store.base import DISCONNECTED, RECONNECTED, Handler, StoreError

NAMESPACE = "protomcp:"
OUTBOX = 10_000  # bus messages waiting to be sent; beyond it new ones are dropped (and reported)
MAX_CONNECTIONS = 100  # to Redis, per host process (the bus holds one of them)
POOL_WAIT = 10.0  # seconds a command waits for a free connection before it fails
CONNECT_TIMEOUT = 10.0  # seconds to reach Redis and subscribe at start
RETRY = 1.0  # seconds between attempts to reach Redis again after the connection broke
ATTEMPTS = 3  # a command that meets a dropped connection is sent again on a new one (idempotent)
FINAL, REPLACEABLE = b"F", b"-"
PREFIX = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # one key segment: the separator ':' is not in it
# put: a final record stays (its value is returned); otherwise the new one is stored
_PUT = """
local current = redis.call('GET', KEYS[1])
if current and string.sub(current, 1, 1) == 'F' then return current end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
"""

# user_set: KEYS = value key, index; ARGV = value, ttl ms (0: none), max keys, name, value key
# prefix. Expired names leave the index first; a name whose value vanished otherwise (evicted
# under maxmemory) is found only when the space looks full. The index lives as long as its
# longest-lived value.
_USER_SET = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local max = tonumber(ARGV[3])
if not redis.call('ZSCORE', KEYS[2], ARGV[4]) and redis.call('ZCARD', KEYS[2]) >= max then
  for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    if redis.call('EXISTS', ARGV[5] .. member) == 0 then redis.call('ZREM', KEYS[2], member) end
  end
  if redis.call('ZCARD', KEYS[2]) >= max then return 0 end
end
local ttl = tonumber(ARGV[2])
if ttl > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
  redis.call('ZADD', KEYS[2], now + ttl, ARGV[4])
else
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('ZADD', KEYS[2], '+inf', ARGV[4])
end
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')[2]
if last == 'inf' then redis.call('PERSIST', KEYS[2]) else redis.call('PEXPIREAT', KEYS[2], last) end
return 1
"""
# user_delete: KEYS = value key, index; ARGV = name
_USER_DELETE = """
local gone = redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return gone
"""

# -- rate limits: a sliding-window log per key, a sorted set of the admitted calls' times (µs,
# Redis's own clock: every host counts on one). Admitted: 0; refused: µs until a call would be.
_TAKE = """
if redis.replicate_commands then redis.replicate_commands() end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
  return 0
end
if count > limit then redis.call('ZREMRANGEBYRANK', KEYS[1], 0, count - limit - 1) end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + window - now)
"""

T = TypeVar("T")


def _glob(text: str) -> str:
    """`text` as a literal in a Redis MATCH pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def _redacted(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        netloc = f"{parts.username or ''}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def _deployment(url: str) -> tuple[str, str]:
    """The URL for the Redis client (without `prefix=`, which is ours) and the prefix. Raises
    StoreError for a prefix whose keys could overlap another deployment's."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefixes = [value for name, value in query if name == "prefix"]
    if len(prefixes) > 1:
        raise StoreError(f"--store {_redacted(url)}: give prefix= once")
    prefix = prefixes[0] if prefixes else ""
    if prefixes and (not PREFIX.fullmatch(prefix) or prefix == NAMESPACE[:-1]):
        raise StoreError(
            f"--store {_redacted(url)}: prefix={prefix!r} is not a deployment name: use 1-64 "
            f"letters, digits, '_', '.' or '-' (no ':'), other than {NAMESPACE[:-1]!r}, so its "
            "keys never fall inside another deployment's on the same Redis"
        )
    rest = urlencode([(name, value) for name, value in query if name != "prefix"])
    return urlunsplit(parts._replace(query=rest)), prefix


def _unflagged(raw: bytes) -> bytes:
    return raw[1:] if raw[:1] in (FINAL, REPLACEABLE) else raw


class RedisStore:
    def __init__(self, url: str, report: Callable[[str], None]) -> None:
        self.url = _redacted(url)
        self._report = report
        client_url, prefix = _deployment(url)
        # A bounded pool that makes a request wait for a free connection (up to POOL_WAIT) rather
        # than fail: a burst of requests (a tool's thousand user_state reads at once, as many
        # limited calls) queues instead of failing everyone's requests beyond the 100th.
        pool = redis.asyncio.BlockingConnectionPool.from_url(
            client_url, max_connections=MAX_CONNECTIONS, timeout=POOL_WAIT
        )
        self._client: Any = redis.asyncio.Redis.from_pool(pool)
        db = int(self._client.connection_pool.connection_kwargs.get("db") or 0)
        self._ns = (f"{prefix}:" if prefix else "") + NAMESPACE
        self._bus = f"{self._ns}bus:{db}"
        self._state_key = self._ns + "state-key"
        self._put = self._client.register_script(_PUT)
        self._user_set = self._client.register_script(_USER_SET)
        self._user_delete = self._client.register_script(_USER_DELETE)
        self._errors: tuple[type[BaseException], ...] = (redis.exceptions.RedisError, OSError)
        self._connect_errors: tuple[type[BaseException], ...] = (*self._errors, TimeoutError)
        self._handlers: list[Handler] = []
        self._outbox: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue(OUTBOX)
        self._dropped = 0
        self._down = False  # an outage was reported (not repeated until it is over)
        self._unsubscribed = False  # the bus's connection broke and is not subscribed again yet
        self._key: bytes | None = None  # the requestState key this handle read last
        self._take = self._client.register_script(_TAKE)  # (EVALSHA, loaded again when missing)
        self._calls = itertools.count()  # with _caller: each admitted call's own member of its log
        self._caller = os.urandom(8).hex()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        # A host (or a --workers worker) that starts while Redis restarts waits for it, within
        # CONNECT_TIMEOUT (its first commands are retried by the host: app.py)
        patient_until = time.monotonic() + CONNECT_TIMEOUT
        pubsub = self._client.pubsub()
        while True:
            try:
                await self._subscribe(pubsub)
                break
            except self._connect_errors as exc:
                if time.monotonic() + RETRY < patient_until:
                    self._trouble(exc)
                    await anyio.sleep(RETRY)
                    continue
                await pubsub.aclose()
                await self._client.aclose()
                raise StoreError(f"cannot reach the store {self.url}: {exc}") from None
        self._back()
        task_status.started()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._send)
                await self._receive(pubsub)
        finally:
            with anyio.CancelScope(shield=True):
                await pubsub.aclose()
                await self._client.aclose()

    async def _subscribe(self, pubsub: Any) -> None:
        """Subscribed, confirmed: nothing published from now on is missed."""
        await pubsub.subscribe(self._bus)
        with anyio.fail_after(CONNECT_TIMEOUT):
            while ((await pubsub.get_message(timeout=CONNECT_TIMEOUT)) or {}).get("type") != "subscribe":
                pass

    async def _receive(self, pubsub: Any) -> None:
        while True:
            try:
                message = await pubsub.get_message(timeout=None)
            except self._errors as exc:
                if not self._unsubscribed:
                    self._unsubscribed = True
                    self._deliver(DISCONNECTED, b"")  # (once per break)
                self._trouble(exc)
                await anyio.sleep(RETRY)
                continue  # (redis-py reconnects and subscribes again on the next read)
            if message is None:
                continue
            if message.get("type") == "subscribe" and self._unsubscribed:
                self._unsubscribed = False
                self._back()
                self._deliver(RECONNECTED, b"")  # what was published meanwhile did not come
            if message.get("type") != "message":
                continue
            topic, _, payload = bytes(message["data"]).partition(b"\0")
            self._deliver(topic.decode(), payload)

    def _deliver(self, topic: str, payload: bytes) -> None:
        for handler in self._handlers:
            handler(topic, payload)

    async def _send(self) -> None:
        """Messages go out in order; one that cannot go now waits (and those behind it)."""
        while True:
            topic, payload = await self._outbox.get()
            message = topic.encode() + b"\0" + payload
            while True:
                try:
                    await self._retried(partial(self._client.publish, self._bus, message))
                    break
                except self._errors as exc:
                    self._trouble(exc)
                    await anyio.sleep(RETRY)
            self._back()

    async def _retried(self, command: Callable[[], Awaitable[T]]) -> T:
        """A dropped connection (CLIENT KILL, a Redis restart, an idle timeout) fails the next
        command sent on it: that command is sent again, on a new connection."""
        for _ in range(ATTEMPTS - 1):
            try:
                return await command()
            except redis.exceptions.ConnectionError:
                continue
        return await command()

    def _trouble(self, exc: BaseException) -> None:
        """Say it once per outage."""
        if not self._down:
            self._down = True
            self._report(f"protomcp: the store {self.url} is unreachable ({exc}); retrying every {RETRY:g}s")

    def _back(self) -> None:
        """Say it once the store serves again, the bus included: a publish that goes through
        while the bus is not subscribed again yet is no sign that notices arrive."""
        if self._down and not self._unsubscribed:
            self._down = False
            self._report(f"protomcp: the store {self.url} is reachable again")

    async def ping(self) -> bool:
        try:
            return bool(await self._retried(self._client.ping))
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
        mine = self._key or os.urandom(32)  # (a key that vanished comes back as it was)
        try:
            await self._retried(lambda: self._client.set(self._state_key, mine, nx=True))
            key = await self._retried(lambda: self._client.get(self._state_key))
        except self._errors as exc:
            raise StoreError(f"cannot read the state key from {self.url}: {exc}") from None
        if not isinstance(key, bytes) or len(key) != 32:
            raise StoreError(f"{self._state_key} in {self.url} is not a 32-byte key")
        self._key = key
        return key

    async def put(self, key: str, value: bytes, ttl: float, *, final: bool = False) -> bytes | None:
        record = (FINAL if final else REPLACEABLE) + value
        milliseconds = max(1, int(ttl * 1000))
        try:
            kept = await self._retried(lambda: self._put(keys=[self._ns + key], args=[record, milliseconds]))
        except self._errors as exc:
            raise StoreError(f"cannot write to {self.url}: {exc}") from None
        return None if kept is None else _unflagged(bytes(kept))

    async def get(self, key: str) -> bytes | None:
        try:
            value = await self._retried(lambda: self._client.get(self._ns + key))
        except self._errors as exc:
            raise StoreError(f"cannot read from {self.url}: {exc}") from None
        return _unflagged(bytes(value)) if isinstance(value, bytes) else None

    async def delete(self, key: str) -> None:
        try:
            await self._retried(lambda: self._client.delete(self._ns + key))
        except self._errors as exc:
            raise StoreError(f"cannot write to {self.url}: {exc}") from None

    async def scan(self, prefix: str) -> list[tuple[str, bytes]]:
        async def scanned() -> list[tuple[str, bytes]]:
            found: list[tuple[str, bytes]] = []
            async for raw in self._client.scan_iter(match=_glob(self._ns + prefix) + "*", count=500):
                value = await self._client.get(raw)
                if isinstance(value, bytes):  # (it may have expired meanwhile)
                    found.append((raw.decode()[len(self._ns) :], _unflagged(value)))
            return found

        try:
            return await self._retried(scanned)
        except self._errors as exc:
            raise StoreError(f"cannot read from {self.url}: {exc}") from None

    # -- per-principal user state (ctx.user_state) ----------------------------------------------
    def _user_keys(self, space: str) -> tuple[str, str]:
        """The prefix of `space`'s value keys and its index (one hash slot: `{space}`)."""
        base = f"{self._ns}user:{{{space}}}:"
        return base + "v:", base + "keys"

    async def user_get(self, space: str, name: str) -> bytes | None:
        values, _ = self._user_keys(space)
        try:
            value = await self._retried(lambda: self._client.get(values + name))
        except self._errors as exc:
            raise StoreError(f"cannot read from {self.url}: {exc}") from None
        return bytes(value) if isinstance(value, bytes) else None

    async def user_set(self, space: str, name: str, value: bytes, ttl: float | None, max_keys: int) -> bool:
        values, index = self._user_keys(space)
        milliseconds = max(1, int(ttl * 1000)) if ttl else 0
        args: list[bytes | str | int] = [value, milliseconds, max_keys, name, values]
        try:
            stored = await self._retried(lambda: self._user_set(keys=[values + name, index], args=args))
        except self._errors as exc:
            raise StoreError(f"cannot write to {self.url}: {exc}") from None
        return bool(stored)

    async def user_delete(self, space: str, name: str) -> bool:
        values, index = self._user_keys(space)
        try:
            gone = await self._retried(lambda: self._user_delete(keys=[values + name, index], args=[name]))
        except self._errors as exc:
            raise StoreError(f"cannot write to {self.url}: {exc}") from None
        return bool(gone)

    # -- rate limits (calls/limits.py) ---------------------------------------------------------
    def take_now(self, key: str, limit: int, window: float) -> None:
        return None  # (a round trip: take)

    async def take(self, key: str, limit: int, window: float) -> float:
        args: list[int | str] = [
            limit,
            max(1, int(window * 1_000_000)),
            f"{self._caller}:{next(self._calls)}",
        ]
        try:
            wait = await self._retried(lambda: self._take(keys=[self._ns + key], args=args))
        except self._errors as exc:
            raise StoreError(f"cannot count a rate limit in {self.url}: {exc}") from None
        return int(wait) / 1_000_000
