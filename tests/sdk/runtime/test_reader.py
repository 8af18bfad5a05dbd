"""Who reads a tool process's frames (protomcp_sdk.runtime.process): its call threads in turn
when every tool of the file is sync, else its event loop; PROTOMCP_READER chooses. Driven through
the real host with the official client."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from protomcp_sdk import wire
from protomcp_sdk.wire import envelope_pb2 as pb
from tests.support.hosts import ToolProcessOnPipes, mcp_session, write_atomic

pytestmark = pytest.mark.anyio

# A tool that tells whether its process's call threads read the host's frames.
READING = '''
import gc
from protomcp_sdk import tool

@tool
def threads_read() -> bool:
    """Whether the call threads read the input."""
    [process] = [o for o in gc.get_objects() if type(o).__name__ == "ProcessRuntime"]
    return process.reader.threads_read
'''
ASYNC_TOOL = """
@tool
async def later() -> str:
    return "later"
"""
MIDDLEWARE = """
from protomcp_sdk import middleware

@middleware
async def audit(call, call_next):
    return await call_next(call)
"""


async def threads_read(tmp_path: Path, source: str) -> bool:
    file = tmp_path / "tools.py"
    write_atomic(file, source)
    async with mcp_session("run", str(file)) as session:
        with anyio.fail_after(30):
            result = await session.call_tool("threads_read", {})
    assert not result.is_error, result
    return result.structured_content["result"]  # type: ignore[no-any-return,index]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [("", True), (ASYNC_TOOL, False), (MIDDLEWARE, False)],
    ids=["all sync: threads", "an async tool: loop", "middleware: loop"],
)
async def test_the_choice_follows_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str, expected: bool
) -> None:
    monkeypatch.delenv("PROTOMCP_READER", raising=False)
    assert await threads_read(tmp_path, READING + extra) is expected


@pytest.mark.parametrize("reader", ["threads", "loop"])
async def test_the_setting_overrides_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str) -> None:
    monkeypatch.setenv("PROTOMCP_READER", reader)
    assert await threads_read(tmp_path, READING + ASYNC_TOOL) is (reader == "threads")
    assert await threads_read(tmp_path, READING) is (reader == "threads")


@pytest.mark.parametrize("reader", ["threads", "loop"])
def test_a_bad_frame_ends_the_process_with_a_clear_line(
    tmp_path: Path, tool_process: Callable[..., ToolProcessOnPipes], reader: str
) -> None:
    """Whoever reads, a frame the host could not have sent ends the tool process (status 2),
    after the frames before it were served."""
    file = tmp_path / "tools.py"
    write_atomic(file, READING)
    process = tool_process(file, PROTOMCP_READER=reader)
    assert process.next_frame().WhichOneof("msg") == "hello"
    call = pb.Envelope(request_id="1", call_tool=pb.CallToolRequest(name="threads_read"))
    process.send(wire.encode(call) + b"\xff\xff\xff\xff garbage")
    answer = process.next_frame()
    expected = "true" if reader == "threads" else "false"
    assert answer.request_id == "1" and f'"text":"{expected}"' in answer.call_result.result_json
    assert process.proc.wait(20) == 2
    assert b"protomcp tool process: bad frame from host: frame of" in process.proc.stderr.read()
