"""The host's middleware chain run (calls.middleware.ChainRun) without processes: fake
channels answer its frames. A finished call leaves no reference cycle behind (the cyclic GC
would otherwise collect an Execution, its ChainRun and its Call once per call)."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from protomcp_host.calls.execution import Dispatcher, Execution
from protomcp_host.calls.middleware import ChainRun, Middleware
from protomcp_host.processes.events import Leg
from protomcp_host.protocol.catalog import Tool
from protomcp_host.protocol.session import Call, ToolAnswer
from protomcp_sdk.wire import envelope_pb2 as pb

pytestmark = pytest.mark.fast  # starts no process


class FakeChannel:
    """Both a tool file's process (start) and its ready channel."""

    def __init__(self) -> None:
        self.started: list[pb.Envelope] = []
        self.legs: dict[str, Leg] = {}  # open requests: forgotten once answered, as Channel does
        self.holds: set[str] = set()

    def start(self, envelope: pb.Envelope, leg: Leg) -> str:
        request_id = str(len(self.started) + 1)
        envelope.request_id = request_id
        self.started.append(envelope)
        self.legs[request_id] = leg
        leg.sent(self, request_id)
        return request_id

    def ready_channel(self) -> FakeChannel:
        return self

    def hold(self, key: str) -> None:
        self.holds.add(key)

    def release(self, key: str) -> None:
        self.holds.discard(key)

    def drop(self, request_id: str, *, cancel: bool) -> None:
        pass

    def answer(self, **kind: Any) -> None:
        request_id = self.started[-1].request_id
        self.legs.pop(request_id).answered(pb.Envelope(request_id=request_id, **kind), None, True)


class Sink:
    def __init__(self) -> None:
        self.answers: list[ToolAnswer] = []

    def call_answered(self, call: Call, answer: ToolAnswer) -> None:
        self.answers.append(answer)

    def call_released(self, execution: Any, reason: str) -> None:
        pass


def _run(before_only: bool) -> tuple[Sink, FakeChannel]:
    tools, middleware = FakeChannel(), FakeChannel()
    dispatcher = Dispatcher({"tools.py": tools, "mw.py": middleware}, 30)  # type: ignore[dict-item]
    dispatcher.spawn = lambda *_: None
    dispatcher.set_middleware([Middleware("pass", 0, "mw.py", before_only=before_only, composes=True)])
    tool = Tool("echo", "tools.py", {"name": "echo", "inputSchema": {"type": "object"}})
    sink = Sink()
    execution = dispatcher.execute(Call(b"1", tool, {"text": "hi"}, None), sink)  # type: ignore[arg-type]
    assert execution.chain is not None
    del execution
    ask = middleware.started[-1].middleware_intercept
    assert (ask.phase, ask.middleware_name, ask.params_json) == (
        "before",
        "pass",
        '{"name":"echo","arguments":{"text":"hi"}}',
    )
    middleware.answer(middleware_intercept_response=pb.MiddlewareInterceptResponse())
    assert tools.started[-1].call_tool.arguments_json == '{"text":"hi"}'
    tools.answer(call_result=pb.CallToolResponse(result_json='[{"type":"text","text":"hi"}]'))
    if not before_only:
        assert middleware.started[-1].middleware_intercept.phase == "after"
        middleware.answer(middleware_intercept_response=pb.MiddlewareInterceptResponse())
    return sink, middleware


def _calls_alive() -> list[object]:
    return [o for o in gc.get_objects() if isinstance(o, (ChainRun, Execution, Call))]


async def test_a_chain_run_answers_once_and_leaves_no_cycle() -> None:
    gc.collect()  # what earlier tests in this process left is not this test's
    before = {id(o) for o in _calls_alive()}
    gc.disable()
    try:
        for before_only in (True, False):
            sink, middleware = _run(before_only)
            assert [answer.content for answer in sink.answers] == [[b'[{"type":"text","text":"hi"}]']]
            assert len(middleware.started) == (1 if before_only else 2) and not middleware.holds
            left = [o for o in _calls_alive() if id(o) not in before]
            assert not left  # freed by reference counting alone
    finally:
        gc.enable()
