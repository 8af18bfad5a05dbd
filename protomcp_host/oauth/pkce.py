"""PKCE (RFC 7636), S256 only: the check of a client's code_verifier against the challenge its
authorization request sent, and the pair protomcp itself sends the provider."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets

_VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}")  # RFC 7636 §4.1
_CHALLENGE = re.compile(r"[A-Za-z0-9\-_]{43}")  # base64url of a SHA-256, unpadded


def s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def valid_challenge(challenge: str) -> bool:
    return _CHALLENGE.fullmatch(challenge) is not None


def verifies(verifier: str, challenge: str) -> bool:
    """The verifier is well formed and hashes to the challenge (compared in constant time)."""
    if _VERIFIER.fullmatch(verifier) is None:
        return False
    return hmac.compare_digest(s256(verifier), challenge)


def new_pair() -> tuple[str, str]:
    """(verifier, challenge) for protomcp's own request to the provider."""
    verifier = secrets.token_urlsafe(48)
    return verifier, s256(verifier)
