"""The keys protomcp signs its access tokens with, and the JWKS it publishes.

Either the operator's (--oauth-signing-key-env: one or more PEM private keys; the first signs,
all are published, so a new key is rolled in by putting it first and the old one dropped once
its tokens have expired) or made here and kept in the --store: one key per period, made by the
first host that needs it (the others read it), published until every token it signed has
expired. Either way a rotation signs nobody out: refresh tokens do not depend on the key."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from protomcp_host.oauth.records import Records

KEY_PERIOD = 30 * 86400.0  # seconds a made key signs before the next one takes over
REREAD_AFTER = 60.0  # seconds the keys read from the store are used before being read again


class KeyError_(Exception):
    """A --oauth-signing-key-env value that is not a usable private key."""


@dataclass(frozen=True)
class SigningKey:
    kid: str
    algorithm: str
    private: Any  # a cryptography private key
    public_jwk: dict[str, Any]


def load_pem_keys(text: str) -> list[SigningKey]:
    """Every PEM private key in `text` (in order). Raises KeyError_."""
    blocks = []
    for part in text.split("-----END ")[:-1]:
        start = part.find("-----BEGIN ")
        if start < 0:
            raise KeyError_("no '-----BEGIN' line before '-----END'")
        kind = part[start:].split("-----", 2)[1].removeprefix("BEGIN ")
        blocks.append(part[start:] + f"-----END {kind}-----\n")
    if not blocks:
        raise KeyError_("no PEM private key (-----BEGIN PRIVATE KEY----- ...)")
    return [signing_key(block.encode()) for block in blocks]


def signing_key(pem: bytes) -> SigningKey:
    try:
        private = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyError_(f"not a PEM private key without a password: {exc}") from None
    if isinstance(private, ec.EllipticCurvePrivateKey) and isinstance(private.curve, ec.SECP256R1):
        algorithm = "ES256"
    elif isinstance(private, rsa.RSAPrivateKey) and private.key_size >= 2048:
        algorithm = "RS256"
    elif isinstance(private, ed25519.Ed25519PrivateKey):
        algorithm = "EdDSA"
    else:
        raise KeyError_("use an EC P-256, RSA (2048 bits or more) or Ed25519 private key")
    jwk = json.loads(jwt.get_algorithm_by_name(algorithm).to_jwk(private.public_key()))
    kid = _thumbprint(jwk)
    jwk.update({"kid": kid, "alg": algorithm, "use": "sig"})
    return SigningKey(kid, algorithm, private, jwk)


def new_key_pem() -> bytes:
    return ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638: the SHA-256 of the required members, sorted, without whitespace."""
    required = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}
    members = {name: jwk[name] for name in required[jwk["kty"]]}
    canonical = json.dumps(members, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(hashlib.sha256(canonical).digest()).rstrip(b"=").decode()


class KeyRing:
    def __init__(
        self,
        records: Records,
        given: list[SigningKey],
        *,
        token_ttl: float,
        period: float = KEY_PERIOD,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.records = records
        self.clock = clock
        self.given = given  # the operator's keys (none: made and kept in the store)
        self.token_ttl = token_ttl
        self.period = period
        self._read: tuple[float, int, list[SigningKey]] = (float("-inf"), -1, [])

    async def signer(self) -> SigningKey:
        if self.given:
            return self.given[0]
        return (await self._made())[0]

    async def published(self) -> list[SigningKey]:
        return list(self.given) if self.given else await self._made()

    async def jwks(self) -> dict[str, Any]:
        return {"keys": [key.public_jwk for key in await self.published()]}

    async def _made(self) -> list[SigningKey]:
        """This period's key (made now if no host has) and the last period's, still verifying
        the tokens it signed."""
        now = self.clock()
        period = int(now // self.period)
        read_at, read_period, keys = self._read
        if period == read_period and now - read_at < REREAD_AFTER:
            return keys
        lifetime = 2 * self.period + self.token_ttl  # signs for a period, verifies after it
        current = await self.records.get("key", str(period))
        if current is None:  # (the first host to need it makes it; a racing host's is kept)
            current = await self.records.put_first(
                "key", str(period), {"pem": new_key_pem().decode()}, lifetime
            )
        keys = [signing_key(current["pem"].encode())]
        previous = await self.records.get("key", str(period - 1))
        if previous is not None:
            keys.append(signing_key(previous["pem"].encode()))
        self._read = (now, period, keys)
        return keys
