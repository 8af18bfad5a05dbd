"""Who may reach the host over HTTP, and for how long: connection bounds (header / keep-alive
timeouts, the connection cap), OAuth tokens (JWKS refetches, what a refusal reveals, sessions
bound to the token's subject or hash, malformed claims), CORS, the HTTP+SSE transport (2024-11-05)'s
sessions, and the secret the host keeps from its tool processes. End to end, through the real
host over HTTP."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import orjson
import pytest

from tests.support import http as http_hosts
from tests.support.hosts import HOST, TOOLS
from tests.support.http import ACCEPT, INITIALIZE, INITIALIZED, http_session, rpc, sse_events
from tests.support.jwks import ISSUER, Jwks, serve_jwks

STREAMS = str(TOOLS / "streams.py")
ENVIRONMENT = str(TOOLS / "environment.py")
JSON = {"accept": ACCEPT, "content-type": "application/json"}


def address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def post(body: bytes, extra: bytes = b"") -> bytes:
    """A raw POST of `body` to /mcp."""
    return (
        b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: " + ACCEPT.encode() + b"\r\n"
        b"content-type: application/json\r\ncontent-length: "
        + str(len(body)).encode()
        + b"\r\n"
        + extra
        + b"\r\n"
        + body
    )


async def wait_closed(readers: list[asyncio.StreamReader], count: int, timeout: float = 30) -> None:
    """Wait until `count` of these connections were closed by the host without an answer."""
    reads = [asyncio.ensure_future(reader.read()) for reader in readers]
    closed = 0
    try:
        with anyio.fail_after(timeout):
            for done in asyncio.as_completed(reads):
                assert await done == b""  # closed, not answered
                closed += 1
                if closed == count:
                    return
    finally:
        for read in reads:
            read.cancel()


# -- connections ---------------------------------------------------------------------------
# A host whose limit on open files is 512 (soft and hard): it cannot raise it, so it serves
# fewer connections than the default --max-connections; before, 600 silent connections used up
# the open files and accept() failed for every client.
LIMITED = (
    "import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (512, 512)); "
    "os.execv(sys.executable, [sys.executable, '-m', 'protomcp_host', *sys.argv[1:]])"
)


async def test_silent_connections_do_not_lock_clients_out(
    http_host: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_hosts, "HOST", [sys.executable, "-c", LIMITED])
    host = http_host("run", STREAMS, "--header-timeout", "600")
    assert host.wait_stderr(lambda line: "serving at most" in line)  # the cap fits the limit
    silent = [await asyncio.open_connection(*address(host.url)) for _ in range(600)]
    try:
        with anyio.fail_after(60):  # before: accept() failed, and the client waited forever
            async with http_session(host.url) as session:
                assert text_of(await session.call_tool("add", {"a": 40, "b": 2})) == "42"
        await wait_closed([reader for reader, _ in silent], 300)  # the oldest made room
    finally:
        for _, writer in silent:
            writer.close()


async def test_max_connections_replaces_silent_ones_first(http_host: Any) -> None:
    host = http_host("run", STREAMS, "--max-connections", "20", "--header-timeout", "600")
    silent = [await asyncio.open_connection(*address(host.url)) for _ in range(60)]
    try:
        async with http_session(host.url) as session:
            assert text_of(await session.call_tool("add", {"a": 1, "b": 2})) == "3"
        await wait_closed([reader for reader, _ in silent], 40)
    finally:
        for _, writer in silent:
            writer.close()


async def test_max_connections_answers_503_when_all_are_serving(http_host: Any) -> None:
    host = http_host("run", STREAMS, "--max-connections", "2")
    streams = []
    sessions = []
    for _ in range(2):  # sessions made on connections the host has closed when we see EOF
        reader, writer = await asyncio.open_connection(*address(host.url))
        writer.write(post(INITIALIZE, b"connection: close\r\n"))
        with anyio.fail_after(30):
            head = await reader.read()
        writer.close()
        sessions.append(head.split(b"mcp-session-id: ")[1].split(b"\r\n")[0].decode())
    try:
        for session_id in sessions:  # two standalone GET streams: two requests in progress
            reader, writer = await asyncio.open_connection(*address(host.url))
            writer.write(
                f"GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n"
                f"mcp-session-id: {session_id}\r\n\r\n".encode()
            )
            with anyio.fail_after(30):
                assert (await reader.readline()).startswith(b"HTTP/1.1 200")
            streams.append(writer)
        reader, writer = await asyncio.open_connection(*address(host.url))
        with anyio.fail_after(30):
            answer = await reader.read()
        writer.close()
        assert answer.startswith(b"HTTP/1.1 503") and b"too many connections" in answer
    finally:
        for writer in streams:
            writer.close()


async def test_header_and_keep_alive_timeouts(http_host: Any) -> None:
    host = http_host("run", STREAMS, "--header-timeout", "2", "--keep-alive-timeout", "0.5")
    silent = await asyncio.open_connection(*address(host.url))
    partial = await asyncio.open_connection(*address(host.url))
    partial[1].write(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n")
    kept = await asyncio.open_connection(*address(host.url))
    kept[1].write(post(INITIALIZE))
    with anyio.fail_after(30):
        assert (await kept[0].readline()).startswith(b"HTTP/1.1 200")
    try:
        await wait_closed([silent[0], partial[0]], 2)  # no complete header: closed, unanswered
        with anyio.fail_after(30):
            rest = await kept[0].read()  # the answer, then the idle connection is closed
        assert b'"serverInfo"' in rest
    finally:
        for _, writer in (silent, partial, kept):
            writer.close()
    async with http_session(host.url) as session:  # a client that talks is served
        assert text_of(await session.call_tool("add", {"a": 2, "b": 2})) == "4"


async def test_a_request_header_over_the_limit_is_refused_before_it_is_parsed(http_host: Any) -> None:
    """64 KiB of request line and header fields at most: one byte more gets 431 and the connection
    closes, whether the header ended or is still coming (before: a 10 MB header was read whole
    and parsed, an 8 MB token verified)."""
    from protomcp_host.transports.http.connections import ConnectionLimits

    limit = ConnectionLimits().max_header
    host = http_host("run", STREAMS, "--header-timeout", "60")
    head = b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nx-pad: "

    async def exchange(data: bytes) -> bytes:
        reader, writer = await asyncio.open_connection(*address(host.url))
        try:
            writer.write(data)
            with anyio.fail_after(30):
                return await reader.readuntil(b"\r\n")
        finally:
            writer.close()

    def padded(size: int, end: bytes) -> bytes:
        return head + b"a" * (size - len(head) - len(end)) + end

    assert (await exchange(padded(limit, b"\r\n\r\n"))).startswith(b"HTTP/1.1 200")  # at the limit
    assert (await exchange(padded(limit + 1, b"\r\n\r\n"))).startswith(b"HTTP/1.1 431")
    assert (await exchange(padded(limit + 1, b""))).startswith(b"HTTP/1.1 431")  # not even ended


# -- OAuth ---------------------------------------------------------------------------------
@pytest.fixture
def jwks() -> Iterator[Jwks]:
    yield from serve_jwks()


def bearer(token: str) -> dict[str, str]:
    return {**JSON, "authorization": f"Bearer {token}"}


async def test_jwks_refetch_is_rate_limited_and_refusals_reveal_nothing(http_host: Any, jwks: Jwks) -> None:
    host = http_host("run", STREAMS, "--oauth-jwks", jwks.url, "--oauth-issuer", ISSUER)
    assert jwks.requests == 1  # read at startup
    jwks.down = True
    rotated = jwks.token(host.url, kid="k2", sub="ada")  # signed with a key the host has not seen
    async with httpx2.AsyncClient(timeout=30) as client:

        async def refused() -> None:
            answer = await client.post(host.url, content=INITIALIZE, headers=bearer(rotated))
            assert answer.status_code == 401
            assert answer.json()["error"]["message"] == "Unauthorized: the access token is not valid"
            challenge = answer.headers["www-authenticate"]
            assert 'error="invalid_token"' in challenge and "error_description" not in challenge
            for where in (answer.text, challenge):
                assert "127.0.0.1:" + jwks.url.split(":")[2].split("/")[0] not in where
                assert "HTTP Error" not in where and "maintenance" not in where and "k2" not in where

        async with anyio.create_task_group() as tg:  # at once: one refetch between them
            for _ in range(5):
                tg.start_soon(refused)
        for _ in range(5):  # and later: none within --oauth-jwks-refresh (60 s by default)
            await refused()
        assert jwks.requests == 2
        # The host's operator is told what went wrong.
        line = host.wait_stderr(lambda text: "cannot read the JWKS" in text)
        assert jwks.url in line and "503" in line and "keeping the 1 keys" in line
        # The keys read last stay in use.
        good = await client.post(
            host.url, content=INITIALIZE, headers=bearer(jwks.token(host.url, sub="ada"))
        )
        assert good.status_code == 200, good.text


async def test_rotated_keys_are_fetched_once_then_rate_limited(http_host: Any, jwks: Jwks) -> None:
    host = http_host("run", STREAMS, "--oauth-jwks", jwks.url, "--oauth-issuer", ISSUER)
    jwks.published = ["k1", "k2"]  # the authorization server rotates in a new key
    async with httpx2.AsyncClient(timeout=30) as client:
        rotated = await client.post(
            host.url, content=INITIALIZE, headers=bearer(jwks.token(host.url, kid="k2"))
        )
        assert rotated.status_code == 200, rotated.text
        assert jwks.requests == 2
        for _ in range(3):  # a key id nobody published: refused without asking again
            unknown = jwks.token(host.url, kid="k2", kid_header="k9")
            answer = await client.post(host.url, content=INITIALIZE, headers=bearer(unknown))
            assert answer.status_code == 401
        assert jwks.requests == 2


async def test_sessions_are_bound_to_the_subject_or_the_token(http_host: Any, jwks: Jwks) -> None:
    host = http_host("run", STREAMS, "--oauth-jwks", jwks.url, "--oauth-issuer", ISSUER)
    ping = rpc(1, "ping")
    async with httpx2.AsyncClient(timeout=30) as client:

        async def create(token: str) -> dict[str, str]:
            created = await client.post(host.url, content=INITIALIZE, headers=bearer(token))
            assert created.status_code == 200, created.text
            return {"mcp-session-id": created.headers["mcp-session-id"]}

        async def status(token: str, session: dict[str, str]) -> int:
            return (
                await client.post(host.url, content=ping, headers={**bearer(token), **session})
            ).status_code

        # Two tokens without 'sub' (two clients of the same issuer): neither may use the other's session.
        first, second = jwks.token(host.url, jti="one"), jwks.token(host.url, jti="two")
        session = await create(first)
        assert await status(second, session) == 404
        assert await status(first, session) == 200
        # A subject keeps its session across tokens (a refreshed token); another subject does not.
        ada, ada_again, bob = (
            jwks.token(host.url, sub=s, jti=j) for s, j in (("ada", "1"), ("ada", "2"), ("bob", "3"))
        )
        session = await create(ada)
        assert await status(ada_again, session) == 200
        assert await status(bob, session) == 404
        # A token without 'sub' does not reach a session of a subject, nor the other way round.
        assert await status(first, session) == 404
        assert await status(ada, await create(first)) == 404


async def test_malformed_claims_are_refused_not_a_crash(http_host: Any, jwks: Jwks) -> None:
    host = http_host(
        "run", STREAMS, "--oauth-jwks", jwks.url, "--oauth-issuer", ISSUER, "--oauth-scope", "tools:call"
    )
    async with httpx2.AsyncClient(timeout=30) as client:
        for claims in (
            {"scope": 5},
            {"scope": ["tools:call"]},  # 'scope' is a string of space-separated scopes
            {"scope": {"tools:call": True}},
            {"scope": None},
            {"scp": [["tools:call"]]},
            {"scope": "tools:call", "sub": 42},
        ):
            answer = await client.post(
                host.url, content=INITIALIZE, headers=bearer(jwks.token(host.url, **claims))
            )
            assert answer.status_code == 401, (claims, answer.text)
            assert 'error="invalid_token"' in answer.headers["www-authenticate"]
        narrow = await client.post(
            host.url, content=INITIALIZE, headers=bearer(jwks.token(host.url, scope="other"))
        )
        assert narrow.status_code == 403
        for claims in ({"scope": "a tools:call"}, {"scp": ["tools:call", "b"]}, {"scp": "tools:call"}):
            answer = await client.post(
                host.url, content=INITIALIZE, headers=bearer(jwks.token(host.url, **claims))
            )
            assert answer.status_code == 200, (claims, answer.text)
    # Without required scopes too: a malformed scope claim is an invalid token, not a 500.
    plain = http_host("run", STREAMS, "--oauth-jwks", jwks.url, "--oauth-issuer", ISSUER)
    async with httpx2.AsyncClient(timeout=30) as client:
        answer = await client.post(
            plain.url, content=INITIALIZE, headers=bearer(jwks.token(plain.url, scope=7))
        )
        assert answer.status_code == 401


async def test_each_refused_token_is_logged_with_its_reason_and_the_leeway_is_set(
    http_host: Any, jwks: Jwks
) -> None:
    host = http_host(
        "run", STREAMS, "--oauth-jwks", jwks.url, "--oauth-issuer", ISSUER, "--oauth-leeway", "5"
    )
    late = jwks.token(host.url, exp=int(time.time()) - 10)  # within the default 30 s leeway, not 5 s
    async with httpx2.AsyncClient(timeout=30) as client:
        for token, reason in (
            (late, "beyond the 5s leeway"),
            (jwks.token("https://other.example.com/mcp"), "meant for 'https://other.example.com/mcp'"),
            (jwks.token(host.url, kid="k1", kid_header="k7"), "no signing key with id 'k7'"),
        ):
            answer = await client.post(host.url, content=INITIALIZE, headers=bearer(token))
            assert answer.status_code == 401
            # Before, only the first refusal of a minute was written.
            host.wait_stderr(lambda line, reason=reason: "refused an access token" in line and reason in line)


# -- CORS ----------------------------------------------------------------------------------
async def test_cors_preflight_and_responses(http_host: Any) -> None:
    app = "https://app.example.com"
    host = http_host(
        "run",
        STREAMS,
        "--allow-origin",
        app,
        "--auth-token-env",
        "PROTOMCP_TEST_TOKEN",
        env={"PROTOMCP_TEST_TOKEN": "s3cret"},
    )
    preflight = {
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type, mcp-session-id",
    }
    async with httpx2.AsyncClient(timeout=30) as client:
        allowed = await client.options(host.url, headers={**preflight, "origin": app})
        assert allowed.status_code == 204, allowed.text  # no token needed: browsers send none here
        assert allowed.headers["access-control-allow-origin"] == app
        assert "POST" in allowed.headers["access-control-allow-methods"]
        assert "DELETE" in allowed.headers["access-control-allow-methods"]
        granted = {h.strip().lower() for h in allowed.headers["access-control-allow-headers"].split(",")}
        assert {
            "authorization",
            "content-type",
            "mcp-session-id",
            "mcp-protocol-version",
            "last-event-id",
        } <= granted
        other = await client.options(host.url, headers={**preflight, "origin": "https://evil.example.com"})
        assert other.status_code == 403
        assert "access-control-allow-origin" not in other.headers
        # Real responses to the allowed origin carry the header, refusals included (the page
        # must read a 401's WWW-Authenticate); the session id is readable by the page.
        unauthorized = await client.post(host.url, content=INITIALIZE, headers={**JSON, "origin": app})
        assert unauthorized.status_code == 401
        assert unauthorized.headers["access-control-allow-origin"] == app
        assert "www-authenticate" in unauthorized.headers["access-control-expose-headers"].lower()
        headers = {**JSON, "origin": app, "authorization": "Bearer s3cret"}
        created = await client.post(host.url, content=INITIALIZE, headers=headers)
        assert created.status_code == 200
        assert created.headers["access-control-allow-origin"] == app
        assert "mcp-session-id" in created.headers["access-control-expose-headers"].lower()
        # Not a browser: no CORS headers.
        plain = await client.post(
            host.url, content=INITIALIZE, headers={**JSON, "authorization": "Bearer s3cret"}
        )
        assert plain.status_code == 200 and "access-control-allow-origin" not in plain.headers


# -- legacy SSE ------------------------------------------------------------------------------
async def test_legacy_sse_sessions_belong_to_their_caller_and_see_the_claims(
    http_host: Any, jwks: Jwks
) -> None:
    from mcp import ClientSession
    from mcp.client.sse import sse_client

    host = http_host("run", STREAMS, "--oauth-jwks", jwks.url, "--oauth-issuer", ISSUER, transport="sse")
    audience = host.url  # the server's URL (/sse) is the default audience
    ada, bob = jwks.token(audience, sub="ada"), jwks.token(audience, sub="bob")
    base = host.url.rsplit("/", 1)[0]
    async with (
        httpx2.AsyncClient(timeout=30) as client,
        client.stream("GET", host.url, headers={"authorization": f"Bearer {ada}"}) as stream,
    ):
        assert stream.status_code == 200
        text = ""
        lines = stream.aiter_text()
        with anyio.fail_after(30):
            while "\n\n" not in text:
                text += await anext(lines)
        endpoint = sse_events(text)[0]["data"]
        assert endpoint.startswith("/messages?session_id=")
        call = rpc(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        for message in (INITIALIZE, INITIALIZED):
            sent = await client.post(base + endpoint, content=message, headers=bearer(ada))
            assert sent.status_code == 202
        intruder = await client.post(base + endpoint, content=call, headers=bearer(bob))
        assert intruder.status_code == 404
        assert (await client.post(base + endpoint, content=call, headers=bearer(ada))).status_code == 202
    async with (
        sse_client(host.url, headers={"authorization": f"Bearer {ada}"}) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        claims = (await session.call_tool("whoami", {})).structured_content
        assert claims["sub"] == "ada" and claims["iss"] == ISSUER
        assert ada not in orjson.dumps(claims).decode()


async def test_legacy_sse_serves_the_metadata_its_challenge_names(http_host: Any, jwks: Jwks) -> None:
    host = http_host("run", STREAMS, "--oauth-jwks", jwks.url, "--oauth-issuer", ISSUER, transport="sse")
    async with httpx2.AsyncClient(timeout=30) as client:
        challenged = await client.get(host.url)
        assert challenged.status_code == 401
        challenge = challenged.headers["www-authenticate"]
        where = challenge.split('resource_metadata="', 1)[1].split('"', 1)[0]
        assert where.endswith("/.well-known/oauth-protected-resource/sse")
        metadata = await client.get(where)  # no token: this is how a client learns where to get one
        assert metadata.status_code == 200, metadata.text
        assert metadata.json()["resource"] == host.url and metadata.json()["authorization_servers"] == [
            ISSUER
        ]


# -- secrets and tool processes ----------------------------------------------------------------
async def test_the_token_variable_is_not_in_tool_processes(http_host: Any) -> None:
    host = http_host(
        "run",
        ENVIRONMENT,
        "--auth-token-env",
        "PROTOMCP_TEST_TOKEN",
        env={"PROTOMCP_TEST_TOKEN": "s3cret", "PROTOMCP_TEST_OTHER": "kept"},
    )
    async with http_session(host.url, headers={"authorization": "Bearer s3cret"}) as session:

        async def getenv(name: str) -> str:
            return text_of(await session.call_tool("getenv", {"name": name}))

        assert await getenv("PROTOMCP_TEST_TOKEN") == "<unset>"
        assert await getenv("PROTOMCP_TEST_OTHER") == "kept"  # the rest of the environment
        assert await getenv("PROTOMCP_HOST_PID") == str(host.proc.pid)  # what the host sets


def test_run_help_says_what_tool_processes_get() -> None:
    done = subprocess.run([*HOST, "run", "--help"], capture_output=True, text=True, timeout=60)
    text = " ".join(done.stdout.split())
    assert "Tool processes get this environment minus the variable --auth-token-env names" in text
    assert "PROTOMCP_FDS, PROTOMCP_HOST_PID, PROTOMCP_SPOOL and PYTHONUNBUFFERED=1" in text
