"""The ``@completion`` decorator: suggestions for a prompt argument or a resource template variable."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

MAX_VALUES = 100  # MCP: a completion result holds at most 100 values


@dataclass
class CompletionSpec:
    ref_type: str  # "ref/prompt" or "ref/resource"
    ref: str  # prompt name or URI template
    argument: str
    fn: Callable[..., Any]
    is_async: bool
    takes_context: bool

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.ref_type, self.ref, self.argument)


def completion(*, argument: str, prompt: str | None = None, resource: str | None = None) -> Callable[[F], F]:
    """Register ``fn(value, context) -> list[str]`` to complete `argument` of a prompt (by name)
    or of a resource template (by its URI template). `context` holds the other arguments the
    client already filled in; it may be left out of the signature."""
    from protomcp_sdk.registry import REGISTRY

    if (prompt is None) == (resource is None):
        raise ValueError("@completion needs exactly one of prompt= or resource=")
    if not argument:
        raise ValueError("@completion needs argument=, the name of the argument to complete")

    def register(fn: F) -> F:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        if not params:
            raise TypeError(
                f"completion {fn.__qualname__} must take the value to complete: fn(value, context)"
            )
        ref_type, ref = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", resource)
        spec = CompletionSpec(
            ref_type, ref or "", argument, fn, inspect.iscoroutinefunction(fn), takes_context=len(params) > 1
        )
        REGISTRY.add_completion(spec)
        return fn

    return register


def limited(values: Any, what: str) -> tuple[list[str], int, bool]:
    """(at most 100 values, total, has_more) from what a completion function returned."""
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{what} returned a {type(values).__name__}; return a list of str")
    strings = [str(v) for v in values]
    return strings[:MAX_VALUES], len(strings), len(strings) > MAX_VALUES
