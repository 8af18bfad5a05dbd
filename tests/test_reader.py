"""Who reads a tool process's frames (protomcp_sdk.runtime.process): its worker threads in turn
when every tool of the file is sync, else its event loop; PROTOMCP_READER chooses. Driven through
the real host with the official client."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from conftest import HOST, mcp_session, write_atomic

from protomcp_sdk import wire
from protomcp_sdk.wire import protomcp_pb2 as pb

pytestmark = pytest.mark.anyio

# A tool that tells whether its process's worker threads read the host's frames.
READING = '''
import gc
from protomcp_sdk import tool

@tool
def threads_read() -> bool:
    """Whether the worker threads read the input."""
    [process] = [o for o in gc.get_objects() if type(o).__name__ == "ToolProcess"]
    return process.threads_read
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


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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


def test_a_bad_setting_is_a_clear_startup_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "tools.py"
    write_atomic(file, READING)
    monkeypatch.setenv("PROTOMCP_READER", "fibers")
    proc = subprocess.run(
        [*HOST, "run", str(file)], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 1
    assert "PROTOMCP_READER must be one of auto, threads, loop, not 'fibers'" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("reader", ["threads", "loop"])
def test_a_bad_frame_ends_the_process_with_a_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    """Whoever reads, a frame the host could not have sent ends the tool process (status 2),
    after the frames before it were served."""
    file = tmp_path / "tools.py"
    write_atomic(file, READING)
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()
    env = {**os.environ, "PROTOMCP_FDS": f"{to_child_r},{from_child_w}", "PROTOMCP_READER": reader}
    proc = subprocess.Popen(
        [sys.executable, "-m", "protomcp_sdk", str(file)], pass_fds=(to_child_r, from_child_w),
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    os.close(to_child_r)
    os.close(from_child_w)
    try:
        frames = wire.FrameDecoder()
        received = iter(())

        def next_frame() -> pb.Envelope:
            nonlocal received
            while (frame := next(received, None)) is None:
                received = iter(list(frames.feed(os.read(from_child_r, 65536))))
            return frame  # type: ignore[no-any-return]

        assert next_frame().WhichOneof("msg") == "hello"
        call = pb.Envelope(request_id="1", call_tool=pb.CallToolRequest(name="threads_read"))
        os.write(to_child_w, wire.encode(call) + b"\xff\xff\xff\xff garbage")
        answer = next_frame()
        expected = "true" if reader == "threads" else "false"
        assert answer.request_id == "1" and f'"text":"{expected}"' in answer.call_result.result_json
        assert proc.wait(20) == 2
        assert proc.stderr is not None
        assert b"protomcp tool process: bad frame from host: frame of" in proc.stderr.read()
    finally:
        os.close(to_child_w)
        os.close(from_child_r)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
