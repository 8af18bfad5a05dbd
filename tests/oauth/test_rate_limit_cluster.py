"""Rate limits across a cluster: two hosts, each with `--workers 2`, on one real Redis, in front of a
real identity provider. Two users sign in (two principals); each sends many calls at once, each
call on a connection of its own (so the kernel spreads them over both workers of the host it
reaches) and alternately to the two hosts. Every principal gets exactly its limit, whichever host
and worker counted: one at its limit leaves the other untouched."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2

from tests.oauth.conftest import Beds, code_for, redeem, register
from tests.support.ports import free_port
from tests.support.scale import modern_rpc

LIMIT = 6


async def calls_at_once(urls: list[str], access_token: str, count: int) -> list[dict[str, Any]]:
    """`count` add calls at once, as `access_token`'s holder, round-robin over `urls`."""
    headers = {"authorization": f"Bearer {access_token}"}
    answers: list[dict[str, Any]] = []
    limits = httpx2.Limits(max_keepalive_connections=0)  # (a connection per call)
    async with httpx2.AsyncClient(headers=headers, timeout=30, limits=limits) as http:

        async def call(url: str) -> None:
            answer = await modern_rpc(http, url, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
            answers.append(answer["result"])

        async with anyio.create_task_group() as tg:
            for i in range(count):
                tg.start_soon(call, urls[i % len(urls)])
    return answers


async def test_each_principal_gets_exactly_its_limit_across_hosts_and_workers(
    bed_factory: Beds, redis_url: str
) -> None:
    bed = bed_factory("--store", redis_url, "--workers", "2", "--rate-limit", f"add={LIMIT}/minute")
    other = bed.start_host(on=free_port())
    urls = [bed.mcp_url, other.url]
    client_id = register(bed)
    tokens = {}
    for account in ("alice", "bob"):
        code, asked = code_for(bed, client_id, account)
        redeemed = redeem(bed, client_id, code, asked.verifier)
        assert redeemed.status == 200, redeemed.body
        tokens[account] = redeemed.json()["access_token"]

    with anyio.fail_after(120):
        alice = await calls_at_once(urls, tokens["alice"], 30)
        bob = await calls_at_once(urls, tokens["bob"], 12)
    for answers in (alice, bob):
        admitted = [a for a in answers if not a.get("isError")]
        refused = [a for a in answers if a.get("isError")]
        assert len(admitted) == LIMIT and {a["content"][0]["text"] for a in admitted} == {"5"}
        assert all(a["_meta"]["protomcp/error"]["code"] == "rate_limited" for a in refused)
        assert all(f"allows {LIMIT} calls per minute per caller" in a["content"][0]["text"] for a in refused)
