"""Refused access tokens are each reported with their reason, rate-limited (refusals.py), and the
resource server names the reason of every refusal and the leeway it allows (oauth.py)."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import jwt
import orjson
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from protomcp_host.transports.http.guard import Identity, Refusal
from protomcp_host.transports.http.oauth import OAuthResource
from protomcp_host.transports.http.refusals import RefusalLog, fingerprint

pytestmark = pytest.mark.fast  # starts no process

ISSUER = "https://auth.example.com"
RESOURCE = "http://127.0.0.1:8000/mcp"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_first_refusals_of_a_window_are_each_written_with_their_reason() -> None:
    lines: list[str] = []
    log = RefusalLog(lines.append, every=60, burst=3, clock=Clock())
    for n, kind in enumerate(["expired", "wrong audience", "unknown key"]):
        log.refused(f"token-{n}", kind, f"{kind} detail")
    assert lines == [
        f"protomcp: refused an access token ({fingerprint(f'token-{n}')}): {kind} detail"
        for n, kind in enumerate(["expired", "wrong audience", "unknown key"])
    ]


def test_refusals_beyond_the_burst_are_counted_by_kind_and_written_when_the_window_ends() -> None:
    lines: list[str] = []
    clock = Clock()
    log = RefusalLog(lines.append, every=60, burst=1, clock=clock)
    log.refused("a", "expired", "expired 3s ago")
    for kind in ["expired", "expired", "wrong audience"]:
        log.refused("b", kind, "not written")
    assert len(lines) == 1
    clock.now += 60  # the next window: what the last one held back comes first
    log.refused("c", "bad signature", "signature")
    assert lines[1:] == [
        "protomcp: refused 3 more access tokens in 60s, beyond the 1 reported one by one: "
        "2 expired, 1 wrong audience",
        f"protomcp: refused an access token ({fingerprint('c')}): signature",
    ]
    clock.now += 60
    log.refused("d", "expired", "again")  # nothing was held back: no summary line
    assert lines[3:] == [f"protomcp: refused an access token ({fingerprint('d')}): again"]


async def test_a_held_back_count_is_written_at_the_end_of_its_window_without_another_refusal() -> None:
    written = asyncio.Event()
    lines: list[str] = []

    def log(line: str) -> None:
        lines.append(line)
        written.set()

    refusals = RefusalLog(log, every=0.05, burst=0)
    refusals.refused("a", "inactive", "not active")
    await asyncio.wait_for(written.wait(), 10)
    assert lines == [
        "protomcp: refused 1 more access token in 0.05s, beyond the 0 reported one by one: 1 inactive"
    ]


# -- the resource server -------------------------------------------------------------------
@pytest.fixture
def key_and_jwks(tmp_path: Path) -> tuple[Any, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = orjson.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    public.update({"kid": "k1", "alg": "RS256", "use": "sig"})
    path = tmp_path / "jwks.json"
    path.write_bytes(orjson.dumps({"keys": [public]}))
    return key, str(path)


def resource(jwks: str, lines: list[str], **options: Any) -> OAuthResource:
    server = OAuthResource(jwks, ISSUER, scopes=("tools:call",), **options)
    server.load_keys()
    server.start(RESOURCE, lines.append)
    return server


def token(key: Any, kid: str = "k1", **claims: Any) -> str:
    now = int(time.time())
    body = {"iss": ISSUER, "aud": RESOURCE, "exp": now + 600, "iat": now - 60, "scope": "tools:call"}
    return jwt.encode(body | claims, key, algorithm="RS256", headers={"kid": kid})


async def test_every_refused_token_is_reported_with_its_reason(key_and_jwks: tuple[Any, str]) -> None:
    key, jwks = key_and_jwks
    lines: list[str] = []
    server = resource(jwks, lines)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = int(time.time())
    cases = [
        (token(key, exp=now - 3600), "s ago, beyond the 30s leeway"),
        (token(key, aud="https://other.example.com/mcp"), "meant for 'https://other.example.com/mcp'"),
        (token(key, iss="https://evil.example.com"), "issued by 'https://evil.example.com'"),
        (token(key, kid="k9"), "no signing key with id 'k9'"),
        (token(other), "Signature verification failed"),
        ("not-a-jwt", "Not enough segments"),
        (token(key, scope="tools:list"), "lacks the scope tools:call (it has: tools:list)"),
    ]
    for presented, _ in cases:
        answer = await server.check(f"Bearer {presented}")
        assert isinstance(answer, Refusal)
    assert len(lines) == len(cases)  # before: only the first refusal of a minute was written
    for line, (presented, reason) in zip(lines, cases, strict=True):
        assert reason in line and fingerprint(presented) in line and presented not in line


async def test_the_leeway_is_what_the_docs_say_and_can_be_set(key_and_jwks: tuple[Any, str]) -> None:
    key, jwks = key_and_jwks
    ten_seconds_late = token(key, exp=int(time.time()) - 10)
    lines: list[str] = []
    assert isinstance(await resource(jwks, lines).check(f"Bearer {ten_seconds_late}"), Identity)  # 30 s
    strict = resource(jwks, lines, leeway=5)
    assert isinstance(await strict.check(f"Bearer {ten_seconds_late}"), Refusal)
    [line] = lines
    late = re.search(r"expired (\d+)s ago, beyond the 5s leeway", line)
    assert late is not None and int(late.group(1)) >= 10


async def test_a_verified_token_is_verified_again_only_once_its_time_is_up(
    key_and_jwks: tuple[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checking a JWT's signature on every request cost half the calls/s of a bearer token
    (benchmarks/auth_bench.py); the same token string is verified once, then only its time."""
    from protomcp_host.transports.http import oauth

    key, jwks = key_and_jwks
    server = resource(jwks, [])
    decoded: list[str] = []
    real_decode = jwt.decode

    def counting_decode(token: str, *args: Any, **kwargs: Any) -> Any:
        decoded.append(token)
        return real_decode(token, *args, **kwargs)

    monkeypatch.setattr(jwt, "decode", counting_decode)
    first, second = token(key, sub="ada"), token(key, sub="bob")
    for _ in range(3):
        for presented in (first, second):
            assert isinstance(await server.check(f"Bearer {presented}"), Identity)
    assert decoded == [first, second]
    identity = await server.check(f"Bearer {first}")
    assert isinstance(identity, Identity) and identity.principal == f"sub {ISSUER} ada"
    monkeypatch.setattr(oauth, "MAX_VERIFIED", 2)  # bounded: the oldest go first
    third = token(key, sub="cy")
    assert isinstance(await server.check(f"Bearer {third}"), Identity)
    assert list(server._verified) == [second, third]
    # Past exp and the leeway by this module's clock: the token is verified again in full (and
    # PyJWT, reading the real clock, accepts it again).
    later = time.time() + 600 + 31
    monkeypatch.setattr(oauth.time, "time", lambda: later)
    assert isinstance(await server.check(f"Bearer {second}"), Identity)
    assert decoded[-1] == second and len(decoded) == 4
