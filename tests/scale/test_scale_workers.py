"""`--workers N`: N host processes on one port under a supervising parent, with the official
client in modern mode: requests spread over the workers and each is answered once, a dead
worker is replaced, SIGTERM drains (an in-flight call finishes) and stops every worker."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from protomcp_host.transports.http.affinity import FOLDER_ENV, WORKER_ENV
from tests.support.hosts import TOOLS
from tests.support.scale import CPU, burst, modern_client, modern_rpc, wait_for_file

CONTROL = TOOLS / "control.py"
ROUNDS = TOOLS / "rounds" / "rounds.py"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_workers_share_the_port_and_a_dead_worker_is_replaced(http_host: Any, redis_url: str) -> None:
    host = http_host("run", str(CPU), "--workers", "2", "--processes", "2", "--store", redis_url)
    async with modern_client(host.url) as client:
        assert client.session.protocol_version == "2026-07-28"
        # the workers share a requestState key; tool code never sees it
        has_key = await client.call_tool("has_env", {"name": "PROTOMCP_STATE_KEY"})
        assert has_key.structured_content == {"result": False}
        hosts: set[int] = set()
        with anyio.fail_after(60):
            while len(hosts) < 2:  # connections are accepted by either worker
                hosts |= {r["host"] for r in await burst(client, 16)}
        victim = min(hosts)
        os.kill(victim, signal.SIGKILL)
        host.wait_stderr(lambda line: f"(pid {victim}) exited" in line)
        line = host.wait_stderr(lambda line: "serving again" in line)
        replacement = int(re.search(r"pid (\d+)", line).group(1))  # type: ignore[union-attr]
        seen: set[int] = set()
        with anyio.fail_after(60):
            while replacement not in seen:
                seen |= {r["host"] for r in await burst(client, 16)}
    assert host.terminate() == 0
    for pid in seen | hosts:
        with anyio.fail_after(10):
            while _alive(pid):
                await anyio.sleep(0.02)


async def test_sigterm_lets_an_in_flight_call_finish(http_host: Any, tmp_path: Path, redis_url: str) -> None:
    host = http_host("run", str(CPU), "--workers", "2", "--drain-timeout", "20", "--store", redis_url)
    mark = tmp_path / "running"
    answers: list[str] = []
    async with modern_client(host.url) as client:
        await client.list_tools()  # (the client lists tools before its first call; not during the drain)

        async def slow() -> None:
            result = await client.call_tool("slow", {"seconds": 1.0, "mark": str(mark)})
            answers.append(result.content[0].text)

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(slow)
                await wait_for_file(mark)
                host.proc.send_signal(signal.SIGTERM)
    assert answers == ["slept"]
    assert host.proc.wait(30) == 0


async def test_a_worker_that_cannot_start_stops_the_run(tmp_path: Path, redis_url: str) -> None:
    import subprocess
    import sys

    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('no luck')\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "protomcp_host",
            "run",
            str(broken),
            "--transport",
            "http",
            "--port",
            "0",
            "--workers",
            "2",
            "--store",
            redis_url,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert "no luck" in done.stderr and "a worker exited before it served" in done.stderr


def test_workers_and_the_session_id_header_need_streamable_http() -> None:
    from click.testing import CliRunner

    from protomcp_host.cli.main import main

    runner = CliRunner()
    for args, said in (
        (["--workers", "2"], "--workers: only with --transport http or sse"),
        (["--transport", "sse", "--workers", "2"], "--workers: only with --transport http"),
        (
            ["--transport", "sse", "--session-id-header", "X"],
            "--session-id-header: only with --transport http",
        ),
        (["--processes", "0"], "0 is not in the range x>=1"),
        (["--transport", "http", "--workers", "2", "--agent-id", "a"], "--agent-id with --workers"),
        (["--transport", "http", "--workers", "2"], "--workers 2 needs --store redis://"),
        (
            ["--transport", "http", "--workers", "2", "--store", "memory"],
            "--workers 2 needs --store redis://",
        ),
    ):
        result = runner.invoke(main, ["run", str(CPU), *args])
        assert result.exit_code == 2 and said in result.output, result.output


async def test_a_new_session_takes_a_well_formed_offered_id_only(http_host: Any) -> None:
    import httpx2

    from tests.support.http import ACCEPT, INITIALIZE

    host = http_host("run", str(CPU), "--session-id-header", "X-Seed")
    headers = {"accept": ACCEPT, "content-type": "application/json"}
    good = "0123456789abcdef" * 2
    async with httpx2.AsyncClient(timeout=10) as http:

        async def session_id(seed: str | None) -> str:
            extra = {} if seed is None else {"x-seed": seed}
            response = await http.post(host.url, content=INITIALIZE, headers={**headers, **extra})
            assert response.status_code == 200, response.text
            return response.headers["mcp-session-id"]

        assert await session_id(good) == good
        assert await session_id(good) != good  # taken already: a random one
        assert await session_id("short") != "short"
        assert await session_id("x" * 31 + "/") != "x" * 31 + "/"
        assert len(await session_id(None)) == 32  # no header: random, as without the option


def _pids(mark: Path, pattern: str) -> set[str]:
    return {path.name.rsplit(".", 1)[1] for path in mark.parent.glob(mark.name + pattern)}


async def test_a_retry_served_by_another_worker_releases_the_held_call(
    http_host: Any, redis_url: str, tmp_path: Path
) -> None:
    """A sync call held by one worker, retried through a connection another worker accepted
    (found by trying: the kernel picks the worker), runs there; the holder lets its call go."""
    import httpx2

    host = http_host("run", str(ROUNDS), "--workers", "2", "--store", redis_url)
    answer = {"wait": {"action": "accept", "content": {"v": "x"}}}
    marks: list[Path] = []

    async def round_trip(mark: Path) -> None:
        call = {"name": "held_thread", "arguments": {"mark": str(mark)}}
        async with httpx2.AsyncClient(timeout=30) as http:  # a connection of its own: either worker
            first = (await modern_rpc(http, host.url, "tools/call", call))["result"]
        retry = {**call, "requestState": first["requestState"], "inputResponses": answer}
        async with httpx2.AsyncClient(timeout=30) as http:
            done = (await modern_rpc(http, host.url, "tools/call", retry))["result"]
        assert done["content"][0]["text"].startswith("accept in ")

    with anyio.fail_after(120):
        while not any(len(_pids(mark, ".started.*")) == 2 for mark in marks):  # until one crossed
            batch = [tmp_path / f"m{len(marks) + i}" for i in range(8)]
            marks += batch
            async with anyio.create_task_group() as tg:
                for mark in batch:
                    tg.start_soon(round_trip, mark)
        for mark in marks:  # every thread that ran returns: the holder's too
            while _pids(mark, ".[0-9]*") != _pids(mark, ".started.*"):
                await anyio.sleep(0.02)


async def test_legacy_sessions_are_served_by_the_worker_that_holds_them(
    http_host: Any, redis_url: str
) -> None:
    """A stateful session lives in one worker; its requests reach it whichever worker accepts the
    connection (each request here comes on a new connection, so both workers accept some)."""
    import httpx2

    from tests.support.http import ACCEPT, INITIALIZE, INITIALIZED

    host = http_host("run", str(CPU), "--workers", "2", "--session-id-header", "X-Seed", "--store", redis_url)
    base = {"accept": ACCEPT, "content-type": "application/json", "mcp-protocol-version": "2025-11-25"}

    async def post(body: bytes, **headers: str) -> Any:
        async with httpx2.AsyncClient(timeout=30) as http:  # a connection of its own
            return await http.post(host.url, content=body, headers={**base, **headers})

    with anyio.fail_after(120):
        for seed in (None, "0123456789abcdef" * 2, "fedcba9876543210" * 2):
            opened = await post(INITIALIZE, **({} if seed is None else {"x-seed": seed}))
            assert opened.status_code == 200, opened.text
            session = opened.headers["mcp-session-id"]
            assert seed is None or session == seed  # (the offered id, wherever the kernel sent it)
            assert (await post(INITIALIZED, **{"mcp-session-id": session})).status_code == 202
            served_by: set[int] = set()
            for i in range(12):
                call = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"whoami"}}' % i
                answer = await post(call, **{"mcp-session-id": session})
                assert answer.status_code == 200, answer.text
                assert len(answer.headers.get_list("date")) == 1  # (a relayed answer: not the holder's too)
                served_by.add(_result(answer.text)["host"])
            assert len(served_by) == 1  # one worker's tool process served the whole session
            async with httpx2.AsyncClient(timeout=30) as http:  # DELETE ends it where it lives
                ended = await http.delete(host.url, headers={**base, "mcp-session-id": session})
            assert ended.status_code in (200, 204), ended.text
            assert (await post(call, **{"mcp-session-id": session})).status_code == 404
        for _ in range(3):  # the official client: its GET stream and concurrent POSTs on a pool
            async with modern_client(host.url, mode="legacy") as client:
                assert client.session.protocol_version == "2025-11-25"
                assert len({r["host"] for r in await burst(client, 16)}) == 1


def _result(text: str) -> dict[str, Any]:
    """The structured result of a JSON or SSE answer."""
    import json

    if not text.startswith("{"):
        text = next(line[6:] for line in text.splitlines() if line.startswith("data: {"))
    return json.loads(text)["result"]["structuredContent"]


async def test_a_principals_tool_list_is_the_same_on_every_worker(http_host: Any, redis_url: str) -> None:
    """A tool enables a hidden tool for the principal on one worker; every worker then shows it
    (the state goes through the store), and a worker started later loads it."""
    host = http_host("run", str(CPU), str(CONTROL), "--workers", "2", "--store", redis_url)

    async def workers_that_show_it() -> set[int]:
        """Concurrent calls on new connections (a client of their own, the same principal): the
        workers that served them; each must show the enabled tool."""
        seen: list[dict[str, Any]] = []

        async def sees() -> None:
            seen.append((await client.call_tool("sees", {})).structured_content)  # type: ignore[arg-type]

        async with modern_client(host.url) as client, anyio.create_task_group() as tg:
            for _ in range(16):
                tg.start_soon(sees)
        assert all("secret" in answer["active"] for answer in seen), seen
        return {answer["host"] for answer in seen}

    async with modern_client(host.url) as client:
        assert "secret" not in {tool.name for tool in (await client.list_tools()).tools}
        assert "secret" in (await client.call_tool("unlock", {})).structured_content["result"]  # type: ignore[index]
    hosts: set[int] = set()
    with anyio.fail_after(60):
        while len(hosts) < 2:
            hosts |= await workers_that_show_it()
    os.kill(min(hosts), signal.SIGKILL)  # its replacement loads the state from the store
    line = host.wait_stderr(lambda line: "serving again" in line)
    replacement = int(re.search(r"pid (\d+)", line).group(1))  # type: ignore[union-attr]
    with anyio.fail_after(60):
        while replacement not in hosts:
            hosts |= await workers_that_show_it()
    assert host.terminate() == 0


def _worker_env(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().partition("=")[::2] for item in raw if b"=" in item)


async def test_a_relayed_answer_whose_worker_dies_mid_answer_is_cut_for_its_client(
    http_host: Any, redis_url: str, tmp_path: Path
) -> None:
    """A stateful session's call relayed by the other worker, whose holder is killed while the
    answer streams: its client's connection is cut (as a direct client's is), not ended as a
    clean, empty 200 stream that would read as "nothing more to say". The request is sent to the
    other worker's own socket (where workers pass each other requests) so that it is relayed."""
    import httpx2

    from tests.support.http import ACCEPT, INITIALIZE, INITIALIZED, headers_for, rpc

    host = http_host("run", str(CPU), "--workers", "2", "--store", redis_url)
    with anyio.fail_after(60):
        async with httpx2.AsyncClient(timeout=30) as http:
            opened = await http.post(
                host.url, content=INITIALIZE, headers={"accept": ACCEPT, "content-type": "application/json"}
            )
            session = opened.headers["mcp-session-id"]
            headers = headers_for(session, **{"mcp-protocol-version": "2025-11-25"})
            assert (await http.post(host.url, content=INITIALIZED, headers=headers)).status_code == 202
            whoami = await http.post(
                host.url, content=rpc(1, "tools/call", {"name": "whoami"}), headers=headers
            )
            holder = _result(whoami.text)["host"]  # the worker holding the session
        env = _worker_env(holder)
        other = 3 - int(env[WORKER_ENV])
        relay = httpx2.AsyncHTTPTransport(uds=os.path.join(env[FOLDER_ENV], f"{other}.sock"))
        mark = tmp_path / "running"
        call = rpc(2, "tools/call", {"name": "slow", "arguments": {"seconds": 60, "mark": str(mark)}})
        async with httpx2.AsyncClient(transport=relay, timeout=30) as http:
            path = "http://localhost/" + host.url.split("/", 3)[3]
            async with http.stream("POST", path, content=call, headers=headers) as answer:
                assert answer.status_code == 200
                assert answer.headers["content-type"].startswith("text/event-stream")
                await wait_for_file(mark)  # the call runs in the holder, its answer stream is open
                os.kill(holder, signal.SIGKILL)
                with pytest.raises(httpx2.RemoteProtocolError):  # cut: the answer did not come
                    async for _ in answer.aiter_bytes():
                        pass
        host.wait_stderr(lambda line: "went away mid-answer" in line and "connection is cut" in line)
        assert not any("ASGI callable" in line for line in host.stderr)  # (said once, by protomcp)
