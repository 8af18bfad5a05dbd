"""Skills folders (skillfolder.py) and the skills extension's requests (protocol/skills.py),
without a host: what a folder must look like, what is served of it, and how."""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.features import Entry, FeatureCatalog, FileFeatures
from protomcp_host.protocol.listing import NameClash
from protomcp_host.skillfolder import SkillError, load_skills

pytestmark = pytest.mark.fast  # starts no process


def skill(root: Path, name: str, front: str | None = None, **files: str | bytes) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    front = front if front is not None else f"name: {name}\ndescription: Does {name}."
    (folder / "SKILL.md").write_text(f"---\n{front}\n---\n# {name}\n")
    for relative, content in files.items():
        path = folder / relative.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return folder


def ask(handler: Any, params: dict[str, Any]) -> dict[str, Any]:
    request = rpc.Request(b"1", "x", params)
    return orjson.loads(handler(request, None).data)


@pytest.mark.parametrize(
    ("front", "problem"),
    [
        (None, "must begin with YAML front matter"),
        ("name: other\ndescription: d", "front matter name 'other' must be the folder's name 'tool'"),
        ("name: tool", "needs a 'description'"),
        ("description: d", "front matter 'name' must be 1-64 lowercase letters"),
        ("- a list", "front matter must be a mapping"),
        ("name: tool\ndescription: [open", "front matter is not valid YAML"),
        ("name: tool\ndescription: d\nblob: !!binary aGk=", "front matter must be plain JSON values"),
    ],
)
def test_a_bad_skill_md_is_an_error_naming_the_file(tmp_path: Path, front: str | None, problem: str) -> None:
    folder = tmp_path / "tool"
    folder.mkdir()
    text = "# no front matter\n" if front is None else f"---\n{front}\n---\nbody\n"
    (folder / "SKILL.md").write_text(text)
    with pytest.raises(SkillError) as raised:
        load_skills([tmp_path])
    assert str(raised.value).startswith(f"{folder / 'SKILL.md'}: ")
    assert problem in str(raised.value)


def test_a_name_breaking_the_naming_rules_is_refused(tmp_path: Path) -> None:
    skill(tmp_path, "bad--name")
    with pytest.raises(SkillError, match="single hyphens"):
        load_skills([tmp_path])


def test_a_folder_without_skills_and_a_name_in_two_folders_are_errors(tmp_path: Path) -> None:
    with pytest.raises(SkillError, match="no skills in it"):
        load_skills([tmp_path])
    alone = skill(tmp_path / "one", "alone")
    with pytest.raises(SkillError, match="it is a skill itself: give its parent"):
        load_skills([alone])
    skill(tmp_path / "a", "same")
    skill(tmp_path / "b", "same")
    with pytest.raises(SkillError, match="skill clash: 'same' is in both"):
        load_skills([tmp_path / "a", tmp_path / "b"])


def test_front_matter_is_read_as_yaml_1_2_would(tmp_path: Path) -> None:
    """`yes` and a date stay the text written (a YAML 1.1 reader makes them True and a date,
    which a client comparing with its own YAML 1.2 parse would see as a different skill)."""
    front = "name: tool\ndescription: d\nlicense: yes\ncreated: 2026-01-02\nbeta: true\nmetadata:\n  v: 2"
    skill(tmp_path, "tool", front)
    (entry,) = load_skills([tmp_path]).ordered()
    assert entry.frontmatter == {
        "name": "tool",
        "description": "d",
        "license": "yes",
        "created": "2026-01-02",
        "beta": True,
        "metadata": {"v": 2},
    }


def test_every_file_is_served_with_its_digest_hidden_ones_left_out(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n\xff\x00"
    skill(tmp_path, "tool", **{"references__a.md": "A", "assets__logo.png": png, ".git__config": "x"})
    skills = load_skills([tmp_path])
    (entry,) = skills.ordered()
    uris = [file["uri"] for file in entry.mcp["resources"]]
    assert uris == ["skill://tool/SKILL.md", "skill://tool/assets/logo.png", "skill://tool/references/a.md"]
    blob = skills.read("skill://tool/assets/logo.png")["contents"][0]  # type: ignore[index]
    assert blob["mimeType"] == "image/png" and base64.b64decode(blob["blob"]) == png
    assert skills.read("skill://tool/.git/config") is None


def test_a_link_out_of_the_skill_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("no")
    folder = skill(tmp_path / "skills", "tool")
    os.symlink(tmp_path / "secret.txt", folder / "leak.txt")
    with pytest.raises(SkillError, match="a link out of the skill's folder"):
        load_skills([tmp_path / "skills"])


def test_directory_read_lists_direct_children_and_refuses_a_file(tmp_path: Path) -> None:
    skill(tmp_path, "tool", **{"templates__a.md": "a", "templates__regional__eu.md": "eu"})
    skills = load_skills([tmp_path])
    root = ask(skills.read_directory, {"uri": "skill://tool"})["result"]["resources"]
    assert [(r["uri"], r["mimeType"]) for r in root] == [
        ("skill://tool/SKILL.md", "text/markdown"),
        ("skill://tool/templates", "inode/directory"),
    ]
    nested = ask(skills.read_directory, {"uri": "skill://tool/templates"})["result"]["resources"]
    assert [r["uri"] for r in nested] == ["skill://tool/templates/a.md", "skill://tool/templates/regional"]
    for uri in ("skill://tool/SKILL.md", "skill://other"):
        assert ask(skills.read_directory, {"uri": uri})["error"]["code"] == rpc.INVALID_PARAMS


def test_skills_list_pages_whole_entries(tmp_path: Path) -> None:
    for name in ("one", "two", "three"):
        skill(tmp_path, name)
    skills = load_skills([tmp_path], page_size=2)
    first = ask(skills.list_skills, {})["result"]
    second = ask(skills.list_skills, {"cursor": first["nextCursor"]})["result"]
    assert [s["frontmatter"]["name"] for s in first["skills"] + second["skills"]] == ["one", "three", "two"]
    assert "nextCursor" not in second
    assert ask(skills.list_skills, {"cursor": "bogus"})["error"]["code"] == rpc.INVALID_PARAMS


def test_a_tool_file_resource_at_a_skill_uri_is_a_clash(tmp_path: Path) -> None:
    skill(tmp_path, "tool")
    features = FeatureCatalog(100)
    features.serve_skills(load_skills([tmp_path]))
    offered = FileFeatures(
        resources=[Entry("skill://tool/SKILL.md", "tools.py", {"uri": "skill://tool/SKILL.md"})]
    )
    with pytest.raises(
        NameClash, match=re.escape("'skill://tool/SKILL.md' is defined in both --skills and tools.py")
    ):
        features.check("tools.py", offered)
