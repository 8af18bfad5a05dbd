"""``PromptSpec``: a prompt is a function whose parameters are the prompt's arguments and whose
return value (a str, a Message, or a list of them) is the prompt's messages."""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass, field

from protomcp_sdk.authoring.arguments import Converter
from protomcp_sdk.authoring.functions import AuthorFunction
from protomcp_sdk.authoring.metadata import as_json, checked_icons, checked_meta, checked_scopes
from protomcp_sdk.authoring.schema import analyze
from protomcp_sdk.authoring.tools import check_name
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.jsontypes import JSONObject


@dataclass
class PromptSpec:
    name: str
    title: str | None
    description: str
    arguments: list[pb.PromptArgument]
    fn: AuthorFunction
    is_async: bool
    context_param: str | None
    converter: Converter = field(repr=False)
    meta: JSONObject | None = None
    icons: list[JSONObject] | None = None
    scopes: frozenset[str] = frozenset()  # OAuth scopes a caller's token must grant (HTTP + OAuth)

    def definition(self) -> pb.PromptDefinition:
        return pb.PromptDefinition(
            name=self.name,
            title=self.title or "",
            description=self.description,
            arguments=self.arguments,
            meta_json=as_json(self.meta),
            icons_json=as_json(self.icons),
            scopes=sorted(self.scopes),
        )


def prompt_spec(
    fn: AuthorFunction,
    name: str | None,
    title: str | None,
    description: str | None,
    meta: JSONObject | None = None,
    icons: Iterable[JSONObject] | None = None,
    scopes: Iterable[str] | None = None,
) -> PromptSpec:
    prompt_name = name if name is not None else getattr(fn, "__name__", "")
    check_name(prompt_name)
    label = f"prompt {prompt_name!r}"
    meta, icons = checked_meta(label, meta), checked_icons(label, icons)
    signature = analyze(fn, prompt_name, returns=False)
    properties = signature.input_schema.get("properties", {})
    required = set(signature.input_schema.get("required", ()))
    arguments = [
        pb.PromptArgument(
            name=param,
            description=str(properties.get(param, {}).get("description", "")),
            required=param in required,
        )
        for param in signature.params
    ]
    doc = inspect.cleandoc(fn.__doc__) if fn.__doc__ else ""
    return PromptSpec(
        name=prompt_name,
        title=title,
        description=description if description is not None else doc,
        arguments=arguments,
        fn=fn,
        is_async=inspect.iscoroutinefunction(fn),
        context_param=signature.context_param,
        converter=signature.convert,
        meta=meta,
        icons=icons,
        scopes=checked_scopes(label, scopes),
    )
