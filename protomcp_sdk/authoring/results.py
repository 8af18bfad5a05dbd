"""What a tool returns or raises: content blocks, ``ToolResult`` and ``ToolError`` (encoded into a
``CallToolResponse`` by :mod:`protomcp_sdk.authoring.encoding`).

Content blocks serialise to the exact MCP JSON (schema 2025-06-18 / 2025-11-25). Values are
encoded with orjson; anything orjson does not know natively goes through pydantic's JSON
conversion, so returned values match the output schema pydantic generated for them. pydantic
is imported only then: plain JSON values (str, numbers, bool, None, dicts, lists) never need it.
"""

from __future__ import annotations

import binascii
import os
from dataclasses import dataclass, field
from typing import ClassVar, Self

import orjson

from protomcp_sdk.wire.jsontypes import JSON, JSONObject

_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


class ToolError(Exception):
    """Raise to fail a call with a message (and a way forward) the model can act on."""

    def __init__(
        self, message: str, *, code: str = "", suggestion: str = "", retryable: bool = False
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.suggestion = suggestion
        self.retryable = retryable


def _b64(data: bytes) -> str:
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def _guess_mime_type(path: str | os.PathLike[str]) -> str:
    import mimetypes  # reads system tables on first use: only pay for it when needed

    mime_type, _ = mimetypes.guess_type(os.fspath(path))
    if mime_type is None:
        raise ValueError(f"cannot guess the MIME type of {os.fspath(path)!r}; pass mime_type=")
    return mime_type


@dataclass(frozen=True, slots=True)
class Text:
    text: str

    def to_mcp(self) -> JSONObject:
        return {"type": "text", "text": self.text}


@dataclass(frozen=True, slots=True)
class _Media:
    """Binary content sent inline, base64-encoded."""

    kind: ClassVar[str]
    data: bytes
    mime_type: str

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], mime_type: str | None = None) -> Self:
        with open(path, "rb") as f:
            return cls(f.read(), mime_type or _guess_mime_type(path))

    def to_mcp(self) -> JSONObject:
        return {"type": self.kind, "data": _b64(self.data), "mimeType": self.mime_type}


@dataclass(frozen=True, slots=True)
class Image(_Media):
    kind: ClassVar[str] = "image"


@dataclass(frozen=True, slots=True)
class Audio(_Media):
    kind: ClassVar[str] = "audio"


@dataclass(frozen=True, slots=True)
class ResourceLink:
    """A pointer to a resource the client can fetch; the content itself is not sent."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None

    def to_mcp(self) -> JSONObject:
        block: JSONObject = {"type": "resource_link", "uri": self.uri, "name": self.name}
        if self.title is not None:
            block["title"] = self.title
        if self.description is not None:
            block["description"] = self.description
        if self.mime_type is not None:
            block["mimeType"] = self.mime_type
        if self.size is not None:
            block["size"] = self.size
        return block


@dataclass(frozen=True, slots=True)
class EmbeddedResource:
    """A resource's contents sent inline: exactly one of ``text`` or ``blob``."""

    uri: str
    text: str | None = None
    blob: bytes | None = None
    mime_type: str | None = None

    def __post_init__(self) -> None:
        if (self.text is None) == (self.blob is None):
            raise ValueError("EmbeddedResource needs exactly one of text= or blob=")

    def to_mcp(self) -> JSONObject:
        resource: JSONObject = {"uri": self.uri}
        if self.mime_type is not None:
            resource["mimeType"] = self.mime_type
        if self.blob is not None:
            resource["blob"] = _b64(self.blob)
        else:
            resource["text"] = self.text
        return {"type": "resource", "resource": resource}


ContentBlock = Text | Image | Audio | ResourceLink | EmbeddedResource
CONTENT_TYPES = (Text, Image, Audio, ResourceLink, EmbeddedResource)


@dataclass
class ToolResult:
    """Full control over a result. ``structured`` is sent as-is (it must be a JSON object);
    ``meta`` is the result's ``_meta`` object (e.g. ``{"claude/endTurn": True}``). A single
    str or block as ``content`` is one block: ``ToolResult("sent")``."""

    content: list[ContentBlock | str] = field(default_factory=list)
    structured: JSON = None
    is_error: bool = False
    enable_tools: list[str] = field(default_factory=list)
    disable_tools: list[str] = field(default_factory=list)
    meta: JSONObject | None = None

    def __post_init__(self) -> None:
        if isinstance(self.content, (str, *CONTENT_TYPES)):
            self.content = [self.content]
        if self.meta is not None and not isinstance(self.meta, dict):
            raise TypeError(f"ToolResult(meta=...) must be a dict, got {type(self.meta).__name__}")


def _to_jsonable(value: object) -> JSON:
    """orjson's fallback for values it cannot encode itself (models, sets, Decimal, bytes...)."""
    if isinstance(value, os.PathLike):  # pydantic knows Path but not PurePath
        return os.fspath(value)
    from pydantic_core import to_jsonable_python  # only values orjson lacks pay for the import

    return to_jsonable_python(value)


def dump_json(value: object) -> bytes:
    """Compact JSON for any value a tool may return; raises orjson.JSONEncodeError otherwise."""
    return orjson.dumps(value, default=_to_jsonable, option=_JSON_OPTIONS)
