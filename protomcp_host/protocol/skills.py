"""Skills: the ``io.modelcontextprotocol/skills`` extension (SEP-2640), sans-IO.

A skill is a folder of files whose ``SKILL.md`` starts with YAML front matter; the host serves
each file as a resource ``skill://<name>/<path>`` (read with resources/read), lists every
skill with ``skills/list`` (its front matter verbatim and a manifest of its files with SHA-256
digests and sizes), answers ``skills/get`` for one, and ``resources/directory/read`` for the
skill's folders. What is served is held here in memory (the folders are read at start by
``protomcp_host.skillfolder``); no tool process takes part.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.events import Batch, Send
from protomcp_host.protocol.listing import InvalidCursor, Listing

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
SKILLS_OWNER = "--skills"  # the owner of the skills' entries in merged lists (named in clashes)
SCHEME = "skill://"
MANIFEST = "SKILL.md"
DIRECTORY_MIME = "inode/directory"


@dataclass(frozen=True, slots=True)
class SkillFile:
    """One file of a skill: its resource URI, raw bytes, MIME type and the SHA-256 digest of
    the bytes (``sha256:<hex>``, computed where the file is read)."""

    uri: str
    data: bytes
    mime_type: str
    digest: str

    @property
    def name(self) -> str:
        return self.uri.rsplit("/", 1)[-1]

    def manifest(self) -> dict[str, Any]:
        """The SkillResource of the entry: what a host verifies a read against."""
        return {"uri": self.uri, "digest": self.digest, "size": len(self.data)}

    def resource(self) -> dict[str, Any]:
        return {"uri": self.uri, "name": self.name, "mimeType": self.mime_type, "size": len(self.data)}

    def contents(self) -> dict[str, Any]:
        """Its resources/read contents: text when it is UTF-8 (the same bytes the digest
        covers), else a base64 blob."""
        try:
            return {"uri": self.uri, "mimeType": self.mime_type, "text": self.data.decode("utf-8")}
        except UnicodeDecodeError:
            blob = base64.b64encode(self.data).decode()
            return {"uri": self.uri, "mimeType": self.mime_type, "blob": blob}


@dataclass(slots=True)
class Skill:
    """One skill: its SKILL.md URI (the listing key), front matter and files (SKILL.md first)."""

    key: str
    frontmatter: dict[str, Any]
    files: list[SkillFile]
    owner: str = SKILLS_OWNER
    mcp: dict[str, Any] = field(init=False)  # the Skill entry of skills/list and skills/get

    def __post_init__(self) -> None:
        self.mcp = {
            "uri": self.key,
            "frontmatter": self.frontmatter,
            "resources": [file.manifest() for file in self.files],
        }

    @property
    def name(self) -> str:
        return str(self.frontmatter["name"])

    @property
    def description(self) -> str:
        return str(self.frontmatter["description"])

    def resource(self) -> dict[str, Any]:
        """The SKILL.md resource of resources/list: named and described by its front matter."""
        manifest = self.files[0]
        return {
            "uri": self.key,
            "name": self.name,
            "description": self.description,
            "mimeType": manifest.mime_type,
            "size": len(manifest.data),
        }


def skill_uri(name: str, path: str = MANIFEST) -> str:
    return f"{SCHEME}{name}/{path}"


class Skills:
    """Every skill one host serves: the listing, each file by URI, each folder's children."""

    def __init__(self, skills: list[Skill], page_size: int = 1000) -> None:
        self.listing: Listing[Skill] = Listing("skill", page_size)
        self.listing.replace(SKILLS_OWNER, skills)
        self.files: dict[str, SkillFile] = {}
        self.folders: dict[str, dict[str, dict[str, Any]]] = {}  # folder URI -> child URI -> Resource
        for skill in skills:
            root = skill.key[: -len("/" + MANIFEST)]
            self.folders.setdefault(root, {})
            for file in skill.files:
                self.files[file.uri] = file
                self._add(root, file.uri, file.resource())

    def _add(self, root: str, uri: str, resource: dict[str, Any]) -> None:
        """`uri` as a child of its folder, and each folder between it and `root` as well."""
        parent = uri.rsplit("/", 1)[0]
        children = self.folders.get(parent)
        if children is None:
            children = self.folders[parent] = {}
            folder = {"uri": parent, "name": parent.rsplit("/", 1)[-1], "mimeType": DIRECTORY_MIME}
            if parent != root:
                self._add(root, parent, folder)
        children.setdefault(uri, resource)

    def __len__(self) -> int:
        return len(self.listing)

    def ordered(self) -> list[Skill]:
        return self.listing.ordered()

    def capability(self) -> dict[str, Any]:
        return {"directoryRead": True}

    # -- the requests ----------------------------------------------------------------------
    def table(self) -> dict[str, Any]:
        return {
            "skills/list": self.list_skills,
            "skills/get": self.get_skill,
            "resources/directory/read": self.read_directory,
        }

    def list_skills(self, request: rpc.Request, _: Batch | None) -> Send:
        cursor = request.params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            return _invalid(request, '"cursor" must be a string')
        try:
            page = self.listing.page(cursor, "skills", _entry, cache="skills")
        except InvalidCursor as exc:
            return Send(rpc.error(request.id, rpc.INVALID_PARAMS, str(exc)))
        return Send(rpc.raw_result(request.id, page))

    def get_skill(self, request: rpc.Request, _: Batch | None) -> Send:
        uri = request.params.get("uri")
        if not isinstance(uri, str):
            return _invalid(request, '"uri" must be a string')
        skill = self.listing.get(uri)
        if skill is None:
            return Send(
                rpc.error(request.id, rpc.INVALID_PARAMS, f"No skill is served at {uri}", {"uri": uri})
            )
        return Send(rpc.result(request.id, {"skill": skill.mcp}))

    def read_directory(self, request: rpc.Request, _: Batch | None) -> Send:
        uri = request.params.get("uri")
        if not isinstance(uri, str):
            return _invalid(request, '"uri" must be a string')
        children = self.folders.get(uri)
        if children is None:
            what = "is not a directory resource" if uri in self.files else "is not served"
            return Send(rpc.error(request.id, rpc.INVALID_PARAMS, f"{uri} {what}", {"uri": uri}))
        # Every child on one page: a skill has at most 512 files (checked when it is read).
        return Send(rpc.result(request.id, {"resources": list(children.values())}))

    def read(self, uri: str) -> dict[str, Any] | None:
        """The resources/read result for a skill file; None if `uri` is not one."""
        file = self.files.get(uri)
        return None if file is None else {"contents": [file.contents()]}


def _entry(skill: Skill) -> dict[str, Any]:
    return skill.mcp


def _invalid(request: rpc.Request, message: str) -> Send:
    return Send(rpc.error(request.id, rpc.INVALID_PARAMS, f"Invalid params: {message}"))
