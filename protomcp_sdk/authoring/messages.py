"""``Message``: one turn of a prompt (and of a sampling request): a role and one content block."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from protomcp_sdk.authoring.results import CONTENT_TYPES, ContentBlock, Text
from protomcp_sdk.wire.jsontypes import JSONObject

Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class Message:
    """``Message("user", "text")`` or ``Message("assistant", Image(png, "image/png"))``."""

    role: Role
    content: ContentBlock | str

    def __post_init__(self) -> None:
        if self.role not in ("user", "assistant"):
            raise ValueError(f"a message's role is 'user' or 'assistant', not {self.role!r}")
        if not isinstance(self.content, (str, *CONTENT_TYPES)):
            raise TypeError(
                f"a message's content is a str or a content block (Text, Image, Audio, ResourceLink, "
                f"EmbeddedResource), not {type(self.content).__name__}"
            )

    def to_mcp(self) -> JSONObject:
        content = Text(self.content) if isinstance(self.content, str) else self.content
        return {"role": self.role, "content": content.to_mcp()}


Messages: TypeAlias = str | Message | Sequence[str | Message]
"""A prompt's return value, or what ``ctx.sample`` sends: one user text, one Message, or a
list (or tuple) of them."""


def to_messages(value: object, what: str) -> list[JSONObject]:
    """A prompt's (or sampling request's) messages as MCP PromptMessage objects: a str is one
    user message; a Message one message; a list may mix both."""
    items = value if isinstance(value, (list, tuple)) else [value]
    out: list[JSONObject] = []
    for item in items:
        if isinstance(item, str):
            out.append({"role": "user", "content": {"type": "text", "text": item}})
        elif isinstance(item, Message):
            out.append(item.to_mcp())
        else:
            raise TypeError(
                f"{what} returned a {type(item).__name__}; return a str, a Message or a list of them"
            )
    return out
