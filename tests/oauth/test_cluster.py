"""The authorization server as a cluster: two hosts, each with `--workers 2`, on one real Redis,
behind the shipped nginx site (tests/support/cluster.py). A sign-in begun through one host is
finished through that host restarted mid-flow; the code is redeemed, a tool called and the token
refreshed through the other host; the renewed token works through nginx. The browser and token
steps address each host's own port so that which host serves them is not up to nginx."""

from __future__ import annotations

import urllib.parse
from typing import Any

from tests.oauth.conftest import (
    APP_ID,
    APP_SECRET,
    CLIENT_REDIRECT,
    PENDING,
    Bed,
    Browser,
    answer_of,
    authorize_url,
    host_args,
    register,
)
from tests.support.cluster import Nginx
from tests.support.http import HttpHost, http_session
from tests.support.idp import IdentityProvider, Response, client, request
from tests.support.ports import free_port

SEED = "X-Mcp-Session-Seed"  # as the shipped site's comments run the hosts


def at(url: str, origin: str) -> str:
    """`url` addressed to another origin (one host's own port instead of nginx's)."""
    parts = urllib.parse.urlsplit(url)
    return parts._replace(netloc=urllib.parse.urlsplit(origin).netloc).geturl()


def token(origin: str, form: dict[str, str]) -> Response:
    return request("POST", origin + "/oauth/token", form=form)


async def call_add(mcp_url: str, access_token: str) -> Any:
    """The official SDK's client with the bearer token: a tool call."""
    async with http_session(mcp_url, {"authorization": f"Bearer {access_token}"}) as session:
        return await session.call_tool("add", {"a": 2, "b": 3})


async def test_two_hosts_of_two_workers_behind_nginx_share_sign_ins_and_survive_a_restart(
    redis_url: str, nginx: Any
) -> None:
    port = free_port()
    public_url = f"http://127.0.0.1:{port}"
    hosts: dict[str, HttpHost] = {}
    with IdentityProvider([client(APP_ID, APP_SECRET, [public_url + "/oauth/callback"])]) as idp:

        def start(name: str, on: int) -> HttpHost:
            args = host_args(
                idp, public_url, "--store", redis_url, "--workers", "2", "--session-id-header", SEED
            )
            hosts[name] = HttpHost(*args, env={"APP_ID": APP_ID, "APP_SECRET": APP_SECRET}, port=on)
            return hosts[name]

        try:
            a, b = start("a", free_port()), start("b", free_port())
            origin_a, origin_b = (h.url.removesuffix("/mcp") for h in (a, b))
            proxy: Nginx = nginx([o.removeprefix("http://") for o in (origin_a, origin_b)], port)
            bed = Bed(idp, a, public_url, start_host=lambda *more: a)

            client_id = register(bed)  # through nginx
            asked = authorize_url(bed, client_id)
            browser = Browser(idp)
            page = browser.open(at(asked.url, origin_a))  # the consent page from host a
            pending = PENDING.search(page.body.decode())
            assert page.status == 200 and pending is not None, page.body[:300]
            consent = {"pending": pending.group(1), "decision": "allow"}
            # (the page's origin is the public one: that is where the user's browser was sent)
            answer = browser.open(origin_a + "/oauth/authorize", consent, origin=public_url)
            assert answer.status == 303, answer.body[:300]

            assert a.terminate() == 0  # host a goes while the user signs in at the provider ...
            a = start("a", urllib.parse.urlsplit(origin_a).port or 0)
            back = idp.sign_in(answer.headers["location"], "carol", cookies=browser.jar)
            landed = browser.open(at(back, origin_a))  # ... and its successor takes the callback
            assert landed.status == 302 and landed.headers["location"].startswith(CLIENT_REDIRECT)
            code = answer_of(landed.headers["location"])
            assert code["state"] == asked.state and code["iss"] == public_url + "/"

            redeem = {
                "grant_type": "authorization_code",
                "code": code["code"],
                "redirect_uri": CLIENT_REDIRECT,
                "code_verifier": asked.verifier,
                "client_id": client_id,
            }
            tokens = token(origin_b, redeem)  # the code, the tool call and the refresh: host b
            assert tokens.status == 200, tokens.body
            added = await call_add(origin_b + "/mcp", tokens.json()["access_token"])
            assert added.is_error is False and added.content[0].text == "5"
            refresh = {"grant_type": "refresh_token", "refresh_token": tokens.json()["refresh_token"]}
            renewed = token(origin_b, {**refresh, "client_id": client_id})
            assert renewed.status == 200, renewed.body
            added = await call_add(proxy.url, renewed.json()["access_token"])  # and through nginx
            assert added.is_error is False and added.content[0].text == "5"
            reused = token(origin_a, {**refresh, "client_id": client_id})  # the rotation is shared
            assert reused.status == 400 and reused.json()["error"] == "invalid_grant"
        finally:
            for host in hosts.values():
                host.terminate()
