"""ToolListChange (protomcp_sdk.wire.toollist): the one shape of enable/disable/allow/block, the
Envelope it travels as (layout unchanged), and the Context methods and ToolResult that use it."""

from __future__ import annotations

import asyncio
import concurrent.futures

import pytest

from protomcp_sdk import ToolResult
from protomcp_sdk.authoring.encoding import encode_result
from protomcp_sdk.authoring.tools import ToolSpec
from protomcp_sdk.runtime.context import Context
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.toollist import CONTROL_KINDS, ToolListChange

pytestmark = pytest.mark.fast  # starts no process


@pytest.mark.parametrize(
    ("change", "kind", "names"),
    [
        (ToolListChange(enable=("a", "b")), "enable_tools", ["a", "b"]),
        (ToolListChange(disable=("a",)), "disable_tools", ["a"]),
        (ToolListChange(allow=()), "set_allowed", []),  # an empty allowlist is a real change
        (ToolListChange(block=("x",)), "set_blocked", ["x"]),
    ],
)
def test_a_change_of_one_kind_travels_as_its_own_request(
    change: ToolListChange, kind: str, names: list[str]
) -> None:
    envelope = change.envelope("call-1")
    assert envelope.WhichOneof("msg") == kind and envelope.call_id == "call-1"
    assert list(getattr(envelope, kind).tool_names) == names
    assert ToolListChange.from_envelope(envelope) == change


def test_anything_else_is_one_batch() -> None:
    change = ToolListChange(enable=("a",), disable=("b",), allow=("a", "c"))
    envelope = change.envelope()
    assert envelope.WhichOneof("msg") == "batch"
    assert (list(envelope.batch.enable), list(envelope.batch.disable)) == (["a"], ["b"])
    assert (list(envelope.batch.allow), list(envelope.batch.block)) == (["a", "c"], [])
    assert ToolListChange.from_envelope(envelope) == ToolListChange(
        enable=("a",), disable=("b",), allow=("a", "c"), block=None
    )
    assert "batch" in CONTROL_KINDS and "enable_tools" in CONTROL_KINDS
    assert ToolListChange.from_envelope(pb.Envelope(heartbeat=pb.Heartbeat())) is None


def test_names_must_be_a_list_not_a_string() -> None:
    with pytest.raises(TypeError, match="list of strings"):
        ToolListChange.of(enable="admin")
    assert ToolListChange.of(enable=iter(["a"]), disable=None) == ToolListChange(enable=("a",))


def test_a_result_carries_enables_and_disables() -> None:
    response = pb.CallToolResponse()
    ToolListChange(enable=("a",), disable=("b",)).write_to(response)
    assert ToolListChange.from_response(response) == ToolListChange(enable=("a",), disable=("b",))
    assert ToolListChange.from_response(pb.CallToolResponse()) is None
    with pytest.raises(ValueError, match="allowlist"):
        ToolListChange(allow=("a",)).write_to(pb.CallToolResponse())

    def f() -> ToolResult:
        return ToolResult(content=["ok"], enable_tools=["next"], disable_tools=["this"])

    encoded, _ = encode_result(f(), ToolSpec.from_function(f))
    assert ToolListChange.from_response(encoded) == ToolListChange(enable=("next",), disable=("this",))


def _asking_context() -> tuple[Context, list[pb.Envelope]]:
    asked: list[pb.Envelope] = []

    def ask(envelope: pb.Envelope) -> concurrent.futures.Future[pb.Envelope]:
        asked.append(envelope)
        future: concurrent.futures.Future[pb.Envelope] = concurrent.futures.Future()
        future.set_result(pb.Envelope(active_tools=pb.ActiveToolsResponse(tool_names=["a"])))
        return future

    return Context("call-7", "", lambda envelope: None, "t", ask), asked


def test_context_methods_send_the_same_envelopes_as_before() -> None:
    ctx, asked = _asking_context()
    assert ctx.enable_tools(["a"]) == ["a"]  # a sync tool gets the list
    ctx.disable_tools(["b"])
    ctx.set_allowed(["c"])
    ctx.set_blocked(["d"])
    ctx.update_tools(enable=["e"])
    ctx.update_tools(allow=["f"], block=[])
    kinds = [envelope.WhichOneof("msg") for envelope in asked]
    assert kinds == ["enable_tools", "disable_tools", "set_allowed", "set_blocked", "batch", "batch"]
    assert all(envelope.call_id == "call-7" for envelope in asked)
    assert list(asked[4].batch.enable) == ["e"] and list(asked[4].batch.allow) == []
    assert list(asked[5].batch.allow) == ["f"] and list(asked[5].batch.block) == []


async def test_context_methods_are_awaitable_in_async_tools() -> None:
    loop = asyncio.get_running_loop()
    asked: list[pb.Envelope] = []

    def ask(envelope: pb.Envelope) -> asyncio.Future[pb.Envelope]:
        asked.append(envelope)
        future = loop.create_future()
        future.set_result(pb.Envelope(active_tools=pb.ActiveToolsResponse(tool_names=["x"])))
        return future

    ctx = Context("call-8", "", lambda envelope: None, "t", ask)
    assert await ctx.update_tools(enable=["x"], disable=["y"]) == ["x"]
    assert ToolListChange.from_envelope(asked[0]) == ToolListChange(enable=("x",), disable=("y",))
