"""ctx.user_state across a cluster with sign-in: two hosts on one real Redis — one plain, one with
`--workers 2` — as protomcp's own authorization server in front of a real identity provider, two
people signed in. What one writes through one host is read through the other, never by the other
person, and expires. The official Python SDK's client makes every call."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio

from tests.oauth.conftest import APP_ID, APP_SECRET, Bed, code_for, host_args, redeem, register
from tests.support.hosts import TOOLS
from tests.support.http import HttpHost, http_session
from tests.support.idp import IdentityProvider, client
from tests.support.ports import free_port

FILE = str(TOOLS / "user_state.py")


def signed_in(mcp_url: str, access_token: str) -> AbstractAsyncContextManager[Any]:
    """The official SDK's client session with the bearer token."""
    return http_session(mcp_url, {"authorization": f"Bearer {access_token}"})


async def recall(
    mcp_url: str, access_token: str, key: str, tool: str = "recall", seen: set[int] | None = None
) -> Any:
    """The value under `key` (`seen`: add the pid of the host process that read it)."""
    async with signed_in(mcp_url, access_token) as session:
        result = await session.call_tool(tool, {"key": key})
    assert not result.is_error, result.content
    if seen is not None:
        seen.add(result.structured_content["host"])
    return result.structured_content["value"]


async def remember(mcp_url: str, access_token: str, key: str, value: Any, **more: Any) -> None:
    async with signed_in(mcp_url, access_token) as session:
        result = await session.call_tool("remember", {"key": key, "value": value, **more})
    assert not result.is_error, result.content


async def test_a_users_state_is_shared_by_hosts_and_workers_never_by_another_user(redis_url: str) -> None:
    port = free_port()
    public_url = f"http://127.0.0.1:{port}"
    hosts: list[HttpHost] = []
    with IdentityProvider([client(APP_ID, APP_SECRET, [public_url + "/oauth/callback"])]) as idp:

        def start(on: int, *more: str) -> HttpHost:
            args = host_args(idp, public_url, "--store", redis_url, *more)
            args[1] = FILE  # (the bed's tool file, replaced by ours)
            host = HttpHost(*args, env={"APP_ID": APP_ID, "APP_SECRET": APP_SECRET}, port=on)
            hosts.append(host)
            return host

        try:
            one = start(port)  # on the public URL's port: the sign-ins go through it
            workers = start(free_port(), "--workers", "2")
            bed = Bed(idp, one, public_url, lambda *more: one)
            client_id = register(bed)

            def sign_in(account: str) -> str:
                code, asked = code_for(bed, client_id, account)
                tokens = redeem(bed, client_id, code, asked.verifier)
                assert tokens.status == 200, tokens.body
                return str(tokens.json()["access_token"])

            alice, bob = sign_in("alice"), sign_in("bob")
            at_one, at_workers = one.url, workers.url

            await remember(at_one, alice, "color", {"name": "blue"})
            workers_seen: set[int] = set()

            async def read_blue() -> None:
                assert await recall(at_workers, alice, "color", seen=workers_seen) == {"name": "blue"}

            # Until both workers have read it: several connections at once, since the workers
            # share one listening socket and, one connection at a time, the same idle one may
            # accept every time (a busy worker leaves the next connection to the other).
            for _ in range(20):
                async with anyio.create_task_group() as tg:
                    for _ in range(6):
                        tg.start_soon(read_blue)
                if len(workers_seen) == 2:
                    break
            assert len(workers_seen) == 2
            assert await recall(at_workers, bob, "color") == "<none>"  # never another user's
            await remember(at_workers, bob, "color", "red")
            assert await recall(at_one, alice, "color", "recall_async") == {"name": "blue"}
            assert await recall(at_one, bob, "color", "recall_async") == "red"

            async with signed_in(at_workers, alice) as session:  # a sync tool, and delete
                await session.call_tool("remember_sync", {"key": "list", "value": [1, 2]})
                gone = await session.call_tool("forget", {"key": "color"})
                assert gone.content[0].text == "true"
            assert await recall(at_one, alice, "list") == [1, 2]
            assert await recall(at_one, alice, "color") == "<none>"
            assert await recall(at_one, bob, "color") == "red"  # bob's own key is untouched

            await remember(at_one, alice, "brief", 1, ttl=0.3)  # expires on every host
            with anyio.fail_after(20):
                while await recall(at_workers, alice, "brief") != "<none>":
                    await anyio.sleep(0.05)
            assert await recall(at_workers, alice, "list") == [1, 2]
        finally:
            for host in hosts:
                host.terminate()
