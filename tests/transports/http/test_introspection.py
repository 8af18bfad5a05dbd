"""The introspection client (introspection.py, RFC 7662) against an endpoint served from a thread
that counts its calls and can be told what to answer: how it authenticates, what it caches and
for how long, that callers share one call, and that a bad endpoint is its own error, not a
refused token. (End to end against a real provider: test_http_introspection.py.)"""

from __future__ import annotations

import base64
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import orjson
import pytest

from protomcp_host.transports.http.introspection import MAX_ANSWER, IntrospectionError, Introspector
from protomcp_host.transports.http.refusals import TokenRefused

pytestmark = pytest.mark.fast  # starts no process (a thread serves the endpoint)


class Endpoint:
    """An introspection endpoint: `answers` maps a token to its JSON answer (else inactive)."""

    def __init__(self) -> None:
        self.answers: dict[str, Any] = {}
        self.calls: list[dict[str, str]] = []  # each call's form, plus its Authorization header
        self.raw: bytes | None = None  # answer these bytes instead
        self.status = 200
        self.release = threading.Event()
        self.release.set()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["content-length"])
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                endpoint.calls.append(form | {"authorization": self.headers["authorization"]})
                endpoint.release.wait(10)
                body = endpoint.raw
                if body is None:
                    body = orjson.dumps(endpoint.answers.get(form["token"], {"active": False}))
                self.send_response(endpoint.status)
                if endpoint.status in (301, 302, 307):
                    self.send_header("location", "http://127.0.0.1:9/elsewhere")
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/token/introspection"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    server = Endpoint()
    yield server
    server.close()


def active(**claims: Any) -> dict[str, Any]:
    return {
        "active": True,
        "sub": "ada",
        "aud": "http://127.0.0.1:8000/mcp",
        "exp": time.time() + 600,
    } | claims


async def test_it_authenticates_as_the_client_and_returns_the_claims(endpoint: Endpoint) -> None:
    endpoint.answers["tok"] = active(scope="mcp:read")
    claims = await Introspector(endpoint.url, "rs client", "s3cret:x").claims("tok")
    assert claims["sub"] == "ada" and claims["scope"] == "mcp:read"
    [call] = endpoint.calls
    assert call["token"] == "tok" and call["token_type_hint"] == "access_token"
    # client_secret_basic, id and secret form-encoded first (RFC 6749 2.3.1)
    assert base64.b64decode(call["authorization"].split()[1]) == b"rs+client:s3cret%3Ax"


async def test_answers_are_cached_briefly_and_never_past_the_tokens_expiry(endpoint: Endpoint) -> None:
    endpoint.answers["long"] = active()
    endpoint.answers["short"] = active(exp=time.time() - 1)  # expiring as it is asked about
    introspector = Introspector(endpoint.url, "rs", "secret")
    for _ in range(3):
        await introspector.claims("long")
        await introspector.claims("short")
        with pytest.raises(TokenRefused) as refused:
            await introspector.claims("made-up")  # inactive: cached too, so a retry costs nothing
        assert refused.value.kind == "inactive"
    assert [call["token"] for call in endpoint.calls] == ["long", "short", "made-up", "short", "short"]
    none_cached = Introspector(endpoint.url, "rs", "secret", cache_seconds=0)
    await none_cached.claims("long")
    await none_cached.claims("long")
    assert len(endpoint.calls) == 7


async def test_the_cache_is_bounded_dropping_the_oldest(endpoint: Endpoint) -> None:
    introspector = Introspector(endpoint.url, "rs", "secret", max_cached=2)
    for name in ("a", "b", "c", "a"):
        endpoint.answers[name] = active()
        await introspector.claims(name)
    assert [call["token"] for call in endpoint.calls] == ["a", "b", "c", "a"]  # "a" was dropped
    assert len(introspector._cache) == 2


async def test_callers_presenting_the_same_new_token_share_one_call(endpoint: Endpoint) -> None:
    endpoint.answers["tok"] = active()
    endpoint.release.clear()  # hold the first call until every caller is waiting on it
    introspector = Introspector(endpoint.url, "rs", "secret")
    results: list[dict[str, Any]] = []

    async def ask() -> None:
        results.append(await introspector.claims("tok"))

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(ask)
        with anyio.fail_after(10):
            while not endpoint.calls:  # the call reached the endpoint
                await anyio.sleep(0.01)
        endpoint.release.set()
    assert len(results) == 5 and len(endpoint.calls) == 1


@pytest.mark.parametrize(
    ("status", "raw", "says"),
    [
        (500, b"{}", "answered HTTP 500"),
        (401, b'{"error":"invalid_client"}', "answered HTTP 401"),
        (302, b"", "answered HTTP 302"),  # not followed: the token would go elsewhere
        (200, b"<html>", "did not answer JSON"),
        (200, b'{"sub":"ada"}', "did not answer an introspection response"),
        (200, b'{"active":"yes"}', "did not answer an introspection response"),
        (200, b'{"active":true,"pad":"' + b"x" * MAX_ANSWER + b'"}', "more than"),
    ],
)
async def test_an_endpoint_that_does_not_answer_properly_is_an_error_not_a_verdict(
    endpoint: Endpoint, status: int, raw: bytes, says: str
) -> None:
    endpoint.status, endpoint.raw = status, raw
    introspector = Introspector(endpoint.url, "rs", "secret")
    for _ in range(2):  # and it is not cached
        with pytest.raises(IntrospectionError, match=says):
            await introspector.claims("tok")
    assert len(endpoint.calls) == 2


async def test_an_unreachable_endpoint_is_an_error() -> None:
    with pytest.raises(IntrospectionError, match="cannot reach"):
        await Introspector("http://127.0.0.1:9/introspect", "rs", "secret").claims("tok")
