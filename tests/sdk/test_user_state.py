"""ctx.user_state in the SDK: which values are JSON (refused otherwise, naming where), and the
testing stand-ins: RecordingContext keeps each caller's state in a UserStates, with the host's
bounds and expiry; the testing Client serves it through the real host (the local user)."""

from __future__ import annotations

import math
from pathlib import Path

import anyio
import pytest

from protomcp_sdk import UserStateError
from protomcp_sdk.runtime.user_state import MAX_DEPTH, encode
from protomcp_sdk.testing import Client, RecordingContext, UserStates, load_tool_module
from protomcp_sdk.wire import user_state as contract

TOOLS = Path(__file__).resolve().parents[1] / "tools" / "user_state.py"


def test_json_values_are_encoded_and_the_rest_refused_by_where() -> None:
    assert encode({"a": [1, 2.5, True, None, "é"]}) == '{"a":[1,2.5,true,null,"é"]}'
    refused = {
        "value['t'] is a tuple": {"t": (1, 2)},
        "value[0] is a set": [{1}],
        "value is a datetime": __import__("datetime").datetime(2026, 1, 1),
        "value['x'] is nan": {"x": math.nan},
        "has a key 1": {1: "a"},
        "nests deeper than": _nested(MAX_DEPTH + 1),
        "not JSON: Integer exceeds 64-bit range": 2**70,
    }
    for message, value in refused.items():
        with pytest.raises(TypeError, match=message.replace("[", r"\[").replace("]", r"\]")):
            encode(value)


def test_a_ttl_beyond_ten_years_is_refused_before_it_is_sent() -> None:
    """ttl=1e300 once reached Redis, which could not hold the deadline: the tool read "the user
    state is unavailable" and the host reported the store as failing."""
    ctx = RecordingContext()
    ctx.user_state.set("k", 1, ttl=contract.MAX_TTL)  # (sync: a plain call)
    for ttl in (contract.MAX_TTL * 2, 1e300):
        with pytest.raises(ValueError, match="at most 315360000 seconds"):
            ctx.user_state.set("k", 1, ttl=ttl)


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


async def test_recording_context_keeps_each_callers_state() -> None:
    tools = load_tool_module(TOOLS)
    states = UserStates()
    ada = RecordingContext(claims={"sub": "ada"}, user_states=states)
    bob = RecordingContext(claims={"sub": "bob"}, user_states=states)
    assert await tools.remember("k", {"n": 1}, ada) == "kept"  # async tool: awaited
    assert tools.recall("k", ada)["value"] == {"n": 1}  # sync tool: a plain call
    assert tools.recall("k", bob)["value"] == "<none>"
    assert tools.remember_sync("k", [2], bob) == "kept"
    assert states.of("ada") == {"k": {"n": 1}} and states.of("bob") == {"k": [2]}
    assert await tools.forget("k", ada) is True and states.of("ada") == {}
    local = RecordingContext(user_states=states)  # no claims: the local user, as over stdio
    await tools.remember("k", 3, local)
    assert states.of() == {"k": 3} and states.of("local") == {"k": 3}


async def test_recording_context_applies_the_hosts_bounds_and_expiry() -> None:
    tools = load_tool_module(TOOLS)
    ctx = RecordingContext()
    await tools.remember("brief", 1, ctx, ttl=0.05)
    with anyio.fail_after(10):
        while ctx.user_states.of():
            await anyio.sleep(0.01)
    assert tools.recall("brief", ctx)["value"] == "<none>"
    with pytest.raises(UserStateError, match="at most 65536 bytes"):
        await tools.remember("big", "x" * contract.MAX_VALUE_BYTES, ctx)
    assert (await tools.fill(contract.MAX_KEYS + 1, ctx)).startswith(f"refused k{contract.MAX_KEYS}")
    nobody = RecordingContext(claims={"scope": "x"})  # a token without a subject names nobody
    with pytest.raises(UserStateError, match="no 'sub'"):
        tools.recall("k", nobody)


async def test_the_testing_client_serves_it_through_the_host() -> None:
    async with Client(TOOLS) as c:
        assert (await c.call("remember", key="k", value={"a": 1})).text == "kept"
        assert (await c.call("recall", key="k")).structured["value"] == {"a": 1}
        assert (await c.call("forget", key="k")).text == "true"
