"""Fetching client ID metadata documents (oauth/cimd.py) from a real https server on loopback:
the SSRF rules (loopback, private, link-local, a redirect to any of them; allowed only for a host
named by --oauth-cimd-allow), the bounds on size and time, and the document's own rules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from protomcp_host.oauth import cimd
from tests.oauth.documents import DocumentServer, huge, redirect_to, slow

REDIRECTS = ["http://127.0.0.1:33418/callback"]
ALLOWED = frozenset({"localhost"})


@pytest.fixture
def documents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DocumentServer]:
    with DocumentServer(tmp_path) as server:
        monkeypatch.setenv("SSL_CERT_FILE", str(server.cert))  # (trusted like a public CA's)
        yield server


async def test_a_valid_document_is_fetched_from_an_allowed_host(documents: DocumentServer) -> None:
    url = documents.document("/client.json", REDIRECTS)
    got = await cimd.fetch(url, ALLOWED)
    assert got.metadata["client_name"] == "Document client" and got.ttl == cimd.DEFAULT_TTL


async def test_cache_control_sets_the_ttl_within_bounds(documents: DocumentServer) -> None:
    from tests.oauth.documents import send_json

    url = documents.url("/cached.json")
    body = {"client_id": url, "redirect_uris": REDIRECTS}
    documents.routes["/cached.json"] = lambda h: send_json(h, body, {"cache-control": "max-age=999999"})
    assert (await cimd.fetch(url, ALLOWED)).ttl == 3600


@pytest.mark.parametrize(
    "url",
    [
        "https://localhost:{port}/client.json",  # loopback by name
        "https://127.0.0.1:{port}/client.json",
        "https://[::1]:{port}/client.json",
        "https://10.1.2.3/client.json",  # private
        "https://192.168.0.1/client.json",
        "https://169.254.169.254/latest/meta-data",  # link-local (cloud metadata)
        "https://[fe80::1]/client.json",
        "https://[::ffff:127.0.0.1]:{port}/client.json",  # loopback disguised as IPv6
        "https://0.0.0.0:{port}/client.json",
    ],
)
async def test_loopback_private_and_link_local_addresses_are_refused(
    documents: DocumentServer, url: str
) -> None:
    documents.document("/client.json", REDIRECTS)
    with pytest.raises(cimd.CimdError, match="loopback, private or link-local"):
        await cimd.fetch(url.format(port=documents.port), frozenset())
    assert documents.requests == []  # refused before any connection


async def test_a_redirect_to_a_private_address_is_refused(documents: DocumentServer) -> None:
    documents.document("/client.json", REDIRECTS)
    url = documents.url("/moved.json")
    documents.routes["/moved.json"] = redirect_to(documents.url("/client.json", host="127.0.0.1"))
    with pytest.raises(cimd.CimdError, match="loopback, private or link-local"):
        await cimd.fetch(url, ALLOWED)  # localhost is allowed, 127.0.0.1 is not
    assert documents.requests == ["/moved.json"]


async def test_a_redirect_to_plain_http_is_refused(documents: DocumentServer) -> None:
    url = documents.url("/moved.json")
    documents.routes["/moved.json"] = redirect_to(f"http://localhost:{documents.port}/client.json")
    with pytest.raises(cimd.CimdError, match="not an https URL"):
        await cimd.fetch(url, ALLOWED)


async def test_redirects_are_bounded(documents: DocumentServer) -> None:
    url = documents.url("/loop.json")
    documents.routes["/loop.json"] = redirect_to(url)
    with pytest.raises(cimd.CimdError, match="redirects"):
        await cimd.fetch(url, ALLOWED)
    assert len(documents.requests) == cimd.MAX_REDIRECTS + 1


async def test_a_huge_document_is_refused(documents: DocumentServer) -> None:
    documents.routes["/huge.json"] = huge
    with pytest.raises(cimd.CimdError, match="larger than"):
        await cimd.fetch(documents.url("/huge.json"), ALLOWED)


async def test_a_slow_document_is_refused(documents: DocumentServer) -> None:
    documents.routes["/slow.json"] = slow
    with pytest.raises(cimd.CimdError, match="did not answer within"):
        await cimd.fetch(documents.url("/slow.json"), ALLOWED)


async def test_a_document_naming_another_client_id_is_refused(documents: DocumentServer) -> None:
    documents.routes["/client.json"] = {
        "client_id": "https://elsewhere.example/c.json",
        "redirect_uris": REDIRECTS,
    }
    with pytest.raises(cimd.CimdError, match="client_id is not its URL"):
        await cimd.fetch(documents.url("/client.json"), ALLOWED)


@pytest.mark.parametrize(
    ("more", "why"),
    [
        ({"redirect_uris": []}, "redirect_uris"),
        ({"redirect_uris": ["http://evil.example/cb"]}, "neither https nor http to a loopback"),
        ({"client_secret": "s"}, "client secret"),
        ({"token_endpoint_auth_method": "client_secret_basic"}, "not supported"),
    ],
)
async def test_a_document_breaking_the_rules_is_refused(
    documents: DocumentServer, more: dict[str, object], why: str
) -> None:
    url = documents.url("/client.json")
    documents.routes["/client.json"] = {"client_id": url, "redirect_uris": REDIRECTS, **more}
    with pytest.raises(cimd.CimdError, match=why):
        await cimd.fetch(url, ALLOWED)


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost/client.json",
        "https://localhost",
        "https://localhost/",
        "https://u:p@localhost/c.json",
        "https://localhost/a/../c.json",
        "https://localhost/c.json#x",
    ],
)
async def test_a_client_id_that_cannot_name_a_document_is_refused_unfetched(
    documents: DocumentServer, url: str
) -> None:
    with pytest.raises(cimd.CimdError, match="cannot name a metadata document"):
        await cimd.fetch(url, ALLOWED)
    assert documents.requests == []
