"""``ToolSpec``: everything known about one tool, computed once when it is decorated."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import orjson

from protomcp_sdk.authoring import docstrings
from protomcp_sdk.authoring.apps import Visibility, names_app, tool_ui
from protomcp_sdk.authoring.arguments import ArgumentError, Converter
from protomcp_sdk.authoring.functions import AuthorFunction
from protomcp_sdk.authoring.metadata import ALWAYS_LOAD, as_json, checked_icons, checked_meta, checked_scopes
from protomcp_sdk.authoring.outputs import OutputCheck
from protomcp_sdk.authoring.schema import analyze
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.jsontypes import JSONObject
from protomcp_sdk.wire.rates import parse_rate

if TYPE_CHECKING:
    from google.protobuf.message import Message

TaskSupport = Literal["forbidden", "optional", "required"]
TASK_MODES = ("forbidden", "optional", "required")
_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
_HINTS = (
    ("readOnlyHint", "read_only_hint"),
    ("destructiveHint", "destructive_hint"),
    ("idempotentHint", "idempotent_hint"),
    ("openWorldHint", "open_world_hint"),
)


@dataclass
class ToolSpec:
    """Everything known about one tool, computed once when it is decorated."""

    name: str
    title: str | None
    description: str
    fn: AuthorFunction
    is_async: bool
    annotations: dict[str, bool] | None
    input_schema: JSONObject
    output_schema: JSONObject | None
    context_param: str | None
    wraps_result: bool
    converter: Converter | None = field(default=None, repr=False, compare=False)
    hidden: bool = False
    pinned: bool = False  # listed under the host's --discovery search
    tags: frozenset[str] = frozenset()
    timeout: float | None = None
    warnings: tuple[str, ...] = ()  # likely mistakes, printed when the tool file loads
    output_checker: OutputCheck | None = field(default=None, repr=False, compare=False)  # built on first use
    task: TaskSupport = "forbidden"  # MCP execution.taskSupport
    input_before_task: bool = False  # 2026-07-28: input round trip first, then a task
    message: type[Message] | None = None  # a typed tool: its parameter's protobuf message class...
    result_message: type[Message] | None = None  # ... and its result's, when it returns one
    meta: JSONObject | None = None  # the MCP Tool's _meta (pinned adds anthropic/alwaysLoad)
    icons: list[JSONObject] | None = None
    scopes: frozenset[str] = frozenset()  # OAuth scopes a caller's token must grant (HTTP + OAuth)
    rate_limit: str = ""  # "N/second|minute|hour" per caller, counted by the host ("": none)

    @classmethod
    def from_function(
        cls,
        fn: AuthorFunction,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: dict[str, bool] | None = None,
        hidden: bool = False,
        pinned: bool = False,
        tags: Iterable[str] = (),
        timeout: float | None = None,
        task: TaskSupport = "forbidden",
        input_before_task: bool = False,
        meta: JSONObject | None = None,
        icons: Iterable[JSONObject] | None = None,
        scopes: Iterable[str] | None = None,
        ui: str | None = None,
        visibility: Iterable[Visibility] | None = None,
        rate_limit: str | None = None,
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
        if input_before_task and task == "forbidden":
            raise ValueError(f"tool {tool_name!r}: input_before_task needs task='optional' or 'required'")
        meta = tool_ui(f"tool {tool_name!r}", ui, visibility, checked_meta(f"tool {tool_name!r}", meta))
        if pinned:  # Claude Code defers every tool behind its tool search unless told this
            meta = {ALWAYS_LOAD: True, **(meta or {})}
        icons = checked_icons(f"tool {tool_name!r}", icons)
        required = checked_scopes(f"tool {tool_name!r}", scopes)
        if rate_limit is not None:
            try:
                rate_limit = str(parse_rate(rate_limit))
            except ValueError as exc:
                raise ValueError(f"tool {tool_name!r}: {exc}") from None
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
            pinned=bool(pinned),
            tags=frozenset(tags),
            timeout=float(timeout) if timeout is not None else None,
            warnings=signature.warnings,
            task=task,
            input_before_task=bool(input_before_task),
            message=signature.message,
            result_message=signature.result_message,
            meta=meta,
            icons=icons,
            scopes=required,
            rate_limit=rate_limit or "",
        )

    @property
    def app(self) -> str | None:
        """The ui:// resource of the app this tool shows (MCP Apps), if any."""
        return names_app(self.meta)

    def convert(self, arguments: JSONObject | None) -> dict[str, object]:
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
            pinned=self.pinned,
            tags=sorted(self.tags),
            timeout=self.timeout or 0.0,
            task_support=self.task != "forbidden",
            task_support_mode=self.task,
            input_before_task=self.input_before_task,
            meta_json=as_json(self.meta),
            icons_json=as_json(self.icons),
            scopes=sorted(self.scopes),
            rate_limit=self.rate_limit,
        )
        for key, attr in _HINTS:
            setattr(definition, attr, bool(hints.get(key, False)))
        if self.message is not None:
            from protomcp_sdk.wire.descriptor_sets import files_of

            classes = [c for c in (self.message, self.result_message) if c is not None]
            definition.message_descriptors = files_of(classes).SerializeToString(deterministic=True)
            definition.input_message = self.message.DESCRIPTOR.full_name
            if self.result_message is not None:
                definition.output_message = self.result_message.DESCRIPTOR.full_name
        return definition


def check_name(name: str) -> None:
    """MCP tool names: 1-128 characters of A-Z a-z 0-9 _ - ."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(
            f"invalid tool name {name!r}: use 1-128 characters from A-Z, a-z, 0-9, '_', '-' and '.' "
            "(set it with @tool(name=...))"
        )
