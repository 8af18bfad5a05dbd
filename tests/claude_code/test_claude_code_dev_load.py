"""The real Claude Code (see test_claude_code.py) and `protomcp dev` when a tool file does not
load: the model learns of it, whatever the tool returns and whenever the file broke."""

from __future__ import annotations

from pathlib import Path

from tests.claude_code.fake_messages_api import FakeMessagesAPI, tool_use
from tests.claude_code.test_claude_code import claude, deferred_tools, run_claude, tool_file, wait_for_wire
from tests.support.hosts import write_atomic

__all__ = ["claude"]  # the fixture, shared with test_claude_code.py

STRUCTURED = """
    from protomcp_sdk import tool

    @tool(pinned=True)
    def add(a: int, b: int) -> int:
        \"\"\"Add two numbers.\"\"\"
        return a + b
"""


def test_a_broken_save_reaches_the_model_through_a_structured_result(claude: Path, tmp_path: Path) -> None:
    """Claude Code hands the model a structured result's structuredContent (as JSON) and its
    non-text blocks, never its text blocks: the note of the failed save must be among those."""
    file = tool_file(tmp_path, STRUCTURED)

    def break_the_file(turn: int) -> None:
        if turn == 1:  # between the two calls
            write_atomic(file, STRUCTURED + "\n    def broken(:\n")
            wait_for_wire(tmp_path / "wire.jsonl", "stderr", "failed to load")

    add = tool_use("mcp__tools__add", {"a": 1, "b": 2})
    with FakeMessagesAPI([[add], [add]], before_turn=break_the_file) as api:
        run_claude(claude, tmp_path, api, "dev", str(file))
    before, after = api.tool_results()
    assert "failed to load" not in str(before["content"])
    shown = str(after["content"])
    assert '{"result":3}' in shown  # the previous version still serves
    assert "Note: tools.py failed to load at " in shown
    assert "SyntaxError" in shown and "(line 9)" in shown


GREET = """
    from protomcp_sdk import tool

    @tool
    def greet(name: str) -> str:
        \"\"\"Say hello to someone.\"\"\"
        return f"Hello, {name}!"
"""


def test_a_file_broken_at_start_tells_the_model_then_its_tools_come(claude: Path, tmp_path: Path) -> None:
    """`dev` of a file that does not load yet: Claude Code connects, and the model reads the
    error in the tools it is offered (a tool standing for the file, loaded up front); once the
    file is fixed, the real tools replace it."""
    file = tool_file(tmp_path, GREET + "\n    def broken(:\n")

    def fix_the_file(turn: int) -> None:
        if turn == 1:
            write_atomic(file, GREET)
            wait_for_wire(tmp_path / "wire.jsonl", "server", '"name":"greet"')  # Claude Code listed again

    placeholder = "mcp__tools__tools_py_failed_to_load"
    turns = [[tool_use(placeholder)], [tool_use("mcp__tools__greet", {"name": "Ada"})]]
    with FakeMessagesAPI(turns, before_turn=fix_the_file) as api:
        run = run_claude(claude, tmp_path, api, "dev", str(file))
    description = api.offered_tools(0)[placeholder]["description"]
    assert "tools.py failed to load" in description and "SyntaxError" in description
    assert "(line 9)" in description
    error, greeting = api.tool_results()
    assert error["is_error"] is True
    assert "SyntaxError" in str(error["content"]) and "def broken(:" in str(error["content"])
    assert greeting["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    assert "mcp__tools__greet" in deferred_tools(api.agent_requests[2])  # announced to the model
    # (Claude Code still offers the placeholder the model called; the host lists it no more)
    listed = [m["result"]["tools"] for m in run.messages("server") if "tools" in m.get("result", {})]
    assert [[tool["name"] for tool in tools] for tools in listed] == [["tools_py_failed_to_load"], ["greet"]]
