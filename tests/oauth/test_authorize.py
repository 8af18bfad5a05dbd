"""The browser's way through a sign-in (oauth/authorize.py), attacked through the real host in
front of a real identity provider: each attack is refused and nothing is issued."""

from __future__ import annotations

import urllib.parse

import pytest

from tests.oauth.conftest import (
    CLIENT_REDIRECT,
    Bed,
    Browser,
    answer_of,
    authorize_url,
    redeem,
    register,
)


def test_a_sign_in_ends_at_the_clients_redirect_with_code_state_and_iss(bed: Bed) -> None:
    client_id = register(bed)
    asked = authorize_url(bed, client_id)
    page = bed.browser().consent_page(asked.url)
    text = page.body.decode()
    assert page.status == 200 and "attack test" in text and CLIENT_REDIRECT in text  # who, and where to
    assert page.headers["x-frame-options"] == "DENY"
    back = bed.browser().sign_in(asked.url)
    assert back.startswith(CLIENT_REDIRECT + "?")
    answer = answer_of(back)
    assert answer["state"] == asked.state and answer["iss"] == bed.public_url + "/" and answer["code"]
    assert redeem(bed, client_id, answer["code"], asked.verifier).status == 200


@pytest.mark.parametrize(
    ("override", "error"),
    [
        ({"code_challenge": None, "code_challenge_method": None}, "invalid_request"),  # no PKCE
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"resource": "https://other.example/mcp"}, "invalid_target"),  # RFC 8707
        ({"response_type": "token"}, "unsupported_response_type"),
    ],
)
def test_a_bad_request_is_answered_at_the_redirect_uri_and_never_shows_consent(
    bed: Bed, override: dict[str, str | None], error: str
) -> None:
    client_id = register(bed)
    asked = authorize_url(bed, client_id, **override)
    answer = bed.browser().open(asked.url)
    assert answer.status == 302 and answer.headers["location"].startswith(CLIENT_REDIRECT + "?")
    params = answer_of(answer.headers["location"])
    assert params["error"] == error and params["state"] == asked.state and "code" not in params
    assert params["iss"] == bed.public_url + "/"


def test_an_unregistered_redirect_uri_is_refused_here_and_not_redirected_to(bed: Bed) -> None:
    client_id = register(bed)
    for uri in ("https://evil.example/callback", "http://127.0.0.1:9/callback/../x", CLIENT_REDIRECT + "x"):
        answer = bed.browser().open(authorize_url(bed, client_id, redirect_uri=uri).url)
        assert answer.status == 400 and "location" not in answer.headers  # no open redirect
        assert b"redirect URI is not one the client registered" in answer.body


def test_an_unknown_client_is_refused_here(bed: Bed) -> None:
    answer = bed.browser().open(authorize_url(bed, "no-such-client").url)
    assert answer.status == 400 and "location" not in answer.headers


def test_a_loopback_redirect_may_use_another_port(bed: Bed) -> None:
    """RFC 8252 §7.3: a native client listens on whatever port is free."""
    client_id = register(bed)
    answer = bed.browser().open(
        authorize_url(bed, client_id, redirect_uri="http://127.0.0.1:4711/callback").url
    )
    assert answer.status == 200


def test_a_consent_posted_from_another_browser_is_refused(bed: Bed) -> None:
    """A forged POST (another site's form, or an attacker's own pending id sent to a victim)
    carries no cookie of the consent page: it goes nowhere near the provider."""
    client_id = register(bed)
    page = bed.browser().consent_page(authorize_url(bed, client_id).url)
    pending = page.body.decode().split('name="pending" value="')[1].split('"')[0]
    answer = Browser(bed.idp).open(
        bed.public_url + "/oauth/authorize", {"pending": pending, "decision": "allow"}
    )
    assert answer.status == 400 and "location" not in answer.headers


def test_a_denied_consent_tells_the_client_access_denied(bed: Bed) -> None:
    client_id = register(bed)
    asked = authorize_url(bed, client_id)
    location = bed.browser().allow(asked.url, decision="deny")
    answer = answer_of(location)
    assert (
        location.startswith(CLIENT_REDIRECT) and answer["error"] == "access_denied" and "code" not in answer
    )


def test_a_provider_answer_naming_another_issuer_is_a_mix_up_and_refused(bed: Bed) -> None:
    """RFC 9207 at protomcp's callback: the provider's answer must name the provider."""
    client_id = register(bed)
    browser = bed.browser()
    back = browser.provider_answer(authorize_url(bed, client_id).url)
    parts = urllib.parse.urlsplit(back)
    params = answer_of(back)
    assert params["iss"] == bed.idp.issuer  # oidc-provider sends it
    params["iss"] = "https://attacker.example"
    answer = browser.open(parts._replace(query=urllib.parse.urlencode(params)).geturl())
    assert answer.status == 400 and "location" not in answer.headers
    assert any("another issuer" in line or "names the issuer" in line for line in bed.host.stderr)


def test_a_provider_answer_for_another_browser_is_refused(bed: Bed) -> None:
    """The callback belongs to the browser that consented (its cookie): a victim who is sent
    an attacker's provider answer signs nobody in."""
    client_id = register(bed)
    back = bed.browser().provider_answer(authorize_url(bed, client_id).url)
    answer = Browser(bed.idp).open(back)
    assert answer.status == 400 and "location" not in answer.headers


def test_a_provider_answer_is_used_once(bed: Bed) -> None:
    client_id = register(bed)
    browser = bed.browser()
    back = browser.provider_answer(authorize_url(bed, client_id).url)
    assert browser.open(back).status == 302
    again = browser.open(back)
    assert again.status == 400 and "location" not in again.headers
