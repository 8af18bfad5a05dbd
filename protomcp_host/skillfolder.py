"""--skills DIR: read folders of skills (``DIR/<name>/SKILL.md`` and its supporting files)
into what the host serves (protocol/skills.py), checking them as SEP-2640 and the Agent
Skills specification ask, so a bad skill is a clear error at start rather than a client's
failed verification later.

The front matter is YAML: read with PyYAML (imported only here) under YAML 1.2's rules for
booleans and without timestamps, so ``yes`` stays a string and a date stays the text written,
as a YAML 1.2 client reading the same SKILL.md sees them.
"""

from __future__ import annotations

import functools
import hashlib
import mimetypes
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from protomcp_host.protocol.skills import MANIFEST, Skill, SkillFile, Skills, skill_uri

MAX_FILES = 512  # per skill, SKILL.md included (the extension's limit)
MAX_BYTES = 16 * 1024 * 1024  # per skill, summed over its files
MAX_DESCRIPTION = 1024  # characters (Agent Skills specification)
NAME = re.compile(r"^(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$")
FRONT_MATTER = re.compile(r"^---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", re.DOTALL)
_BOOL = "tag:yaml.org,2002:bool"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
MIME_TYPES = {".md": "text/markdown", ".markdown": "text/markdown"}


class SkillError(ValueError):
    """A skills folder that cannot be served: the message names the file and the problem."""


def load_skills(folders: Iterable[Path], page_size: int = 1000) -> Skills:
    """Every skill of every folder; SkillError on the first problem."""
    skills: list[Skill] = []
    seen: dict[str, Path] = {}
    for folder in folders:
        if not folder.is_dir():
            raise SkillError(f"--skills {folder}: not a folder")
        found = sorted(child for child in folder.iterdir() if (child / MANIFEST).is_file())
        if not found:
            hint = (
                f"; it is a skill itself: give its parent, {folder.parent}"
                if (folder / MANIFEST).is_file()
                else ""
            )
            raise SkillError(
                f"--skills {folder}: no skills in it (a skill is a folder <name>/{MANIFEST}){hint}"
            )
        for directory in found:
            skill = read_skill(directory)
            if skill.name in seen:
                raise SkillError(f"skill clash: '{skill.name}' is in both {seen[skill.name]} and {directory}")
            seen[skill.name] = directory
            skills.append(skill)
    return Skills(skills, page_size)


def read_skill(directory: Path) -> Skill:
    """One skill folder, checked."""
    manifest = directory / MANIFEST
    data = manifest.read_bytes()
    frontmatter = parse_front_matter(data, manifest)
    name = frontmatter.get("name")
    description = frontmatter.get("description")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise SkillError(
            f"{manifest}: front matter 'name' must be 1-64 lowercase letters, digits and single "
            f"hyphens, neither first nor last (got {name!r})"
        )
    if name != directory.name:
        raise SkillError(
            f"{manifest}: front matter name '{name}' must be the folder's name '{directory.name}'"
        )
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f"{manifest}: front matter needs a 'description' (a non-empty string)")
    if len(description) > MAX_DESCRIPTION:
        raise SkillError(
            f"{manifest}: 'description' is {len(description)} characters (at most {MAX_DESCRIPTION})"
        )
    files = [_file(skill_uri(name), data, "text/markdown")]
    for path in _supporting_files(directory):
        relative = "/".join(
            quote(part, safe="-._~!$&'()*+,;=:@") for part in path.relative_to(directory).parts
        )
        content = path.read_bytes()
        files.append(_file(skill_uri(name, relative), content, _mime_type(path, content)))
    if len(files) > MAX_FILES:
        raise SkillError(
            f"{directory}: {len(files)} files (a skill has at most {MAX_FILES}, SKILL.md included)"
        )
    total = sum(len(file.data) for file in files)
    if total > MAX_BYTES:
        raise SkillError(f"{directory}: {total} bytes of files (a skill has at most {MAX_BYTES})")
    return Skill(skill_uri(name), frontmatter, files)


def parse_front_matter(data: bytes, where: Path) -> dict[str, Any]:
    """The YAML front matter of a SKILL.md as a JSON object."""
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        raise SkillError(f"{where}: not UTF-8 text") from None
    match = FRONT_MATTER.match(text)
    if match is None:
        raise SkillError(f"{where}: must begin with YAML front matter between '---' lines")
    import yaml

    try:
        value = yaml.load(match[1], Loader=_loader())  # a SafeLoader
    except yaml.YAMLError as exc:
        raise SkillError(f"{where}: front matter is not valid YAML: {exc}") from None
    if not isinstance(value, dict):
        raise SkillError(f"{where}: front matter must be a mapping (name: ..., description: ...)")
    try:
        orjson.dumps(value)
    except TypeError as exc:
        raise SkillError(f"{where}: front matter must be plain JSON values ({exc})") from None
    return value


def _supporting_files(directory: Path) -> list[Path]:
    """Every file under `directory` but SKILL.md itself, sorted; hidden ones (.git, .DS_Store)
    left out. A link may not lead out of the skill's folder."""
    root = directory.resolve()
    found: list[Path] = []
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(directory)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
            continue
        if path.is_symlink() and not path.resolve().is_relative_to(root):
            raise SkillError(f"{path}: a link out of the skill's folder")
        if path.is_file() and relative.parts != (MANIFEST,):
            found.append(path)
    return found


def _file(uri: str, data: bytes, mime_type: str) -> SkillFile:
    return SkillFile(uri, data, mime_type, "sha256:" + hashlib.sha256(data).hexdigest())


def _mime_type(path: Path, data: bytes) -> str:
    known = MIME_TYPES.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0]
    if known:
        return known
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "application/octet-stream"
    return "text/plain"


@functools.cache
def _loader() -> Any:
    import yaml

    class Loader(yaml.SafeLoader):
        """YAML 1.2 booleans (true/false only), no timestamps."""

    resolvers = {
        first: [(tag, regexp) for tag, regexp in rules if tag not in (_BOOL, _TIMESTAMP)]
        for first, rules in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.yaml_implicit_resolvers = resolvers
    Loader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
    return Loader
