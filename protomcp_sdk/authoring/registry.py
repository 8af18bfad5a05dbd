"""The registry of what one tool file defines: tools, middleware, resources, templates, prompts,
completions and roots hooks, in definition order."""

from __future__ import annotations

from collections.abc import Callable

from protomcp_sdk.authoring.completions import CompletionSpec
from protomcp_sdk.authoring.environment import EnvSpec
from protomcp_sdk.authoring.lifespan import LifespanSpec
from protomcp_sdk.authoring.middleware import MiddlewareSpec
from protomcp_sdk.authoring.prompts import PromptSpec
from protomcp_sdk.authoring.resources import ResourceSpec
from protomcp_sdk.authoring.tools import ToolSpec


class DuplicateToolError(ValueError):
    """Two tools were registered under one name."""


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
        self.roots_hooks: list[Callable[[], object]] = []  # @on_roots_changed
        self.lifespan: LifespanSpec | None = None  # @lifespan: at most one per tool process
        self.env: dict[str, EnvSpec] = {}  # env(NAME, ...): variables the file needs

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

    def add_env(self, spec: EnvSpec) -> None:
        """The same variable read twice is declared once (the first description stays)."""
        self.env.setdefault(spec.name, spec)

    def set_lifespan(self, spec: LifespanSpec) -> None:
        if self.lifespan is not None and self.lifespan.fn is not spec.fn:
            raise DuplicateToolError(
                f"two @lifespan functions ({self.lifespan.name!r} and {spec.name!r}); a tool process "
                "has one: start everything in one of them"
            )
        self.lifespan = spec

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

    def declared_files(self) -> list[str]:
        """The files the resources say they serve from (``files=``), each once: dev watches them."""
        specs = [*self.resources.values(), *self.templates.values()]
        return list(dict.fromkeys(str(path) for spec in specs for path in spec.files))

    def clear(self) -> None:
        self.tools.clear()
        self.resources.clear()
        self.templates.clear()
        self.prompts.clear()
        self.completions.clear()
        self.middleware.clear()
        self.roots_hooks.clear()
        self.lifespan = None
        self.env.clear()

    def warnings(self, file_name: str) -> list[str]:
        """What the author of a just-loaded tool file should hear about."""
        served = (self.resources, self.templates, self.prompts, self.middleware, self.completions)
        if not self.tools and not any(served):  # middleware alone acts on the other files' tools
            return [
                f"{file_name} defines no tools: decorate functions with @tool (from protomcp_sdk import tool)"
            ]
        warnings = [warning for spec in self.tools.values() for warning in spec.warnings]
        return warnings + self._missing_apps()

    def _missing_apps(self) -> list[str]:
        """A tool that names an app (MCP Apps) this file does not serve: the spec has the
        resource exist on the server, so it must come from another file served with this one."""
        return [
            f"tool {spec.name!r} shows the app {app!r}, which this file does not define: "
            f"define it with @resource({app!r}) (or serve it from another file)"
            for spec in self.tools.values()
            if (app := spec.app) is not None and app not in self.resources and self.template_for(app) is None
        ]


REGISTRY = Registry()
