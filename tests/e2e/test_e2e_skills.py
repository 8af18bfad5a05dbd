"""--skills DIR through the real host: the official `mcp` client reads the skills extension
(SEP-2640) in both eras — capability, skills/list, skills/get, resources/read of every listed
file verified against its digest and size, resources/directory/read — and a bad skills folder
stops the start with a line that names the file and the problem."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any, Literal

import orjson
import pytest
from mcp_types import Request, RequestParams, Result
from pydantic import ConfigDict

from tests.support.hosts import HOST, write_atomic

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "skills"
SKILLS = "io.modelcontextprotocol/skills"


class UriParams(RequestParams):
    model_config = ConfigDict(extra="allow")
    uri: str


class AnyResult(Result):
    model_config = ConfigDict(extra="allow")


class ListSkills(Request[RequestParams | None, Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"
    params: RequestParams | None = None


class GetSkill(Request[UriParams, Literal["skills/get"]]):
    method: Literal["skills/get"] = "skills/get"
    params: UriParams


class ReadDirectory(Request[UriParams, Literal["resources/directory/read"]]):
    method: Literal["resources/directory/read"] = "resources/directory/read"
    params: UriParams


def _client(*args: str, mode: str) -> Any:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=HOST[0], args=[*HOST[1:], "run", *args], env=dict(os.environ))
    return Client(params, mode=mode, cache=None)  # type: ignore[arg-type]


def _raw_bytes(contents: Any) -> bytes:
    text = getattr(contents, "text", None)
    return text.encode() if text is not None else base64.b64decode(contents.blob)


@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
async def test_the_official_client_reads_and_verifies_every_skill(mode: str, version: str) -> None:
    async with _client("--skills", str(EXAMPLE), mode=mode) as client:
        session = client.session
        assert session.protocol_version == version
        extensions = session.server_capabilities.extensions or {}
        assert extensions[SKILLS] == {"directoryRead": True}
        assert session.server_capabilities.resources is not None
        listed = await session.send_request(ListSkills(), AnyResult)
        skills = listed.model_extra["skills"]
        assert [skill["uri"] for skill in skills] == [
            "skill://adding-a-tool/SKILL.md",
            "skill://release-notes/SKILL.md",
        ]
        first = skills[0]
        assert first["frontmatter"]["license"] == "MIT"
        assert first["frontmatter"]["metadata"] == {"version": "1.0"}  # verbatim, nested too
        for skill in skills:
            for file in skill["resources"]:  # as a host verifies what it loads
                read = await client.read_resource(file["uri"])
                data = _raw_bytes(read.contents[0])
                assert len(data) == file["size"]
                assert "sha256:" + hashlib.sha256(data).hexdigest() == file["digest"]
        got = await session.send_request(GetSkill(params=UriParams(uri=first["uri"])), AnyResult)
        assert got.model_extra["skill"] == first
        if version == "2026-07-28":  # GetSkillResult is a CacheableResult from 2026-07-28
            assert {"ttlMs", "cacheScope"} <= set(got.model_extra)
        folder = await session.send_request(
            ReadDirectory(params=UriParams(uri="skill://adding-a-tool")), AnyResult
        )
        children = {child["uri"]: child.get("mimeType") for child in folder.model_extra["resources"]}
        assert children == {
            "skill://adding-a-tool/SKILL.md": "text/markdown",
            "skill://adding-a-tool/references": "inode/directory",
        }
        if version == "2025-11-25":  # a supporting file (not in resources/list) is subscribable too
            await session.subscribe_resource("skill://adding-a-tool/references/CHECKLIST.md")
        resources = await client.list_resources()
        manifest = next(r for r in resources.resources if r.uri == first["uri"])
        assert (manifest.name, manifest.description) == ("adding-a-tool", first["frontmatter"]["description"])


async def test_an_unknown_skill_is_invalid_params() -> None:
    from mcp.shared.exceptions import MCPError

    async with _client("--skills", str(EXAMPLE), mode="legacy") as client:
        with pytest.raises(MCPError) as raised:
            await client.session.send_request(
                GetSkill(params=UriParams(uri="skill://nope/SKILL.md")), AnyResult
            )
        assert raised.value.error.code == -32602
        with pytest.raises(MCPError) as raised:
            await client.session.send_request(
                ReadDirectory(params=UriParams(uri="skill://adding-a-tool/SKILL.md")), AnyResult
            )
        assert raised.value.error.code == -32602


def test_bad_front_matter_stops_the_start_naming_the_file(tmp_path: Path) -> None:
    skill = tmp_path / "broken"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: broken\ndescription: [unclosed\n---\n# Broken\n")
    done = subprocess.run(
        [*HOST, "run", "--skills", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert f"protomcp: cannot start: {skill / 'SKILL.md'}: front matter is not valid YAML" in done.stderr


def protomcp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HOST, *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )


def test_list_shows_the_skills_beside_the_tools() -> None:
    hello = ROOT / "examples" / "tools" / "hello.py"
    shown = protomcp("list", str(hello), "--skills", str(EXAMPLE))
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "Skills:\nskill://adding-a-tool/SKILL.md  (2 files)\n    Add a tool" in text
    assert text.index("hello(name: str)") < text.index("Skills:")
    as_json = orjson.loads(protomcp("list", "--skills", str(EXAMPLE), "--json").stdout)
    assert [skill["frontmatter"]["name"] for skill in as_json["skills"]] == ["adding-a-tool", "release-notes"]


def test_inspect_reports_the_skills_and_a_bad_one_as_a_problem(tmp_path: Path) -> None:
    report = orjson.loads(protomcp("inspect", "--skills", str(EXAMPLE), "--json").stdout)
    assert report["ok"] is True
    assert report["skills"][1]["resources"][1]["uri"] == "skill://release-notes/templates/notes.md"
    (tmp_path / "mismatch").mkdir()
    (tmp_path / "mismatch" / "SKILL.md").write_text("---\nname: other\ndescription: d\n---\n")
    bad = protomcp("inspect", "--skills", str(tmp_path))
    assert bad.returncode == 1
    assert "problem: skills: " in bad.stdout and "must be the folder's name 'mismatch'" in bad.stdout


def test_dev_serves_a_changed_skills_folder_and_keeps_the_last_good_one(
    raw_host: Any, tmp_path: Path
) -> None:
    manifest = tmp_path / "skills" / "tool" / "SKILL.md"
    manifest.parent.mkdir(parents=True)
    write_atomic(manifest, "---\nname: tool\ndescription: First.\n---\n")
    host = raw_host("dev", "--skills", str(tmp_path / "skills"))
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    host.request(1, "initialize", init)
    host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def description(request_id: int) -> str:
        (skill,) = host.request(request_id, "skills/list", {})["result"]["skills"]
        return str(skill["frontmatter"]["description"])

    assert description(2) == "First."
    assert host.request(9, "resources/subscribe", {"uri": "skill://tool/SKILL.md"})["result"] == {}
    write_atomic(manifest, "---\nname: tool\ndescription: Second.\n---\n")
    told = {host.recv(timeout=15)["method"] for _ in range(2)}
    assert told == {"notifications/resources/list_changed", "notifications/resources/updated"}
    assert description(3) == "Second."
    write_atomic(manifest, "---\nname: tool\n---\n")
    host.wait_stderr("skills not reloaded (the previous ones are served): ")
    assert "front matter needs a 'description'" in host.stderr_text()
    assert description(4) == "Second."


def test_the_banner_names_the_skills() -> None:
    from protomcp_host.app import Host
    from protomcp_host.cli.banner import http_banner, stdio_banner
    from protomcp_host.skillfolder import load_skills

    host = Host([], skills=load_skills([EXAMPLE]))
    for printed in (stdio_banner(host, False), http_banner(host, "http://127.0.0.1:1/mcp", False)):
        assert "\n  and 2 skills: adding-a-tool, release-notes\n" in printed
