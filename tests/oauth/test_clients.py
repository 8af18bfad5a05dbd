"""Dynamic client registration (oauth/clients.py, RFC 7591) through the real host: the
redirect-URI rules, and the bound on registrations a flood meets."""

from __future__ import annotations

import pytest

from protomcp_host.oauth.records import REGISTRATIONS
from tests.oauth.conftest import Bed, Beds, post_json


@pytest.mark.parametrize(
    "uris",
    [
        ["http://evil.example/cb"],  # plain http off loopback
        ["https://app.example/cb#fragment"],
        ["https://user:pw@app.example/cb"],
        ["javascript:alert(1)"],
        [],
        ["https://app.example/cb"] * 11,
    ],
)
def test_a_registration_with_bad_redirect_uris_is_refused(bed: Bed, uris: list[str]) -> None:
    answer = post_json(bed.public_url + "/oauth/register", {"redirect_uris": uris})
    assert answer.status == 400 and answer.json()["error"] == "invalid_redirect_uri"


@pytest.mark.parametrize(
    "metadata",
    [
        {"token_endpoint_auth_method": "private_key_jwt"},
        {"grant_types": ["implicit"]},
        {"response_types": ["token"]},
        {"client_name": "x" * 201},
    ],
)
def test_a_registration_asking_what_is_not_served_is_refused(bed: Bed, metadata: dict[str, object]) -> None:
    answer = post_json(
        bed.public_url + "/oauth/register", {"redirect_uris": ["https://a.example/cb"], **metadata}
    )
    assert answer.status == 400 and answer.json()["error"] == "invalid_client_metadata"


def test_https_and_loopback_http_redirects_register(bed: Bed) -> None:
    uris = ["https://app.example/cb", "http://127.0.0.1:5000/cb", "http://localhost/cb", "http://[::1]:7/cb"]
    answer = post_json(bed.public_url + "/oauth/register", {"redirect_uris": uris, "client_name": "Mine"})
    assert answer.status == 201
    body = answer.json()
    assert body["redirect_uris"] == uris and body["token_endpoint_auth_method"] == "none"
    assert "client_secret" not in body


def test_a_registration_flood_meets_the_bound(bed_factory: Beds) -> None:
    """At most REGISTRATIONS.limit per window, over every host of the store: the rest get 429
    and no client. (A server of its own: the flood uses up the window.)"""
    bed = bed_factory()
    answers = [
        post_json(bed.public_url + "/oauth/register", {"redirect_uris": ["https://a.example/cb"]})
        for _ in range(REGISTRATIONS.limit + 40)
    ]
    accepted = [a for a in answers if a.status == 201]
    refused = [a for a in answers if a.status == 429]
    assert len(accepted) + len(refused) == len(answers)
    assert len(accepted) <= REGISTRATIONS.limit and len(refused) >= 40
    assert all(
        a.json()["error"] == "temporarily_unavailable" and "client_id" not in a.json() for a in refused
    )
