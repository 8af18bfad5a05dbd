"""The 2026-07-28 era over Streamable HTTP, beside stateful sessions on the same endpoint: the
official client in auto and legacy mode at once, input rounds, and raw checks of the header
and error-code rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import orjson

from tests.support.hosts import BEHAVIOURS, TOOLS
from tests.support.http import ACCEPT, open_raw_session, rpc, sse_events

ROUNDS = TOOLS / "rounds" / "rounds.py"
MODERN: dict[str, str] = {}  # the modern era is served by default
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


async def _sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    question = params.messages[0].content.text  # type: ignore[union-attr]
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=f"A({question})"), model="m"
    )


async def _elicit(context: Any, params: Any) -> types.ElicitResult:
    values = {"name": "Ada", "ok": True, "context": "here", "v": "z"}
    return types.ElicitResult(
        action="accept", content={k: values[k] for k in params.requested_schema["properties"]}
    )


async def _roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])


CALLBACKS = {"sampling_callback": _sample, "elicitation_callback": _elicit, "list_roots_callback": _roots}


def _client(url: str, mode: str = "auto", **kwargs: Any) -> Any:
    from mcp import Client

    return Client(url, mode=mode, cache=None, **kwargs)  # type: ignore[arg-type]


async def test_auto_and_legacy_clients_at_once(http_host: Any) -> None:
    host = http_host("run", str(BEHAVIOURS), str(ROUNDS), env=MODERN)
    async with (
        _client(host.url, **CALLBACKS) as modern,
        _client(host.url, mode="legacy", **CALLBACKS) as legacy,
    ):
        assert modern.session.protocol_version == "2026-07-28"
        assert legacy.session.protocol_version == "2025-11-25"
        for client in (modern, legacy):
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"add", "two_samples"} <= names
            assert (await client.call_tool("point", {"x": 1, "y": 2})).structured_content == {"x": 1, "y": 2}
            steps: list[float] = []

            async def on_progress(
                progress: float, total: float | None, message: str | None, steps: list[float] = steps
            ) -> None:
                steps.append(progress)

            done = await client.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
            assert done.content[0].text == "done" and steps == [1, 2, 3]
            two = await client.call_tool("two_samples", {})
            assert two.content[0].text == "A(first?)+A(second after A(first?)?)"
            both = await client.call_tool("gather_inputs", {})
            assert both.content[0].text == "accept:Ada|A(greeting?)|file:///work"
        prompt = await modern.get_prompt("needs_context", {})
        assert prompt.messages[0].content.text == "Use here"  # type: ignore[union-attr]
        read = await modern.read_resource("test://roots")
        assert read.contents[0].text == "file:///work"  # type: ignore[union-attr]


async def test_auto_client_falls_back_when_the_era_is_off(http_host: Any) -> None:
    host = http_host("run", str(BEHAVIOURS), env={"PROTOMCP_MODERN": "0"})
    async with _client(host.url) as client:
        assert client.session.protocol_version == "2025-11-25"
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}


def _headers(
    method: str, name: str | None = None, version: str = "2026-07-28", **extra: str
) -> dict[str, str]:
    headers = {"accept": ACCEPT, "content-type": "application/json", "mcp-protocol-version": version}
    headers["mcp-method"] = method
    if name is not None:
        headers["mcp-name"] = name
    return {**headers, **extra}


async def test_raw_header_and_error_rules(http_host: Any) -> None:
    host = http_host("run", str(BEHAVIOURS), env=MODERN)
    url = host.url
    call = {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": META}
    async with httpx2.AsyncClient(timeout=30) as client:

        async def post(body: bytes, headers: dict[str, str]) -> Any:
            return await client.post(url, content=body, headers=headers)

        ok = await post(rpc(1, "server/discover", {"_meta": META}), _headers("server/discover"))
        assert ok.status_code == 200 and "mcp-session-id" not in ok.headers
        assert ok.json()["result"]["supportedVersions"][0] == "2026-07-28"
        # envelope keys missing: -32602 / 400, before the headers
        bad = await post(rpc(2, "server/discover", {}), _headers("server/discover"))
        assert bad.status_code == 400 and bad.json()["error"]["code"] == -32602 and bad.json()["id"] == 2
        # header vs body version: -32020 before -32022
        meta = {**META, "io.modelcontextprotocol/protocolVersion": "v999.0.0"}
        mismatch = await post(rpc(3, "server/discover", {"_meta": meta}), _headers("server/discover"))
        assert mismatch.status_code == 400 and mismatch.json()["error"]["code"] == -32020
        unknown = await post(
            rpc(4, "server/discover", {"_meta": meta}), _headers("server/discover", version="v999.0.0")
        )
        assert unknown.status_code == 400 and unknown.json()["error"]["code"] == -32022
        assert unknown.json()["error"]["data"]["requested"] == "v999.0.0"
        # Mcp-Method: case-sensitive value; Mcp-Name: plain or in its base64 form
        wrong = await post(rpc(5, "tools/list", {"_meta": META}), _headers("TOOLS/LIST"))
        assert wrong.status_code == 400 and wrong.json()["error"]["code"] == -32020
        spaced = await post(rpc(6, "tools/call", call), _headers("tools/call", "add"))
        assert spaced.status_code == 200 and spaced.json()["result"]["structuredContent"] == {"result": 3}
        encoded = await post(rpc(7, "tools/call", call), _headers("tools/call", "=?base64?YWRk?="))
        assert encoded.status_code == 200
        broken = await post(rpc(8, "tools/call", call), _headers("tools/call", "=?base64?YWR!?="))
        assert broken.status_code == 400 and broken.json()["error"]["code"] == -32020
        missing = await post(rpc(9, "tools/call", call), _headers("tools/call"))
        assert missing.status_code == 400 and missing.json()["error"]["code"] == -32020
        other = await post(rpc(10, "tools/call", call), _headers("tools/call", "echo"))
        assert other.status_code == 400 and other.json()["id"] == 10
        # removed and unknown methods: 404 + -32601
        for method in ("initialize", "ping", "logging/setLevel", "resources/subscribe", "unknown/method"):
            gone = await post(rpc(11, method, {"_meta": META}), _headers(method))
            assert gone.status_code == 404 and gone.json()["error"]["code"] == -32601, method
        # a session id on a modern request is ignored
        ignored = await post(
            rpc(12, "tools/list", {"_meta": META}), _headers("tools/list", **{"mcp-session-id": "nope"})
        )
        assert ignored.status_code == 200 and ignored.json()["result"]["resultType"] == "complete"
        # GET / DELETE with a modern version header: 405
        assert (await client.get(url, headers=_headers("x"))).status_code == 405
        assert (await client.delete(url, headers=_headers("x"))).status_code == 405
        # a stateful session on the same endpoint keeps working
        session_id = await open_raw_session(client, url)
        legacy_headers = {"accept": ACCEPT, "content-type": "application/json", "mcp-session-id": session_id}
        legacy = await post(
            rpc(13, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}}), legacy_headers
        )
        assert legacy.json()["result"]["structuredContent"] == {"result": 4}
        # a notification: 202
        note = orjson.dumps(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        )
        assert (await post(note, _headers("notifications/cancelled"))).status_code == 202


async def test_claude_ai_version_header_is_served_in_the_body_era_and_said_once(http_host: Any) -> None:
    # claude.ai's connector sends 2026-07-28 bodies with MCP-Protocol-Version: 2025-11-25; before,
    # every such request got -32020, so every tool call of a "connected" user failed.
    host = http_host("run", str(BEHAVIOURS), env=MODERN)
    call = {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": META}
    claude_ai = {"version": "2025-11-25", "user-agent": "Claude-User"}
    async with httpx2.AsyncClient(timeout=30) as client:
        for id_ in (1, 2):
            served = await client.post(
                host.url,
                content=rpc(id_, "tools/call", call),
                headers=_headers("tools/call", "add", **claude_ai),
            )
            assert served.status_code == 200, served.text
            assert served.json()["result"]["structuredContent"] == {"result": 3}
            assert "mcp-session-id" not in served.headers  # the body's era: no session
        listed = await client.post(
            host.url,
            content=rpc(3, "tools/list", {"_meta": META}),
            headers=_headers("tools/list", **claude_ai),
        )
        assert listed.json()["result"]["resultType"] == "complete"  # a 2026-07-28 result
        # Any other pair of versions is still a mismatch.
        for version in ("2025-06-18", "2024-11-05"):
            refused = await client.post(
                host.url,
                content=rpc(4, "tools/call", call),
                headers=_headers("tools/call", "add", version=version),
            )
            assert refused.status_code == 400 and refused.json()["error"]["code"] == -32020
        # Said once for this client: the line a later call prints comes after just one.
        chatty = {"name": "chatty", "arguments": {"lines": 1}, "_meta": META}
        await client.post(
            host.url, content=rpc(5, "tools/call", chatty), headers=_headers("tools/call", "chatty")
        )
    host.wait_stderr(lambda line: "chatty line 0" in line)
    said = [line for line in host.stderr if "MCP-Protocol-Version header says 2025-11-25" in line]
    assert len(said) == 1 and "address 127.0.0.1" in said[0] and "Claude-User" in said[0]


def test_the_header_rule_serves_only_claude_ais_pair_in_the_body_era() -> None:
    from protomcp_host.protocol.jsonrpc import Request
    from protomcp_host.transports.http.modern import check_headers

    def check(header: str, body: str) -> tuple[str | None, list[str]]:
        told: list[str] = []
        scope = {"headers": [(b"mcp-protocol-version", header.encode()), (b"mcp-method", b"tools/list")]}
        return check_headers(scope, Request(b"1", "tools/list", {}), body, told.append), told

    assert check("2025-11-25", "2026-07-28") == (None, ["2025-11-25"])
    assert check("2026-07-28", "2026-07-28") == (None, [])
    for header, body in (("2025-06-18", "2026-07-28"), ("2026-07-28", "2025-11-25"), ("2025-11-25", "v9")):
        mismatch, told = check(header, body)
        assert mismatch is not None and "does not match body value" in mismatch and told == []


async def test_raw_progress_streams_and_missing_capability(http_host: Any) -> None:
    host = http_host("run", str(BEHAVIOURS), str(ROUNDS), env=MODERN)
    async with httpx2.AsyncClient(timeout=30) as client:
        params = {"name": "progress", "arguments": {"steps": 2}, "_meta": {**META, "progressToken": "p1"}}
        response = await client.post(
            host.url, content=rpc(1, "tools/call", params), headers=_headers("tools/call", "progress")
        )
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["x-accel-buffering"] == "no"
        messages = [orjson.loads(e["data"]) for e in sse_events(response.text) if "data" in e]
        assert [m["params"]["progress"] for m in messages[:-1]] == [1, 2]
        assert messages[-1]["id"] == 1 and messages[-1]["result"]["resultType"] == "complete"
        needs = {"name": "needs_sampling", "arguments": {}, "_meta": META}
        refused = await client.post(
            host.url, content=rpc(2, "tools/call", needs), headers=_headers("tools/call", "needs_sampling")
        )
        assert refused.status_code == 400
        assert refused.json()["error"] == {
            "code": -32021,
            "message": "Tool 'needs_sampling' needs a client capability the request did not declare",
            "data": {"requiredCapabilities": {"sampling": {}}},
        }


def test_header_value_decoding() -> None:
    from protomcp_host.transports.http.modern import decode_header_value

    assert decode_header_value("=?base64?SGVsbG8=?=") == "Hello"
    assert decode_header_value("=?base64?SGVsbG8?=") is None  # bad padding
    assert decode_header_value("=?base64?SGVs!!!bG8=?=") is None  # bad characters
    assert decode_header_value("SGVsbG8=") == "SGVsbG8="  # no markers: literal
    assert decode_header_value("=?base64?SGVsbG8=") == "=?base64?SGVsbG8="  # no suffix: literal
    assert decode_header_value("a\x01b") is None


def test_whitespace_around_routing_headers_is_allowed() -> None:
    from protomcp_host.protocol.jsonrpc import Request
    from protomcp_host.transports.http.modern import check_headers

    scope = {
        "headers": [
            (b"mcp-protocol-version", b" 2026-07-28 "),
            (b"mcp-method", b"tools/call"),
            (b"mcp-name", b"  add\t"),
        ]
    }
    assert check_headers(scope, Request(b"1", "tools/call", {"name": "add"}), "2026-07-28") is None
    doubled = {"headers": [*scope["headers"], (b"mcp-method", b"tools/call")]}
    assert "more than once" in (
        check_headers(doubled, Request(b"1", "tools/call", {"name": "add"}), "2026-07-28") or ""
    )


def test_param_headers() -> None:
    from protomcp_host.transports.http.modern import check_param_headers

    schema = {
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
        }
    }
    good = {"headers": [(b"mcp-param-region", b"eu"), (b"mcp-param-n", b"42.0")]}
    assert check_param_headers(good, schema, {"region": "eu", "n": 42}) is None
    assert (
        check_param_headers({"headers": []}, schema, {"region": "eu"}) is not None
    )  # omitted but in the body
    assert check_param_headers({"headers": []}, schema, {"region": None}) is None
    assert check_param_headers(good, schema, {"region": "us", "n": 42}) is not None


async def test_listen_with_the_official_client_sees_a_reload(http_host: Any, tmp_path: Any) -> None:
    import anyio

    from tests.e2e.test_e2e_dev import tool_source, write_atomic

    tools = tmp_path / "tools.py"
    write_atomic(tools, tool_source("one"))
    host = http_host("dev", str(tools), env=MODERN)
    async with _client(host.url) as client, client.listen(tools_list_changed=True) as sub:
        assert sub.honored.tools_list_changed is True
        write_atomic(tools, tool_source("one", "two"))
        with anyio.fail_after(20):
            event = await sub.__anext__()
        assert "tool" in type(event).__name__.lower()
        assert {t.name for t in (await client.list_tools()).tools} == {"one", "two"}


async def test_a_client_that_disconnects_cancels_its_call(http_host: Any, tmp_path: Path) -> None:
    """This era has no notifications/cancelled over HTTP: disconnecting cancels (also while the
    host still waits to send the answer as plain JSON, before any disconnect watcher runs)."""
    import asyncio
    from urllib.parse import urlsplit

    import anyio

    host = http_host("run", str(TOOLS / "upstream_tools.py"), env=MODERN)
    where = urlsplit(host.url)
    mark = str(tmp_path / "hold")
    body = rpc(1, "tools/call", {"name": "hold", "arguments": {"path": mark}, "_meta": META})
    head = "".join(f"{k}: {v}\r\n" for k, v in _headers("tools/call", "hold").items())
    _, writer = await asyncio.open_connection(where.hostname, where.port)
    writer.write(
        f"POST {where.path} HTTP/1.1\r\nhost: {where.netloc}\r\n{head}"
        f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    with anyio.fail_after(20):
        while not Path(mark + ".started").exists():
            await anyio.sleep(0.01)
    writer.close()  # the client leaves
    with anyio.fail_after(20):
        while not Path(mark + ".cancelled").exists():
            await anyio.sleep(0.02)
    async with httpx2.AsyncClient(timeout=30) as client:  # the host serves on
        call = {"name": "multiply", "arguments": {"a": 6, "b": 7}, "_meta": META}
        answer = await client.post(
            host.url, content=rpc(2, "tools/call", call), headers=_headers("tools/call", "multiply")
        )
        assert answer.json()["result"]["structuredContent"] == {"result": 42}


async def test_a_listen_stream_its_client_does_not_read_is_cut_off() -> None:
    """In-process: the client stops reading a listen stream while notifications keep coming;
    past the budget what waits for it goes and the stream ends with an error that says why
    (said once on stderr), and nothing more is kept for it."""
    import anyio

    from protomcp_host.app import Host
    from protomcp_host.transports.http.modern import ModernEndpoint

    lines: list[str] = []
    host = Host([], stderr=lines.append)
    endpoint = ModernEndpoint(host, 15.0, lambda scope: None, lambda scope: None, budget=1 << 20)
    body = rpc("L", "subscriptions/listen", {"notifications": {"toolsListChanged": True}, "_meta": META})
    headers = {"accept": ACCEPT, "mcp-protocol-version": "2026-07-28", "mcp-method": "subscriptions/listen"}
    scope = {
        "type": "http",
        "method": "POST",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }
    reading = anyio.Event()  # set: the client reads again
    started = anyio.Event()
    received: list[bytes] = []

    async def receive() -> dict[str, Any]:
        await anyio.sleep_forever()
        return {}

    async def send(message: dict[str, Any]) -> None:
        received.append(message.get("body", b""))
        if message["type"] == "http.response.body":
            started.set()
            await reading.wait()  # the client does not read: the stream's writer waits here

    async with anyio.create_task_group() as tg:
        tg.start_soon(endpoint.post, scope, body, orjson.loads(body), receive, send)
        with anyio.fail_after(10):
            await started.wait()  # the acknowledgement is being written
        router = host.routers[0]
        note = orjson.dumps(
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x" * (64 << 10)}}
        )
        for _ in range(160):  # 10 MiB for a client that reads nothing
            router.write(note, b'"L"')
        assert sum("listen stream was cut off" in line for line in lines) == 1
        reading.set()
    delivered = b"".join(received)
    assert len(delivered) < 2 << 20 and delivered.count(b"notifications/message") < 20
    assert (
        b'"id":"L","error":{"code":-32000,"message":"Stream closed: the client read too slowly' in delivered
    )
    assert received[-1] == b""  # the stream ended


async def test_the_listen_limit_is_each_principals_own() -> None:
    """In-process, one listen stream each: Alice's second is refused (429), Bob's first is not;
    without credentials the client's address counts."""
    from functools import partial

    import anyio

    from protomcp_host.app import Host
    from protomcp_host.transports.http.modern import ModernEndpoint

    host = Host([], stderr=lambda _: None)
    endpoint = ModernEndpoint(host, 15.0, lambda scope: scope.get("who"), lambda scope: None, max_listens=1)
    headers = {"accept": ACCEPT, "mcp-protocol-version": "2026-07-28", "mcp-method": "subscriptions/listen"}
    answers: dict[str, list[dict[str, Any]]] = {}

    async def listen(id_: str, **where: Any) -> None:
        body = rpc(id_, "subscriptions/listen", {"notifications": {"toolsListChanged": True}, "_meta": META})
        scope = {
            "type": "http",
            "method": "POST",
            "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
            **where,
        }

        async def receive() -> dict[str, Any]:
            await anyio.sleep_forever()
            return {}

        async def send(message: dict[str, Any]) -> None:
            answers.setdefault(id_, []).append(message)

        await endpoint.post(scope, body, orjson.loads(body), receive, send)

    def status(id_: str) -> int:
        return int(answers[id_][0]["status"])

    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(listen, "alice-1", who="alice"))
        tg.start_soon(partial(listen, "here-1", client=("10.0.0.1", 5000)))
        with anyio.fail_after(10):
            while len(answers) < 2:
                await anyio.sleep(0.01)
        await listen("alice-2", who="alice")  # refused at once
        await listen("here-2", client=("10.0.0.1", 5001))  # the same address, another port
        assert status("alice-2") == status("here-2") == 429
        assert b"1 listen streams open" in answers["alice-2"][1]["body"]
        tg.start_soon(partial(listen, "bob-1", who="bob"))
        tg.start_soon(partial(listen, "there-1", client=("10.0.0.2", 5000)))
        with anyio.fail_after(10):
            while len(answers) < 6:
                await anyio.sleep(0.01)
        assert status("alice-1") == status("bob-1") == status("here-1") == status("there-1") == 200
        assert endpoint.listening == {"alice": 1, "bob": 1, "address 10.0.0.1": 1, "address 10.0.0.2": 1}
        tg.cancel_scope.cancel()
    assert endpoint.listening == {}  # (each released when its stream ended)
