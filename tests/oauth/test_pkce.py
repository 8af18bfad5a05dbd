"""PKCE S256 (oauth/pkce.py), with RFC 7636's own example."""

from __future__ import annotations

import pytest

from protomcp_host.oauth import pkce

pytestmark = pytest.mark.fast
VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"  # RFC 7636 Appendix B
CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def test_the_rfc_example_verifies() -> None:
    assert pkce.s256(VERIFIER) == CHALLENGE and pkce.verifies(VERIFIER, CHALLENGE)


@pytest.mark.parametrize("verifier", ["", "short", VERIFIER + "x", "a" * 129, "é" * 43, CHALLENGE])
def test_anything_else_does_not(verifier: str) -> None:
    assert not pkce.verifies(verifier, CHALLENGE)


def test_a_new_pair_verifies() -> None:
    verifier, challenge = pkce.new_pair()
    assert pkce.valid_challenge(challenge) and pkce.verifies(verifier, challenge)
