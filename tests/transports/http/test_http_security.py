"""HTTP security end to end: DNS-rebinding protection, bearer tokens, body limit."""

from __future__ import annotations

import http.client
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import orjson

from tests.support.hosts import TOOLS
from tests.support.http import ACCEPT, INITIALIZE, http_session, open_raw_session

STREAMS = str(TOOLS / "streams.py")
JSON = {"accept": ACCEPT, "content-type": "application/json"}


async def test_host_and_origin_checks(http_host: Any) -> None:
    host = http_host(
        "run", STREAMS, "--allow-origin", "https://app.example.com", "--allow-host", "mcp.example.com"
    )
    async with httpx2.AsyncClient(timeout=30) as client:
        evil_host = await client.post(
            host.url, content=INITIALIZE, headers={**JSON, "host": "evil.example.com"}
        )
        assert evil_host.status_code == 403
        assert "--allow-host evil.example.com" in evil_host.json()["error"]["message"]
        evil_origin = await client.post(
            host.url, content=INITIALIZE, headers={**JSON, "origin": "http://evil.example.com"}
        )
        assert evil_origin.status_code == 403
        assert "--allow-origin http://evil.example.com" in evil_origin.json()["error"]["message"]
        for headers in (
            {"origin": "http://localhost:1234"},
            {"origin": "https://app.example.com"},
            {"host": "mcp.example.com:443"},
            {"host": "localhost"},
        ):
            allowed = await client.post(host.url, content=INITIALIZE, headers={**JSON, **headers})
            assert allowed.status_code == 200, (headers, allowed.text)


async def test_bearer_token(http_host: Any) -> None:
    host = http_host(
        "run", STREAMS, "--auth-token-env", "PROTOMCP_TEST_TOKEN", env={"PROTOMCP_TEST_TOKEN": "s3cret"}
    )
    async with httpx2.AsyncClient(timeout=30) as client:
        missing = await client.post(host.url, content=INITIALIZE, headers=JSON)
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"].startswith("Bearer")
        wrong = await client.post(
            host.url, content=INITIALIZE, headers={**JSON, "authorization": "Bearer nope"}
        )
        assert wrong.status_code == 401
        assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
    async with http_session(host.url, headers={"authorization": "Bearer s3cret"}) as session:
        result = await session.call_tool("add", {"a": 20, "b": 22})
        assert result.content[0].text == "42"
        assert (await session.call_tool("whoami", {})).structured_content == {}  # no claims to show


async def test_missing_token_variable_is_a_startup_error() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "protomcp_host",
            "run",
            STREAMS,
            "--transport",
            "http",
            "--auth-token-env",
            "PROTOMCP_SURELY_UNSET",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    assert "PROTOMCP_SURELY_UNSET" in done.stderr


async def test_body_limit(http_host: Any) -> None:
    host = http_host("run", STREAMS, "--max-body", "2000")
    async with httpx2.AsyncClient(timeout=30) as client:
        session_id = await open_raw_session(client, host.url)
        headers = {**JSON, "mcp-session-id": session_id}
        big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * 3000 + b'"}}'
        declared = await client.post(host.url, content=big, headers=headers)
        assert declared.status_code == 413

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted while read
            for start in range(0, len(big), 500):
                yield big[start : start + 500]

        streamed = await client.post(host.url, content=chunks(), headers=headers)
        assert streamed.status_code == 413
        small = await client.post(
            host.url, content=b'{"jsonrpc":"2.0","id":2,"method":"ping"}', headers=headers
        )
        assert small.status_code == 200


# What http.client (and so requests/urllib3) does: the whole body is sent before the answer is
# read. Refused early (the declared length) or midway (a chunked body counted while read), the
# answer must still be readable: the host reads and throws away the rest of the body (bounded)
# instead of closing with it unread, which resets the connection and loses the 413.
_PINGED = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"'


def _post_whole(url: str, body: bytes, chunked: bool = False, reuse: bool = True) -> tuple[int, bytes]:
    """POST `body` whole, then read the answer; with `reuse`, the connection then serves a GET."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    try:
        if chunked:
            pieces: Iterator[bytes] = (body[at : at + 65536] for at in range(0, len(body), 65536))
            connection.request("POST", parts.path, body=pieces, headers=JSON, encode_chunked=True)
        else:
            connection.request("POST", parts.path, body=body, headers=JSON)
        answer = connection.getresponse()
        status, data = answer.status, answer.read()
        if reuse:
            connection.request("GET", "/healthz/live")
            assert connection.getresponse().read() == b'{"status":"alive"}'
        return status, data
    finally:
        connection.close()


def test_an_oversized_body_sent_whole_is_answered_413(http_host: Any) -> None:
    host = http_host("run", STREAMS, "--max-body", "100000")
    body = _PINGED + b"x" * 1_000_000 + b'"}}'
    for attempt in range(20):  # (a reset is a race: the answer is sometimes read before it)
        status, data = _post_whole(host.url, body, chunked=attempt % 2 == 1)
        assert status == 413
        assert orjson.loads(data)["error"]["message"] == "Payload Too Large: the limit is 100000 bytes" + (
            "" if attempt % 2 else " (--max-body)"
        )


async def test_a_header_after_a_refused_body_is_still_bounded(http_host: Any) -> None:
    """The body read away is not taken for the next request's header, nor hides it: a header
    over the limit sent right after it still gets 431."""
    import asyncio

    from protomcp_host.transports.http.connections import SKIP_SLICE, ConnectionLimits

    host = http_host("run", STREAMS, "--max-body", "1000")
    parts = urlsplit(host.url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        head = f"POST {parts.path} HTTP/1.1\r\nhost: {parts.netloc}\r\ncontent-length: 300000\r\n"
        writer.write(head.encode() + b"content-type: application/json\r\n\r\n" + b"x" * 300_000)
        pad = b"a" * (ConnectionLimits().max_header + SKIP_SLICE)  # (a slice may go unchecked)
        writer.write(b"GET /healthz/live HTTP/1.1\r\nhost: 127.0.0.1\r\nx-pad: " + pad + b"\r\n\r\n")
        with anyio.fail_after(30):
            assert (await reader.readline()).startswith(b"HTTP/1.1 413")
            await reader.readuntil(b'"}}')  # (its JSON-RPC error body)
            assert (await reader.readline()).startswith(b"HTTP/1.1 431")
    finally:
        writer.close()


def test_a_body_far_over_what_is_read_away_ends_cleanly(http_host: Any) -> None:
    """Beyond what the host reads and throws away (16 MiB) the connection closes: the client gets
    the 413 or sees the connection close, never a hang, and the host serves on."""
    from protomcp_host.transports.http.connections import ConnectionLimits

    host = http_host("run", STREAMS, "--max-body", "100000")
    huge = _PINGED + b"x" * (ConnectionLimits().max_unread_body * 3) + b'"}}'
    for _ in range(3):
        try:
            status, _ = _post_whole(host.url, huge, reuse=False)
            assert status == 413
        except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected):
            pass  # closed: with the rest of the body unread, the client may not see the answer
        parts = urlsplit(host.url)
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
        try:
            connection.request("GET", "/healthz/live")  # the host serves on
            assert connection.getresponse().read() == b'{"status":"alive"}'
        finally:
            connection.close()


def _keypair(tmp_path: Any) -> tuple[Any, str]:
    """An RSA key and a JWKS file holding its public half (kid "k1")."""
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = orjson.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    public.update({"kid": "k1", "alg": "RS256", "use": "sig"})
    path = tmp_path / "jwks.json"
    path.write_bytes(orjson.dumps({"keys": [public]}))
    return key, str(path)


async def test_oauth_jwt_resource_server(http_host: Any, tmp_path: Any) -> None:
    import time

    import jwt

    key, jwks = _keypair(tmp_path)
    issuer = "https://auth.example.com"
    host = http_host(
        "run", STREAMS, "--oauth-jwks", jwks, "--oauth-issuer", issuer, "--oauth-scope", "tools:call"
    )
    now = int(time.time())

    def token(**claims: Any) -> str:
        body = {"iss": issuer, "aud": host.url, "exp": now + 600, "iat": now, "scope": "tools:call", **claims}
        return jwt.encode(body, key, algorithm="RS256", headers={"kid": "k1"})

    def auth(value: str) -> dict[str, str]:
        return {**JSON, "authorization": f"Bearer {value}"}

    async with httpx2.AsyncClient(timeout=30) as client:
        base = host.url.rsplit("/", 1)[0]
        metadata = await client.get(base + "/.well-known/oauth-protected-resource/mcp")
        assert metadata.status_code == 200
        assert metadata.json()["resource"] == host.url
        assert metadata.json()["authorization_servers"] == [issuer]
        missing = await client.post(host.url, content=INITIALIZE, headers=JSON)
        assert missing.status_code == 401
        challenge = missing.headers["www-authenticate"]
        assert 'resource_metadata="' + base + '/.well-known/oauth-protected-resource/mcp"' in challenge
        for bad in (
            token(exp=now - 3600),  # expired
            token(aud="https://other.example.com/mcp"),  # meant for another server
            token(iss="https://evil.example.com"),
            jwt.encode(
                {"iss": issuer, "aud": host.url, "exp": now + 60},
                "a-shared-secret-of-at-least-32-bytes!",
                algorithm="HS256",
            ),
        ):
            refused = await client.post(host.url, content=INITIALIZE, headers=auth(bad))
            assert refused.status_code == 401, refused.text
            assert 'error="invalid_token"' in refused.headers["www-authenticate"]
        narrow = await client.post(host.url, content=INITIALIZE, headers=auth(token(scope="tools:list")))
        assert narrow.status_code == 403
        assert 'error="insufficient_scope"' in narrow.headers["www-authenticate"]
        assert 'scope="tools:call"' in narrow.headers["www-authenticate"]
    async with http_session(host.url, headers={"authorization": f"Bearer {token(sub='ada')}"}) as session:
        assert (await session.call_tool("add", {"a": 1, "b": 1})).content[0].text == "2"
        # Tools see the verified claims through ctx.auth, never the token.
        claims = (await session.call_tool("whoami", {})).structured_content
        assert claims["sub"] == "ada" and claims["scope"] == "tools:call" and claims["iss"] == issuer
        assert token(sub="ada") not in orjson.dumps(claims).decode()
    # A session belongs to the caller that created it: another valid caller cannot use its id.
    async with httpx2.AsyncClient(timeout=30) as client:
        alice, bob = token(sub="alice"), token(sub="bob")
        created = await client.post(host.url, content=INITIALIZE, headers=auth(alice))
        session = {"mcp-session-id": created.headers["mcp-session-id"]}
        ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
        assert (
            await client.post(host.url, content=ping, headers={**auth(bob), **session})
        ).status_code == 404
        assert (
            await client.post(host.url, content=ping, headers={**auth(alice), **session})
        ).status_code == 200
