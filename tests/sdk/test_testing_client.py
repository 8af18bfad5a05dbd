"""protomcp_sdk.testing: the Client over the real host, and the RecordingContext stand-in."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from protomcp_sdk.testing import Client, ClientError, RecordingContext, load_tool_module

SOURCE = '''
from protomcp_sdk import Context, ToolError, tool

@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

@tool
def slow(n: int, ctx: Context) -> str:
    for i in range(n):
        ctx.report_progress(i + 1, n, f"step {i + 1}")
        ctx.warning(f"did {i + 1}")
        if ctx.cancelled:
            return "cancelled"
    return "done"

@tool
def fail() -> str:
    raise ToolError("nope", code="bad_thing")
'''


def write(path: Path, source: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(textwrap.dedent(source))
    os.replace(tmp, path)


async def test_call_progress_logs_and_errors(tmp_path: Path) -> None:
    file = tmp_path / "tools.py"
    write(file, SOURCE)
    async with Client(file) as c:
        assert c.server_info["name"]
        assert [t["name"] for t in await c.list_tools()] == ["add", "slow", "fail"]
        result = await c.call("add", a=1, b=2)
        assert (result.text, result.structured, result.is_error) == ("3", {"result": 3}, False)
        assert (await c.call("slow", n=3)).text == "done"
        assert [(p.progress, p.total, p.message) for p in c.progress] == [
            (1, 3, "step 1"),
            (2, 3, "step 2"),
            (3, 3, "step 3"),
        ]
        assert [log["data"] for log in c.logs] == ["did 1", "did 2", "did 3"]
        failed = await c.call("fail")
        assert failed.is_error and "nope" in failed.text
        bad = await c.call_tool("add", {"a": "x", "b": 1})
        assert bad.is_error and "a" in bad.text
        with pytest.raises(ClientError, match="Unknown tool"):
            await c.call("missing")
        process = c._host._process
    assert process is not None and process.returncode is not None  # the host is gone


async def test_list_changed_is_captured_in_dev(tmp_path: Path) -> None:
    file = tmp_path / "tools.py"
    write(file, SOURCE)
    async with Client(file, dev=True) as c:
        write(file, SOURCE + "\n@tool\ndef extra() -> str:\n    return 'x'\n")
        await c.wait_for_list_changed()
        assert "extra" in [t["name"] for t in await c.list_tools()]
        assert (await c.call("extra")).text == "x"
    assert any("Claude Desktop and Cursor" in line for line in c.stderr)  # the restart hint


async def test_a_file_that_does_not_load_is_a_clear_error(tmp_path: Path) -> None:
    file = tmp_path / "broken.py"
    write(file, "raise RuntimeError('boom')\n")
    with pytest.raises(ClientError, match="boom"):
        async with Client(file, timeout=20):
            pass


async def test_recording_context_for_direct_calls(tmp_path: Path) -> None:
    file = tmp_path / "tools.py"
    write(file, SOURCE)
    tools = load_tool_module(file)
    again = load_tool_module(file)  # loading twice is fine: nothing is registered in this process
    assert tools is not again and tools.add(2, 3) == 5
    ctx = RecordingContext("slow")
    assert tools.slow(2, ctx) == "done"
    assert ctx.progress == [(1, 2, "step 1"), (2, 2, "step 2")]
    assert ctx.logs == [("warning", "did 1"), ("warning", "did 2")]
    cancelled = RecordingContext()
    cancelled.cancel()
    assert tools.slow(5, cancelled) == "cancelled" and len(cancelled.progress) == 1


async def test_resources_prompts_and_completions() -> None:
    content = Path(__file__).resolve().parents[1] / "tools" / "features" / "content.py"
    async with Client(content) as c:
        assert "test://static-text" in {r["uri"] for r in await c.list_resources()}
        assert {t["uriTemplate"] for t in await c.list_resource_templates()} >= {"notes://{id}"}
        assert (await c.read_resource("notes://1"))[0]["text"] == "# Note 1\nfirst note"
        assert "greet" in {p["name"] for p in await c.list_prompts()}
        messages = await c.get_prompt("greet", name="Ada")
        assert messages[0]["content"]["text"] == "Greet Ada 1x (plain)"
        assert await c.complete(prompt="greet", argument="name", value="b") == ["bob"]
        assert await c.complete(resource="notes://{id}", argument="id", value="2") == ["2"]
        with pytest.raises(ClientError, match="-32002"):
            await c.read_resource("test://none")


def test_a_file_with_resources_and_middleware_loads_twice(tmp_path: Path) -> None:
    from protomcp_sdk.authoring.registry import REGISTRY
    from protomcp_sdk.testing import load_tool_module

    file = tmp_path / "full.py"
    file.write_text(
        "from protomcp_sdk import middleware, prompt, resource, tool\n\n"
        "@tool\ndef a() -> int:\n    return 1\n\n"
        "@resource('x://y')\ndef r() -> str:\n    return 'y'\n\n"
        "@prompt\ndef p() -> str:\n    return 'p'\n\n"
        "@middleware\nasync def m(call, call_next):\n    return await call_next(call)\n"
    )
    for _ in range(2):  # one per test that loads it
        assert load_tool_module(file).a() == 1
    assert not REGISTRY.resources and not REGISTRY.prompts and not REGISTRY.middleware


async def test_stderr_written_while_the_host_stops_is_kept(tmp_path: Path) -> None:
    """Lines that reach the host's stderr after the Client started closing (here: a lifespan
    teardown's output, written once the host stops its tool process) are read to the end."""
    file = tmp_path / "tools.py"
    write(
        file,
        '''
        import sys
        from protomcp_sdk import lifespan, tool

        @lifespan
        async def state():
            yield {}
            for n in range(5):
                print(f"teardown line {n}", file=sys.stderr, flush=True)

        @tool
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b
        ''',
    )
    async with Client(file) as c:
        assert (await c.call("add", a=1, b=2)).text == "3"
    teardown = [line for line in c.stderr if "teardown line" in line]
    assert teardown == [f"[tools.py] teardown line {n}" for n in range(5)]
