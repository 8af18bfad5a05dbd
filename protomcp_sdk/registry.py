"""The ``@tool`` decorator and the registry of tools a tool file defines."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import orjson

from protomcp_sdk import docstrings
from protomcp_sdk import protomcp_pb2 as pb
from protomcp_sdk.outputs import OutputCheck
from protomcp_sdk.schema import ArgumentError, Converter, analyze  # ArgumentError is used from here

if TYPE_CHECKING:
    from protomcp_sdk.chain import MiddlewareSpec
    from protomcp_sdk.completions import CompletionSpec
    from protomcp_sdk.prompts import PromptSpec
    from protomcp_sdk.resources import ResourceSpec

F = TypeVar("F", bound=Callable[..., Any])

TaskSupport = Literal["forbidden", "optional", "required"]
TASK_MODES = ("forbidden", "optional", "required")
_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
_HINTS = (
    ("readOnlyHint", "read_only_hint"),
    ("destructiveHint", "destructive_hint"),
    ("idempotentHint", "idempotent_hint"),
    ("openWorldHint", "open_world_hint"),
)


class DuplicateToolError(ValueError):
    """Two tools were registered under one name."""


@dataclass
class ToolSpec:
    """Everything known about one tool, computed once when it is decorated."""

    name: str
    title: str | None
    description: str
    fn: Callable[..., Any]
    is_async: bool
    annotations: dict[str, bool] | None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    context_param: str | None
    wraps_result: bool
    converter: Converter | None = field(default=None, repr=False, compare=False)
    hidden: bool = False
    tags: frozenset[str] = frozenset()
    timeout: float | None = None
    warnings: tuple[str, ...] = ()  # likely mistakes, printed when the tool file loads
    output_checker: OutputCheck | None = field(default=None, repr=False, compare=False)  # built on first use
    task: TaskSupport = "forbidden"  # MCP execution.taskSupport

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: dict[str, bool] | None = None,
        hidden: bool = False,
        tags: Iterable[str] = (),
        timeout: float | None = None,
        task: TaskSupport = "forbidden",
    ) -> ToolSpec:
        """Inspect ``fn`` (without registering it). Raises ValueError/TypeError on misuse."""
        tool_name = name if name is not None else getattr(fn, "__name__", "")
        check_name(tool_name)
        if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
            raise TypeError(f"tool {tool_name!r} is a generator; tools must return their result")
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ValueError(f"tool {tool_name!r}: timeout must be a positive number of seconds")
        if isinstance(tags, str):
            raise TypeError(f"tool {tool_name!r}: tags must be a set of strings, e.g. tags={{{tags!r}}}")
        if task not in TASK_MODES:
            raise ValueError(f"tool {tool_name!r}: task must be one of {', '.join(map(repr, TASK_MODES))}")
        signature = analyze(fn, tool_name)
        summary, documented = docstrings.parse(inspect.cleandoc(fn.__doc__)) if fn.__doc__ else ("", {})
        if description is None:
            description = summary  # the parameter sections go into the schema instead
        for param, text in documented.items():
            prop = signature.input_schema.get("properties", {}).get(param)
            if isinstance(prop, dict) and "description" not in prop:
                prop["description"] = text
        return cls(
            name=tool_name,
            title=title,
            description=description,
            fn=fn,
            is_async=inspect.iscoroutinefunction(fn),
            annotations=dict(annotations) if annotations else None,
            input_schema=signature.input_schema,
            output_schema=signature.output_schema,
            context_param=signature.context_param,
            wraps_result=signature.wraps_result,
            converter=signature.convert,
            hidden=bool(hidden),
            tags=frozenset(tags),
            timeout=float(timeout) if timeout is not None else None,
            warnings=signature.warnings,
            task=task,
        )

    def convert(self, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """Validate JSON arguments and convert them to the keyword arguments ``fn`` expects.

        Defaults are filled in; the Context parameter is not included. Unknown keys are ignored.
        """
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            raise ArgumentError(
                f"Invalid arguments for tool '{self.name}': expected a JSON object, "
                f"got {type(arguments).__name__}"
            )
        return self.converter(arguments) if self.converter is not None else dict(arguments)

    def definition(self) -> pb.ToolDefinition:
        hints = self.annotations or {}
        definition = pb.ToolDefinition(
            name=self.name,
            description=self.description,
            title=self.title or "",
            input_schema_json=orjson.dumps(self.input_schema).decode(),
            output_schema_json=orjson.dumps(self.output_schema).decode() if self.output_schema else "",
            annotations_json=orjson.dumps(self.annotations).decode() if self.annotations else "",
            hidden=self.hidden,
            tags=sorted(self.tags),
            timeout=self.timeout or 0.0,
            task_support=self.task != "forbidden",
            task_support_mode=self.task,
        )
        for key, attr in _HINTS:
            setattr(definition, attr, bool(hints.get(key, False)))
        return definition


class Registry:
    """The tools (middleware, resources, templates, prompts, completions) of one tool file, in
    definition order."""

    def __init__(self) -> None:
        self.tools: dict[str, ToolSpec] = {}
        self.resources: dict[str, ResourceSpec] = {}  # by URI
        self.templates: dict[str, ResourceSpec] = {}  # by URI template
        self.prompts: dict[str, PromptSpec] = {}
        self.completions: dict[tuple[str, str, str], CompletionSpec] = {}
        self.middleware: dict[str, MiddlewareSpec] = {}
        self.roots_hooks: list[Callable[[], Any]] = []  # @on_roots_changed

    def add(self, spec: ToolSpec) -> None:
        if spec.name in self.tools:
            raise DuplicateToolError(
                f"tool name {spec.name!r} is registered twice; give one of them another name "
                "with @tool(name=...)"
            )
        self.tools[spec.name] = spec

    def add_middleware(self, spec: MiddlewareSpec) -> None:
        if spec.name in self.middleware:
            raise DuplicateToolError(f"middleware {spec.name!r} is registered twice")
        self.middleware[spec.name] = spec

    def add_resource(self, spec: ResourceSpec) -> None:
        table = self.templates if spec.template is not None else self.resources
        if spec.uri in table:
            raise DuplicateToolError(f"resource {spec.uri!r} is registered twice")
        table[spec.uri] = spec

    def add_prompt(self, spec: PromptSpec) -> None:
        if spec.name in self.prompts:
            raise DuplicateToolError(f"prompt name {spec.name!r} is registered twice")
        self.prompts[spec.name] = spec

    def add_completion(self, spec: CompletionSpec) -> None:
        if spec.key in self.completions:
            raise DuplicateToolError(
                f"argument {spec.argument!r} of {spec.ref!r} has two completion functions"
            )
        self.completions[spec.key] = spec

    def template_for(self, uri: str) -> ResourceSpec | None:
        """The first template that matches `uri`."""
        for spec in self.templates.values():
            if spec.template is not None and spec.template.match(uri) is not None:
                return spec
        return None

    def clear(self) -> None:
        self.tools.clear()
        self.resources.clear()
        self.templates.clear()
        self.prompts.clear()
        self.completions.clear()
        self.middleware.clear()
        self.roots_hooks.clear()

    def warnings(self, file_name: str) -> list[str]:
        """What the author of a just-loaded tool file should hear about."""
        if not self.tools:
            return [
                f"{file_name} defines no tools: decorate functions with @tool (from protomcp_sdk import tool)"
            ]
        return [warning for spec in self.tools.values() for warning in spec.warnings]


REGISTRY = Registry()


def check_name(name: str) -> None:
    """MCP tool names: 1-128 characters of A-Z a-z 0-9 _ - ."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(
            f"invalid tool name {name!r}: use 1-128 characters from A-Z, a-z, 0-9, '_', '-' and '.' "
            "(set it with @tool(name=...))"
        )


@overload
def tool(fn: F, /) -> F: ...


@overload
def tool(
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
    hidden: bool = False,
    tags: Iterable[str] = (),
    timeout: float | None = None,
    task: TaskSupport = "forbidden",
    input_schema: dict[str, Any] | None = None,
) -> Callable[[F], F]: ...


def tool(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
    hidden: bool = False,
    tags: Iterable[str] = (),
    timeout: float | None = None,
    task: TaskSupport = "forbidden",
    input_schema: dict[str, Any] | None = None,
) -> F | Callable[[F], F]:
    """Register a function as an MCP tool; the function itself is returned unchanged.

    Use bare (``@tool``) or with options. Hints left as None are not sent at all, so a
    client applies the MCP defaults rather than reading them as false. ``hidden`` tools
    start disabled in every session until a tool enables them (``ctx.enable_tools``);
    ``tags`` let a host expose a subset (``--include-tag`` / ``--exclude-tag``);
    ``timeout`` (seconds) overrides the host's ``--call-timeout`` for this tool.
    ``task`` sets MCP ``execution.taskSupport``: "optional" or "required" let (or make)
    clients run the tool as a task; the default "forbidden" does not.
    ``input_schema`` replaces the schema built from the signature (the host validates
    arguments against it; the function still receives them by parameter name).
    """
    set_hints = zip(_HINTS, (read_only, destructive, idempotent, open_world), strict=True)
    annotations = {key: bool(value) for (key, _), value in set_hints if value is not None}

    def register(func: F) -> F:
        spec = ToolSpec.from_function(
            func,
            name=name,
            title=title,
            description=description,
            annotations=annotations,
            hidden=hidden,
            tags=tags,
            timeout=timeout,
            task=task,
        )
        if input_schema is not None:
            spec.input_schema = dict(input_schema)
        REGISTRY.add(spec)
        return func

    return register(fn) if fn is not None else register
