"""Redirect URIs (oauth/redirects.py): which a client may register, and when an authorization
request's URI is one of them (exactly; a loopback http one on any port, RFC 8252 §7.3)."""

from __future__ import annotations

import pytest

from protomcp_host.oauth.redirects import redirect_matches, redirect_problem

pytestmark = pytest.mark.fast


@pytest.mark.parametrize(
    "uri",
    ["https://app.example/cb", "https://app.example/cb?x=1", "http://127.0.0.1:7/cb", "http://[::1]/cb"],
)
def test_https_and_loopback_http_may_be_registered(uri: str) -> None:
    assert redirect_problem(uri) is None


@pytest.mark.parametrize(
    "uri",
    [
        "http://app.example/cb",
        "http://127.0.0.1.evil.example/cb",
        "https://app.example/cb#x",
        "https://u@app.example/cb",
        "javascript:alert(1)",
        "JavaScript://%0aalert(1)",
        "data:text/html,<script>1</script>",
        "file:///etc/passwd",
        "myapp:",
        "https:///cb",
        "https://app.example:99999/cb",
        "not a url",
    ],
)
def test_anything_else_may_not(uri: str) -> None:
    assert redirect_problem(uri) is not None


def test_a_uri_matches_exactly_or_on_another_loopback_port() -> None:
    registered = ["https://app.example/cb", "http://127.0.0.1:9/cb"]
    assert redirect_matches(registered, "https://app.example/cb")
    assert redirect_matches(registered, "http://127.0.0.1:5000/cb")
    assert not redirect_matches(registered, "https://app.example/cb/")
    assert not redirect_matches(registered, "https://app.example:443/cb")
    assert not redirect_matches(registered, "http://127.0.0.1:5000/other")
    assert not redirect_matches(registered, "http://localhost:9/cb")
    assert not redirect_matches(registered, "https://127.0.0.1:9/cb")
