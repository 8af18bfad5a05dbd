"""``CompletionSpec``: a function suggesting values for a prompt argument or a resource template variable."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from protomcp_sdk.authoring.functions import AuthorFunction

MAX_VALUES = 100  # MCP: a completion result holds at most 100 values


@dataclass
class CompletionSpec:
    ref_type: str  # "ref/prompt" or "ref/resource"
    ref: str  # prompt name or URI template
    argument: str
    fn: AuthorFunction
    is_async: bool
    takes_context: bool

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.ref_type, self.ref, self.argument)


def completion_spec(
    fn: AuthorFunction, argument: str, prompt: str | None, resource: str | None
) -> CompletionSpec:
    """Inspect ``fn(value, context)`` completing `argument` of a prompt or resource template."""
    params = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if not params:
        raise TypeError(f"completion {fn.__qualname__} must take the value to complete: fn(value, context)")
    ref_type, ref = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", resource)
    return CompletionSpec(
        ref_type, ref or "", argument, fn, inspect.iscoroutinefunction(fn), takes_context=len(params) > 1
    )


def limited(values: object, what: str) -> tuple[list[str], int, bool]:
    """(at most 100 values, total, has_more) from what a completion function returned."""
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{what} returned a {type(values).__name__}; return a list of str")
    strings = [str(v) for v in values]
    return strings[:MAX_VALUES], len(strings), len(strings) > MAX_VALUES
