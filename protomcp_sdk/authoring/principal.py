"""``ctx.principal``: who called, as the host's OAuth resource server verified it."""

from __future__ import annotations

from dataclasses import dataclass, field

from protomcp_sdk.wire.jsontypes import JSONObject


@dataclass(frozen=True)
class Principal:
    """The caller of a tool over HTTP with OAuth: its token's subject (``sub``, None when the
    token has none), the scopes it grants (``scope``, space-separated, or ``scp``) and every
    verified claim. The token itself never reaches a tool."""

    subject: str | None
    scopes: frozenset[str]
    claims: JSONObject = field(repr=False)

    @classmethod
    def from_claims(cls, claims: JSONObject) -> Principal:
        subject = claims.get("sub")
        value = claims["scope"] if "scope" in claims else claims.get("scp", "")
        if isinstance(value, str):
            scopes = frozenset(value.split())
        elif isinstance(value, list):
            scopes = frozenset(scope for scope in value if isinstance(scope, str))
        else:
            scopes = frozenset()
        return cls(subject if isinstance(subject, str) else None, scopes, claims)
