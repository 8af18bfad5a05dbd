"""The signing keys (oauth/keys.py): the operator's PEM keys (the first signs, all published),
or keys made once and kept in the store, one per period, the last one still published: a
rotation signs nobody out. Checked with the resource-server verifier the host uses."""

from __future__ import annotations

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from protomcp_host.oauth.keys import KeyError_, KeyRing, load_pem_keys, new_key_pem
from protomcp_host.oauth.records import Records
from protomcp_host.oauth.tokens import Grant, Tokens
from protomcp_host.store.memory import MemoryStore
from protomcp_host.transports.http.guard import Identity
from protomcp_host.transports.http.oauth import OAuthResource

pytestmark = pytest.mark.fast
ISSUER, RESOURCE = "https://tools.example/", "https://tools.example/mcp"
GRANT = Grant("client", "alice", "", RESOURCE, "https://idp.example")


def verifier(ring: KeyRing) -> OAuthResource:
    resource = OAuthResource("", ISSUER, audience=RESOURCE, public_resource=RESOURCE, refresh_after=0)
    resource.fetch_jwks = ring.jwks
    resource.start("http://127.0.0.1:1/mcp")
    return resource


async def accepted(resource: OAuthResource, token: str) -> bool:
    return isinstance(await resource.check(f"Bearer {token}"), Identity)


async def test_made_keys_rotate_without_signing_anyone_out() -> None:
    now = [1000.0]
    ring = KeyRing(Records(MemoryStore()), [], token_ttl=900, period=100, clock=lambda: now[0])
    tokens = Tokens(Records(MemoryStore()), ring, ISSUER, 900)
    resource = verifier(ring)
    old = await tokens.access_token(GRANT)
    first = (await ring.signer()).kid
    now[0] += 100  # the next period: a new key signs
    new = await tokens.access_token(GRANT)
    assert (await ring.signer()).kid != first
    assert [key["kid"] for key in (await ring.jwks())["keys"]][1] == first  # still published
    assert await accepted(resource, old) and await accepted(resource, new)
    now[0] += 200  # two periods on: the first key is no longer published
    assert first not in [key["kid"] for key in (await ring.jwks())["keys"]]


async def test_every_host_of_a_store_signs_with_the_same_made_key() -> None:
    store = MemoryStore()
    one = KeyRing(Records(store), [], token_ttl=900)
    two = KeyRing(Records(store), [], token_ttl=900)
    assert (await one.signer()).kid == (await two.signer()).kid


async def test_the_first_of_the_operators_keys_signs_and_all_are_published() -> None:
    older, newer = new_key_pem().decode(), new_key_pem().decode()
    ring = KeyRing(Records(MemoryStore()), load_pem_keys(older), token_ttl=900)
    token = await Tokens(Records(MemoryStore()), ring, ISSUER, 900).access_token(GRANT)
    rotated = KeyRing(Records(MemoryStore()), load_pem_keys(newer + older), token_ttl=900)
    assert (await rotated.signer()).kid == load_pem_keys(newer)[0].kid
    assert len((await rotated.jwks())["keys"]) == 2
    assert await accepted(verifier(rotated), token)  # signed before the rotation


def test_rsa_and_ed25519_keys_work_and_weak_ones_do_not() -> None:
    def pem(key: object) -> str:
        return key.private_bytes(  # type: ignore[attr-defined]
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()

    assert load_pem_keys(pem(rsa.generate_private_key(65537, 2048)))[0].algorithm == "RS256"
    assert load_pem_keys(pem(ed25519.Ed25519PrivateKey.generate()))[0].algorithm == "EdDSA"
    with pytest.raises(KeyError_):
        load_pem_keys(pem(rsa.generate_private_key(65537, 1024)))
    with pytest.raises(KeyError_):
        load_pem_keys("not a key")


async def test_the_published_keys_are_public_only() -> None:
    ring = KeyRing(Records(MemoryStore()), [], token_ttl=900)
    [key] = (await ring.jwks())["keys"]
    assert "d" not in key and key["use"] == "sig" and key["alg"] == "ES256"
    assert jwt.PyJWK(key).algorithm_name == "ES256"
