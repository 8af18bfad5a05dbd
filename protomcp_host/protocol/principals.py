"""Who a signed-in caller is, as one name: what sessions are bound to (transports/http/oauth.py),
what rate limits count by (calls/limits.py) and whose user state a request reaches
(shared/user_state.py). One function, so the three never disagree about who is who.

The name is `sub ISSUER SUBJECT`: the issuer with its spaces and '%' escaped, so the first space
after it ends it and no issuer/subject pair can spell another's (`iss "a b", sub "c"` is not
`iss "a", sub "b c"`); the prefix keeps a subject from ever reading as a name that is not a
subject (a user whose `sub` is "anonymous" is not the anonymous caller)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def principal_of(claims: Mapping[str, Any] | None) -> str | None:
    """The signed-in subject the verified `claims` name; None without claims or without a
    non-empty string `sub` (the caller names nobody)."""
    if claims is None:
        return None
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        return None
    issuer = claims.get("iss")
    issuer = issuer.replace("%", "%25").replace(" ", "%20") if isinstance(issuer, str) else ""
    return f"sub {issuer} {subject}"
