"""The real Claude Code (see test_claude_code.py) and `--skills`: what docs/guide/skills.md says
of it. Claude Code 2.1.332 sends no skills/list nor skills/get; the model finds each skill's
SKILL.md among the server's resources and reads it with ReadMcpResourceTool."""

from __future__ import annotations

import json
from pathlib import Path

from tests.claude_code.fake_messages_api import FakeMessagesAPI, tool_use
from tests.claude_code.test_claude_code import SERVER, claude, run_claude, tool_file
from tests.support.hosts import ROOT

__all__ = ["claude"]  # the fixture, shared with test_claude_code.py

SKILLS = ROOT / "examples" / "skills"


def test_skills_reach_claude_code_as_resources_only(claude: Path, tmp_path: Path) -> None:
    listing = tool_use("ListMcpResourcesTool", {"server": SERVER})
    read = tool_use("ReadMcpResourceTool", {"server": SERVER, "uri": "skill://release-notes/SKILL.md"})
    load = tool_use("ToolSearch", {"query": "select:ListMcpResourcesTool,ReadMcpResourceTool"})
    with FakeMessagesAPI([[load], [listing], [read]]) as api:
        run = run_claude(claude, tmp_path, api, "run", str(tool_file(tmp_path)), "--skills", str(SKILLS))
    methods = {m.get("method") for m in run.messages("client")}
    assert "resources/list" in methods and "resources/read" in methods
    assert not {"skills/list", "skills/get"} & methods
    _, listed, contents = api.tool_results()
    assert "skill://release-notes/SKILL.md" in json.dumps(listed["content"])
    text = json.loads(contents["content"])["contents"][0]["text"]
    assert text == (SKILLS / "release-notes" / "SKILL.md").read_text()
