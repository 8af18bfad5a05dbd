"""The merged tool list behind one host: who owns each tool, its MCP shape, its validator.

Pure data, no I/O. Each tool process ("owner") replaces its own tools as a unit;
sessions read pages and validate arguments from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from protomcp_host.protocol.jsontypes import JSON_TYPES, PRIMITIVE_TYPES
from protomcp_host.protocol.listing import InvalidCursor, Listing, NameClash
from protomcp_sdk.wire.rates import Rate

__all__ = ["DEFAULT_PAGE_SIZE", "Catalog", "InvalidCursor", "NameClash", "Tool", "quick_check", "render"]

DEFAULT_PAGE_SIZE = 1000
LARGE_SCHEMA = 64 * 1024  # bytes of JSON: above this a validator is built ahead, off the loop

# Tool fields each protocol revision knows; older clients get only these.
_FIELDS_BY_VERSION = {
    "2024-11-05": ("name", "description", "inputSchema"),
    "2025-03-26": ("name", "description", "inputSchema", "annotations"),
    "2025-06-18": ("name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta"),
    "2026-07-28": (
        "name",
        "title",
        "description",
        "inputSchema",
        "outputSchema",
        "annotations",
        "icons",
        "_meta",
    ),
}
_ALL_FIELDS = (
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "execution",
    "icons",
    "_meta",
)


@dataclass(slots=True)
class Tool:
    name: str
    owner: str  # the label of the source that offers it (a tool file, an upstream, a peer)
    mcp: dict[str, Any]  # the full MCP Tool object
    hidden: bool = False  # starts disabled in every session until a tool enables it
    pinned: bool = False  # stays in tools/list under --discovery search
    timeout: float | None = None  # seconds; None = the host's --call-timeout
    input_before_task: bool = False  # 2026-07-28 tasks: the input round trip first, then a task
    # a typed tool: (FileDescriptorSet bytes, parameter message, result message or "")
    messages: tuple[bytes, str, str] | None = None
    scopes: frozenset[str] = frozenset()  # OAuth scopes a caller's token must grant (scopes.py)
    rate_limit: Rate | None = None  # calls per principal (--rate-limit / @tool(rate_limit=...))
    _validator: Any = field(default=None, repr=False)
    _quick: Callable[[dict[str, Any]], bool] | None = field(default=None, repr=False)
    _size: int = field(default=-1, repr=False)

    @property
    def key(self) -> str:
        """Its name: the key of the listing (see listing.Owned)."""
        return self.name

    @property
    def large(self) -> bool:
        """A schema whose validator is worth building ahead, off the event loop."""
        if self._size < 0:
            self._size = len(orjson.dumps(self.mcp.get("inputSchema")))
        return self._size > LARGE_SCHEMA

    def prepare(self) -> None:
        """Build the checked validator now (callable from a call thread)."""
        self._validator = _compile(self.mcp.get("inputSchema") or {"type": "object"})

    def validate(self, arguments: dict[str, Any]) -> str | None:
        """Return a readable description of what is wrong with the arguments, or None."""
        if self._quick is None:
            self._quick = quick_check(self.mcp.get("inputSchema"))
        if self._quick(arguments):
            return None
        if self._validator is None:  # compiled on first use, once per tool list
            schema = self.mcp.get("inputSchema") or {"type": "object"}
            # Checking a schema against the metaschema costs seconds for a huge one: those are
            # checked ahead, off the loop (prepare); until then a mistake shows when used.
            self._validator = _compile(schema, check=not self.large)
        try:
            if self._validator.is_valid(arguments):
                return None
            errors = sorted(self._validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        except Exception:  # a $ref that points nowhere, a broken unchecked schema: accept any object
            self._validator = _compile({"type": "object"})
            return None
        lines = []
        for error in errors[:10]:
            where = ".".join(str(part) for part in error.absolute_path)
            lines.append(f"{where}: {error.message}" if where else error.message)
        return f"Invalid arguments for tool '{self.name}': " + "; ".join(lines)


_ANNOTATIONS = frozenset({"title", "description", "default", "examples"})


def quick_check(schema: Any) -> Callable[[dict[str, Any]], bool]:
    """A fast yes-check for the flat schemas most tools have (an object of primitive,
    possibly nullable, properties; open or closed to other properties). It only ever says
    "valid" when jsonschema would too; False means "ask jsonschema", which also writes the
    error message."""
    never: Callable[[dict[str, Any]], bool] = lambda arguments: False  # noqa: E731
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return never
    if not set(schema) <= {"type", "properties", "required", "additionalProperties", *_ANNOTATIONS}:
        return never
    closed = schema.get("additionalProperties", True)
    if not isinstance(closed, bool):  # a schema for the other properties: ask jsonschema
        return never
    closed = not closed
    checks: dict[str, Callable[[Any], bool]] = {}
    for name, prop in (schema.get("properties") or {}).items():
        types = _primitive_types(prop)
        if types is None:
            return never
        checks[name] = _any_of(tuple(JSON_TYPES[t] for t in types))
    required = tuple(schema.get("required") or ())

    def check(arguments: dict[str, Any]) -> bool:
        for name in required:
            if name not in arguments:
                return False
        for name, value in arguments.items():
            test = checks.get(name)
            if test is None:
                if closed:  # an unknown argument: jsonschema names it
                    return False
            elif not test(value):
                return False
        return True

    return check


def _any_of(tests: tuple[Callable[[Any], bool], ...]) -> Callable[[Any], bool]:
    """One test for a property (one type: that type's test, with no loop per argument)."""
    if len(tests) == 1:
        return tests[0]
    return lambda value: any(test(value) for test in tests)


def _primitive_types(prop: Any) -> list[str] | None:
    """The JSON types a property allows, if it is a plain primitive (or anyOf of them)."""
    if not isinstance(prop, dict):
        return None
    if "anyOf" in prop and set(prop) <= {"anyOf", *_ANNOTATIONS}:
        out: list[str] = []
        for option in prop["anyOf"]:
            types = _primitive_types(option)
            if types is None:
                return None
            out.extend(types)
        return out
    kind = prop.get("type")
    if set(prop) <= {"type", *_ANNOTATIONS} and isinstance(kind, str) and kind in PRIMITIVE_TYPES:
        return [kind]
    return None


def _compile(schema: dict[str, Any], *, check: bool = True) -> Any:
    """A jsonschema validator; imported here because most runs validate late or never."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        if check:
            Draft202012Validator.check_schema(schema)  # the constructor does not check
        return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    except SchemaError:  # a tool process with a broken schema: accept any object
        return Draft202012Validator({"type": "object"})


def render(mcp: dict[str, Any], version: str) -> dict[str, Any]:
    """An MCP Tool object with only the fields protocol revision `version` knows."""
    fields = _FIELDS_BY_VERSION.get(version, _ALL_FIELDS)
    return {k: mcp[k] for k in fields if k in mcp}


class Catalog:
    """The tools of every tool file behind one host (a Listing of Tool), pages per revision."""

    def __init__(self, page_size: int = DEFAULT_PAGE_SIZE) -> None:
        self._tools: Listing[Tool] = Listing("tool name", page_size)
        self.page_size = page_size
        self._default: list[Tool] | None = None  # the tools not hidden, in order
        self.generation = 0  # counts replacements: what was built from the tools is stale when it moves

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools.entries  # (not through Listing's own: metering asks per request)

    def get(self, name: str) -> Tool | None:
        return self._tools.entries.get(name)

    def names(self) -> list[str]:
        return list(self._tools.entries)

    def tools_of(self, owner: str) -> list[Tool]:
        return self._tools.of(owner)

    def replace(self, owner: str, tools: Iterable[Tool], owner_label: str | None = None) -> bool:
        """Swap in `owner`'s tools. Returns True when they changed.

        Raises NameClash (and changes nothing) when a name belongs to another owner.
        """
        changed = self._tools.replace(owner, tools, owner_label)
        self._default = None
        self.generation += 1
        return changed

    def remove_owner(self, owner: str) -> bool:
        return self.replace(owner, [])

    def visible(self, shown: Callable[[Tool], bool] | None = None) -> list[Tool]:
        """The tools a session sees: `shown` decides, or by default every tool not hidden."""
        if shown is not None:
            return [t for t in self._tools.ordered() if shown(t)]
        if self._default is None:
            self._default = [t for t in self._tools.ordered() if not t.hidden]
        return self._default

    def page(self, cursor: str | None, version: str, shown: Callable[[Tool], bool] | None = None) -> bytes:
        """The JSON-encoded tools/list result for one page of the tools `shown` selects
        (default: all but hidden ones; those pages are cached)."""
        fields = _FIELDS_BY_VERSION.get(version, _ALL_FIELDS)

        def render(tool: Tool) -> dict[str, Any]:
            return {k: tool.mcp[k] for k in fields if k in tool.mcp}

        items = self.visible(shown)
        return self._tools.page(
            cursor, "tools", render, items=items, cache=version if shown is None else None
        )
