"""The ``@prompt`` decorator: a function whose parameters are the prompt's arguments and whose
return value (a str, a Message, or a list of them) is the prompt's messages."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from protomcp_sdk import protomcp_pb2 as pb
from protomcp_sdk.registry import REGISTRY, check_name
from protomcp_sdk.schema import Converter, analyze

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class PromptSpec:
    name: str
    title: str | None
    description: str
    arguments: list[pb.PromptArgument]
    fn: Callable[..., Any]
    is_async: bool
    context_param: str | None
    converter: Converter = field(repr=False)

    def definition(self) -> pb.PromptDefinition:
        return pb.PromptDefinition(
            name=self.name, title=self.title or "", description=self.description, arguments=self.arguments
        )


@overload
def prompt(fn: F, /) -> F: ...


@overload
def prompt(
    *, name: str | None = None, title: str | None = None, description: str | None = None
) -> Callable[[F], F]: ...


def prompt(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
) -> F | Callable[[F], F]:
    """Register a function as an MCP prompt. Its parameters are the prompt's arguments
    (required unless they have a default; descriptions from ``Annotated[..., Field(...)]``)."""

    def register(func: F) -> F:
        REGISTRY.add_prompt(_spec(func, name, title, description))
        return func

    return register(fn) if fn is not None else register


def _spec(fn: Callable[..., Any], name: str | None, title: str | None, description: str | None) -> PromptSpec:
    prompt_name = name if name is not None else getattr(fn, "__name__", "")
    check_name(prompt_name)
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
    )
