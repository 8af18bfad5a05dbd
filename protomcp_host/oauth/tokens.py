"""What the token endpoint hands out: short-lived JWT access tokens protomcp signs (audience:
this MCP server), and opaque refresh tokens, stored hashed, in families (one per sign-in) that
rotate on every use: a refresh token presented twice revokes its whole family (RFC 9700 §4.14).

A refresh token reads `<family>.<secret>`; the family record holds the digest of the one token
that may be used next and of a few it replaced (a replaced one presented again is the reuse)."""

from __future__ import annotations

import secrets
import time
import uuid
from dataclasses import dataclass
from typing import Any

import jwt

from protomcp_host.oauth.keys import KeyRing
from protomcp_host.oauth.records import FAMILY_TTL, USED_TTL, Records, digest

REPLACED_KEPT = 20  # digests of replaced refresh tokens a family remembers (reuse detection)


@dataclass(frozen=True)
class Grant:
    """What a sign-in granted a client: the tokens issued for it carry this."""

    client_id: str
    subject: str
    scope: str  # space-separated
    resource: str
    provider: str  # who vouched for the subject (an issuer URL, or GitHub's web address)

    def as_record(self) -> dict[str, Any]:
        return {
            "client_id": self.client_id,
            "subject": self.subject,
            "scope": self.scope,
            "resource": self.resource,
            "provider": self.provider,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Grant:
        return cls(
            record["client_id"], record["subject"], record["scope"], record["resource"], record["provider"]
        )


class Reused(Exception):
    """A refresh token already replaced was presented again: its family is revoked."""


class Tokens:
    def __init__(self, records: Records, keys: KeyRing, issuer: str, access_ttl: float) -> None:
        self.records = records
        self.keys = keys
        self.issuer = issuer
        self.access_ttl = access_ttl

    async def access_token(self, grant: Grant) -> str:
        key = await self.keys.signer()
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": grant.subject,
            "aud": grant.resource,
            "client_id": grant.client_id,
            "scope": grant.scope,
            "idp": grant.provider,
            "iat": now,
            "exp": now + int(self.access_ttl),
            "jti": uuid.uuid4().hex,
        }
        headers = {"kid": key.kid, "typ": "at+jwt"}  # RFC 9068
        return jwt.encode(claims, key.private, algorithm=key.algorithm, headers=headers)

    async def new_family(self, grant: Grant, family: str | None = None) -> str:
        """A new sign-in's refresh token (`family`: the id the authorization code reserved)."""
        family = family or secrets.token_urlsafe(16)
        token = f"{family}.{secrets.token_urlsafe(32)}"
        record = {**grant.as_record(), "current": digest(token), "replaced": []}
        await self.records.put("family", family, record, FAMILY_TTL)
        return token

    async def rotate(self, token: str, client_id: str) -> tuple[Grant, str] | None:
        """The grant of a refresh token and its replacement; None when it is not valid (or not
        this client's). Raises Reused (having revoked the family) for a replaced one."""
        family, _, _ = token.partition(".")
        record = await self.records.get("family", family)
        if record is None or record.get("client_id") != client_id:
            return None
        presented = digest(token)
        if presented in record["replaced"]:
            await self.records.delete("family", family)
            raise Reused
        if not secrets.compare_digest(presented, record["current"]):
            return None
        if not await self.records.claim("used", presented, USED_TTL):  # another host was first
            await self.records.delete("family", family)
            raise Reused
        new = f"{family}.{secrets.token_urlsafe(32)}"
        record["replaced"] = [presented, *record["replaced"]][:REPLACED_KEPT]
        record["current"] = digest(new)
        await self.records.put("family", family, record, FAMILY_TTL)
        return Grant.from_record(record), new

    async def revoke_family(self, family: str) -> None:
        await self.records.delete("family", family)

    async def revoke(self, token: str, client_id: str) -> None:
        """RFC 7009: a refresh token of this client revokes its family; anything else (an
        access token, which expires soon, or a token not ours) is ignored."""
        family, _, _ = token.partition(".")
        record = await self.records.get("family", family)
        if record is None or record.get("client_id") != client_id:
            return
        presented = digest(token)
        if presented == record["current"] or presented in record["replaced"]:
            await self.records.delete("family", family)
