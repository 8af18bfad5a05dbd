"""The authorization server's records in the --store (oauth/records.py): a sign-in begun
through one host finishes through another, a restart of the host mid-flow loses nothing with
Redis, and the creation bounds hold over the store."""

from __future__ import annotations

import urllib.parse

import anyio
import pytest

from protomcp_host.oauth.records import Rate, Records
from protomcp_host.store.memory import MemoryStore
from tests.oauth.conftest import (
    CLIENT_REDIRECT,
    Beds,
    MemoryStorage,
    answer_of,
    authorize_url,
    call_add,
    call_tools_list,
    redeem,
    refresh,
    register,
    sdk_auth,
)
from tests.support.ports import free_port


def on_port(url: str, port: int) -> str:
    parts = urllib.parse.urlsplit(url)
    return parts._replace(netloc=f"127.0.0.1:{port}").geturl()


def test_a_sign_in_begun_through_one_host_finishes_through_another(bed_factory: Beds, redis_url: str) -> None:
    bed = bed_factory("--store", redis_url)
    other_port = free_port()
    bed.start_host(on=other_port)
    client_id = register(bed)
    asked = authorize_url(bed, client_id)
    browser = bed.browser()
    back = browser.provider_answer(asked.url)  # consent through the first host
    answer = browser.open(on_port(back, other_port))  # the provider's answer through the second
    assert answer.status == 302 and answer.headers["location"].startswith(CLIENT_REDIRECT)
    code = answer_of(answer.headers["location"])["code"]
    tokens = redeem(bed, client_id, code, asked.verifier).json()  # the code through the first
    assert call_tools_list(bed, tokens["access_token"]).status == 200


def test_a_restart_mid_flow_loses_nothing_with_redis(bed_factory: Beds, redis_url: str) -> None:
    bed = bed_factory("--store", redis_url)
    client_id = register(bed)
    asked = authorize_url(bed, client_id)
    browser = bed.browser()
    at_provider = browser.allow(asked.url)
    assert bed.host.terminate() == 0  # the host goes while the person signs in at the provider
    bed.host = bed.start_host()
    back = bed.idp.sign_in(at_provider, "erin", cookies=browser.jar)
    answer = browser.open(back)
    assert answer.status == 302, answer.body
    code = answer_of(answer.headers["location"])["code"]
    tokens = redeem(bed, client_id, code, asked.verifier).json()
    assert bed.host.terminate() == 0  # and again: the keys, the family and the client stay
    bed.host = bed.start_host()
    assert call_tools_list(bed, tokens["access_token"]).status == 200  # signed before the restart
    renewed = refresh(bed, client_id, tokens["refresh_token"])
    assert renewed.status == 200 and call_tools_list(bed, renewed.json()["access_token"]).status == 200


async def test_a_rate_never_creates_more_than_its_limit_per_window() -> None:
    records = Records(MemoryStore())
    rate = Rate("test", 20, 3600.0)
    taken = [await records.take_slot(rate) for _ in range(60)]
    assert 0 < sum(taken) <= 20 and taken[:5] == [True] * 5


@pytest.mark.parametrize("kind", ["memory", "redis"])
async def test_a_code_is_claimed_once_over_concurrent_claims(
    kind: str, request: pytest.FixtureRequest
) -> None:
    from protomcp_host.store.open import open_store

    url = request.getfixturevalue("redis_url") if kind == "redis" else None
    store = open_store(url, print)
    async with anyio.create_task_group() as tg:
        await tg.start(store.run)
        records = Records(store)
        wins: list[bool] = []

        async def claim() -> None:
            wins.append(await records.claim("code-used", "abc", 10))

        async with anyio.create_task_group() as claims:
            for _ in range(20):
                claims.start_soon(claim)
        assert wins.count(True) == 1
        tg.cancel_scope.cancel()


async def test_two_workers_share_the_sign_ins_and_tokens(bed_factory: Beds, redis_url: str) -> None:
    """--workers 2: every request may reach either worker (the kernel picks); the SDK's whole
    sign-in, several calls and a refresh all work."""
    bed = bed_factory("--store", redis_url, "--workers", "2")
    storage = MemoryStorage()
    auth = sdk_auth(bed, storage)
    for _ in range(3):
        result = await call_add(bed, auth)
        assert result.is_error is False and result.content[0].text == "5"
    assert storage.client is not None and storage.tokens is not None and storage.tokens.refresh_token
    renewed = refresh(bed, storage.client.client_id, storage.tokens.refresh_token)
    assert renewed.status == 200 and call_tools_list(bed, renewed.json()["access_token"]).status == 200
