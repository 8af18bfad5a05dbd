"""Opaque access tokens checked by asking the authorization server (OAuth 2.0 Token
Introspection, RFC 7662), for providers whose tokens are not JWTs.

The host authenticates to the introspection endpoint as the client registered there
(client_secret_basic). Answers are cached briefly — `cache_seconds`, never past the token's own
`exp` — by a hash of the token, at most `max_cached` of them (the oldest go first), so a busy client
costs one call per token per `cache_seconds` and a flood of made-up tokens cannot grow memory.
Callers that present the same new token at once share one call. A token the server calls
inactive is refused (TokenRefused); an endpoint that cannot answer is an IntrospectionError,
which is the server's trouble, not the token's.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import anyio
import orjson

from protomcp_host.transports.http.refusals import TokenRefused

CACHE_SECONDS = 30.0
MAX_CACHED = 10_000
TIMEOUT = 10.0  # seconds for one introspection call
MAX_ANSWER = 1 << 20  # bytes of an introspection answer read at most


class IntrospectionError(Exception):
    """The introspection endpoint did not give a usable answer."""


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the endpoint answers itself; a redirect would resend the token elsewhere


_OPENER = urllib.request.build_opener(_NoRedirects)


@dataclass
class Introspector:
    url: str
    client_id: str
    client_secret: str
    cache_seconds: float = CACHE_SECONDS
    max_cached: int = MAX_CACHED
    # sha256(token) -> (monotonic time the answer is good until, claims; None: inactive)
    _cache: OrderedDict[str, tuple[float, dict[str, Any] | None]] = field(default_factory=OrderedDict)
    _pending: dict[str, asyncio.Future[dict[str, Any] | None]] = field(default_factory=dict)

    async def claims(self, token: str) -> dict[str, Any]:
        """What the authorization server says about an active token; TokenRefused if it is not
        active, IntrospectionError if the server did not say."""
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._cache.get(key)
        if cached is not None and cached[0] > time.monotonic():
            answer = cached[1]
        elif key in self._pending:
            answer = await asyncio.shield(self._pending[key])
        else:
            answer = await self._ask_once(key, token)
        if answer is None:
            raise TokenRefused("inactive", "the authorization server says the token is not active")
        return answer

    async def _ask_once(self, key: str, token: str) -> dict[str, Any] | None:
        future: asyncio.Future[dict[str, Any] | None] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            answer = await anyio.to_thread.run_sync(self._ask, token)
        except BaseException as exc:
            future.set_exception(exc if isinstance(exc, Exception) else IntrospectionError("cancelled"))
            future.exception()  # retrieved: waiters re-raise it; none waiting is no warning
            raise
        else:
            future.set_result(answer)
            self._remember(key, answer)
            return answer
        finally:
            del self._pending[key]

    def _remember(self, key: str, answer: dict[str, Any] | None) -> None:
        seconds = self.cache_seconds
        if answer is not None and isinstance(answer.get("exp"), int | float):
            seconds = min(seconds, answer["exp"] - time.time())
        if seconds <= 0:
            return
        self._cache[key] = (time.monotonic() + seconds, answer)
        self._cache.move_to_end(key)
        while len(self._cache) > self.max_cached:
            self._cache.popitem(last=False)

    def _ask(self, token: str) -> dict[str, Any] | None:
        """One introspection call (blocking; run in a thread)."""
        body = urllib.parse.urlencode({"token": token, "token_type_hint": "access_token"}).encode()
        # client_secret_basic: both form-encoded first (RFC 6749, 2.3.1)
        pair = f"{urllib.parse.quote_plus(self.client_id)}:{urllib.parse.quote_plus(self.client_secret)}"
        request = urllib.request.Request(
            self.url,
            data=body,
            method="POST",
            headers={
                "Authorization": "Basic " + base64.b64encode(pair.encode()).decode(),
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
        )
        try:
            with _OPENER.open(request, timeout=TIMEOUT) as response:
                raw = response.read(MAX_ANSWER + 1)
        except urllib.error.HTTPError as exc:
            exc.close()
            raise IntrospectionError(f"{self.url} answered HTTP {exc.code} {exc.reason}") from None
        except (OSError, ValueError) as exc:
            raise IntrospectionError(f"cannot reach {self.url}: {exc}") from None
        if len(raw) > MAX_ANSWER:
            raise IntrospectionError(f"{self.url} answered more than {MAX_ANSWER} bytes")
        try:
            answer = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise IntrospectionError(f"{self.url} did not answer JSON") from None
        if not isinstance(answer, dict) or not isinstance(answer.get("active"), bool):
            raise IntrospectionError(f"{self.url} did not answer an introspection response ('active')")
        return answer if answer["active"] else None
