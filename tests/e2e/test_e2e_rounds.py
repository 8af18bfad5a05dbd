"""The 2026-07-28 input-required round trip through the real host over stdio: the official
client (auto mode) answers sampling, elicitation and roots through InputRequiredResult, the
legacy client the old way, both against the same tool file; raw checks of requestState."""

from __future__ import annotations

import os
from typing import Any

import mcp_types as types
import pytest

from tests.support.hosts import HOST, TOOLS

ROUNDS = TOOLS / "rounds" / "rounds.py"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "elicitation": {}, "roots": {}},
}


async def _sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    question = params.messages[0].content.text  # type: ignore[union-attr]
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=f"A({question})"), model="m"
    )


VALUES = {"name": "Ada", "ok": True, "context": "here", "v": "z"}


async def _elicit(context: Any, params: Any) -> types.ElicitResult:
    wanted = params.requested_schema["properties"]
    return types.ElicitResult(action="accept", content={key: VALUES[key] for key in wanted})


async def _roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])


def _client(mode: str = "auto", **kwargs: Any) -> Any:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=HOST[0], args=[*HOST[1:], "run", str(ROUNDS)], env=dict(os.environ)
    )
    return Client(params, mode=mode, cache=None, **kwargs)  # type: ignore[arg-type]


def _text(result: Any) -> str:
    return result.content[0].text


CALLBACKS = {"sampling_callback": _sample, "elicitation_callback": _elicit, "list_roots_callback": _roots}


async def test_round_trips_with_the_official_client_beside_legacy() -> None:
    async with _client(**CALLBACKS) as modern, _client(mode="legacy", **CALLBACKS) as legacy:
        assert modern.session.protocol_version == "2026-07-28"
        for client in (modern, legacy):
            assert _text(await client.call_tool("two_samples", {})) == "A(first?)+A(second after A(first?)?)"
            assert (
                _text(await client.call_tool("gather_inputs", {})) == "accept:Ada|A(greeting?)|file:///work"
            )
            assert "accept {'ok': True}" in _text(await client.call_tool("sync_elicit", {}))
        caps = (await modern.call_tool("capabilities", {})).structured_content
        assert "sampling" in caps and "elicitation" in caps and "roots" in caps
        legacy_caps = (await legacy.call_tool("capabilities", {})).structured_content
        assert "sampling" in legacy_caps


async def test_tool_adapts_to_declared_capabilities() -> None:
    async with _client(sampling_callback=_sample) as client:
        assert _text(await client.call_tool("adaptive", {})) == "sampled A(name?)"
    async with _client(**CALLBACKS) as client:
        assert _text(await client.call_tool("adaptive", {})) == "elicited accept"


def _call(host: Any, id_: Any, name: str, meta: Any = None, **params: Any) -> Any:
    return host.request(id_, "tools/call", {"name": name, "arguments": {}, "_meta": meta or META, **params})


def test_raw_rounds_state_tampered_and_re_run(raw_host: Any) -> None:
    host = raw_host("run", str(ROUNDS))
    first = _call(host, 1, "restartable")["result"]
    assert first["resultType"] == "input_required" and "ttlMs" not in first
    assert list(first["inputRequests"]) == ["step1"]
    assert first["inputRequests"]["step1"]["method"] == "elicitation/create"
    state = first["requestState"]
    tampered = _call(host, 2, "restartable", requestState=state + "-TAMPERED")
    assert tampered["id"] == 2 and tampered["error"]["code"] == -32602
    other = _call(host, 3, "two_samples", requestState=state)
    assert other["error"]["code"] == -32602  # bound to the tool
    step1 = {"action": "accept", "content": {"v": "a"}}
    second = _call(host, 4, "restartable", requestState=state, inputResponses={"step1": step1})["result"]
    assert list(second["inputRequests"]) == ["step2"] and second["requestState"] != state
    # a wrong answer shape is not an answer: asked again
    again = _call(
        host, 5, "restartable", requestState=second["requestState"], inputResponses={"step2": 12345}
    )
    assert again["result"]["resultType"] == "input_required"
    step2 = {"action": "accept", "content": {"v": "b"}}
    done = _call(
        host, 6, "restartable", requestState=again["result"]["requestState"], inputResponses={"step2": step2}
    )["result"]
    assert done["resultType"] == "complete" and done["content"][0]["text"] == "a-b (runs here: 1)"
    # no state, answers given: the tool runs with them
    fresh = _call(host, 7, "restartable", inputResponses={"step1": step1, "step2": step2, "extra": {}})[
        "result"
    ]
    assert fresh["content"][0]["text"] == "a-b (runs here: 2)"
    missing = _call(host, 8, "restartable", inputResponses={"wrong_key": step1})["result"]
    assert missing["resultType"] == "input_required"
    null = _call(host, 9, "restartable", inputResponses=None)
    assert null["error"]["code"] == -32602


def test_missing_capability_escapes_as_32021(raw_host: Any) -> None:
    host = raw_host("run", str(ROUNDS))
    meta = {**META, "io.modelcontextprotocol/clientCapabilities": {}}
    reply = _call(host, "m", "needs_sampling", meta=meta)
    assert reply["id"] == "m" and reply["error"]["code"] == -32021
    assert reply["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


def test_retry_after_a_host_restart_re_runs_with_the_answers(raw_host: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("PROTOMCP_STATE_KEY", "shared secret for the test")
    first_host = raw_host("run", str(ROUNDS))
    first = _call(first_host, 1, "restartable")["result"]
    step1 = {"action": "accept", "content": {"v": "x"}}
    second = _call(
        first_host, 2, "restartable", requestState=first["requestState"], inputResponses={"step1": step1}
    )["result"]
    assert list(second["inputRequests"]) == ["step2"]
    assert first_host.close() == 0
    other = raw_host("run", str(ROUNDS))  # a new host, same key: the suspended call is not here
    step2 = {"action": "accept", "content": {"v": "y"}}
    done = _call(
        other, 3, "restartable", requestState=second["requestState"], inputResponses={"step2": step2}
    )["result"]
    assert done["content"][0]["text"] == "x-y (runs here: 1)"  # re-run, step1 answered from the state


def test_expired_state_is_refused(raw_host: Any, monkeypatch: Any) -> None:
    from protomcp_host.calls.held import StateCodec, digest

    monkeypatch.setenv("PROTOMCP_STATE_KEY", "another secret")
    host = raw_host("run", str(ROUNDS))
    codec = StateCodec()  # the same key as the host's (from the environment)
    claims = {"v": 1, "p": "local", "m": "tools/call", "t": "restartable", "a": digest({}), "s": None}
    live = codec.seal({**claims, "e": 2**40})
    ok = _call(host, 1, "restartable", requestState=live)["result"]
    assert ok["resultType"] == "input_required"
    expired = codec.seal({**claims, "e": 1})
    assert _call(host, 2, "restartable", requestState=expired)["error"]["code"] == -32602


async def test_prompt_and_resource_ask_for_input() -> None:
    async with _client(**CALLBACKS) as modern, _client(mode="legacy", **CALLBACKS) as legacy:
        prompt = await modern.get_prompt("needs_context", {})
        assert prompt.messages[0].content.text == "Use None" or prompt.messages[0].content.text.startswith(
            "Use"
        )
        read = await modern.read_resource("test://roots")
        assert read.contents[0].text == "file:///work"  # type: ignore[union-attr]
        with pytest.raises(Exception, match="can only be asked during a tool call"):
            await legacy.read_resource("test://roots")  # legacy reads cannot ask the client


def test_raw_prompt_round(raw_host: Any) -> None:
    host = raw_host("run", str(ROUNDS))
    first = host.request(1, "prompts/get", {"name": "needs_context", "_meta": META})["result"]
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["user_context"]
    answer = {"action": "accept", "content": {"context": "the repo"}}
    retry = {"requestState": first["requestState"], "inputResponses": {"user_context": answer}}
    done = host.request(2, "prompts/get", {"name": "needs_context", "_meta": META, **retry})["result"]
    assert done["resultType"] == "complete" and done["messages"][0]["content"]["text"] == "Use the repo"
    tampered = host.request(
        3,
        "prompts/get",
        {"name": "needs_context", "_meta": META, "requestState": first["requestState"] + "x"},
    )
    assert tampered["error"]["code"] == -32602


def _elicited(v: str) -> dict[str, Any]:
    return {"action": "accept", "content": {"v": v}}


def test_an_answer_is_used_once(raw_host: Any) -> None:
    """Asked again under the same key, the call asks the client again (suspended here, and
    re-run with its answers, where the tool process answers from them)."""
    host = raw_host("run", str(ROUNDS))
    first = _call(host, 1, "ask_twice")["result"]
    again = _call(
        host, 2, "ask_twice", requestState=first["requestState"], inputResponses={"again": _elicited("a")}
    )["result"]
    assert again["resultType"] == "input_required" and list(again["inputRequests"]) == ["again"]
    assert again["inputRequests"]["again"]["params"]["message"] == "Second?"
    done = _call(
        host, 3, "ask_twice", requestState=again["requestState"], inputResponses={"again": _elicited("b")}
    )["result"]
    assert done["content"][0]["text"] == "a-b"
    rerun = _call(host, 4, "ask_twice", inputResponses={"again": _elicited("c")})["result"]
    assert rerun["resultType"] == "input_required"  # the tool process used "c" once, then asked
    done = _call(
        host, 5, "ask_twice", requestState=rerun["requestState"], inputResponses={"again": _elicited("d")}
    )["result"]
    assert done["content"][0]["text"] == "c-d"


def test_a_used_request_state_answers_with_its_first_answer(raw_host: Any) -> None:
    host = raw_host("run", str(ROUNDS))
    first = _call(host, 1, "after_question")["result"]
    retry = {"requestState": first["requestState"], "inputResponses": {"go": _elicited("x")}}
    done = _call(host, 2, "after_question", **retry)
    assert done["result"]["content"][0]["text"] == "x (effects here: 1)"
    for n in range(3, 6):  # replays: the first answer, the tool not run again
        assert _call(host, n, "after_question", **retry) == {**done, "id": n}
    # two retries of one suspended round at once: one run, the same answer twice
    second = _call(host, 6, "after_question")["result"]
    retry = {"requestState": second["requestState"], "inputResponses": {"go": _elicited("y")}}
    for id_ in (7, 8):
        params = {"name": "after_question", "arguments": {}, "_meta": META, **retry}
        host.send({"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params})
    answers = [host.recv()["result"] for _ in (7, 8)]
    assert answers[0] == answers[1] and answers[0]["content"][0]["text"] == "y (effects here: 2)"


def test_a_principal_holds_a_bounded_number_of_suspended_calls(raw_host: Any) -> None:
    """Past its bound a principal's oldest suspended call is let go (its thread freed; its retry
    re-runs it), so its abandoned calls never take a sync tool's every thread (48)."""
    host = raw_host("run", str(ROUNDS))
    states = []
    for n in range(60):
        reply = _call(host, n, "sync_elicit")["result"]
        assert reply["resultType"] == "input_required"
        states.append(reply["requestState"])
    retry = {
        "requestState": states[0],
        "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}},
    }
    done = _call(host, "old", "sync_elicit", **retry)["result"]
    assert "accept {'ok': True}" in done["content"][0]["text"]  # let go here: run again, answered


async def test_an_abandoned_round_lets_the_tool_thread_go(monkeypatch: Any, tmp_path: Any) -> None:
    """No retry within HOLD: the held call is let go, and its sync tool's thread with it."""
    import anyio
    import orjson

    from protomcp_host.app import Host
    from protomcp_host.calls import rounds

    monkeypatch.setattr(rounds, "HOLD", 0.2)
    host = Host([ROUNDS], stderr=lambda _: None)
    answered = anyio.Event()
    mark = tmp_path / "released"
    async with anyio.create_task_group() as tg:
        await host.start(tg)
        router = host.connect_modern(lambda data, related=None: answered.set())
        params = {"name": "held_thread", "arguments": {"mark": str(mark)}, "_meta": META}
        router.feed(orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}))
        with anyio.fail_after(10):
            await answered.wait()  # the input round
        with anyio.fail_after(10):
            while not list(tmp_path.glob("released.[0-9]*")):  # (written by the tool process)
                await anyio.sleep(0.02)
        await host.stop(1.0)
        tg.cancel_scope.cancel()
