"""What `protomcp list` and `protomcp call` show a person: readable signatures, `key=value`
arguments read by the tool's schema, and progress and log messages while a call runs
(a rich progress bar on a terminal, plain lines otherwise). Imported by those commands
only: `protomcp run` never pays for rich."""

from __future__ import annotations

import sys
from typing import IO, Any

import orjson

_NAMES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


# ---- signatures ------------------------------------------------------------------------


def signature(schema: dict[str, Any]) -> str:
    """`(title: str, priority: 'low'|'high' = 'low', tags: list[str] | None = None)`."""
    required = set(schema.get("required", []))
    defs = schema.get("$defs", {})
    parts = []
    for name, prop in (schema.get("properties") or {}).items():
        text = f"{name}: {type_name(prop, defs)}"
        if isinstance(prop, dict) and "default" in prop:
            text += f" = {_literal(prop['default'])}"
        elif name not in required:
            text += " = ..."
        parts.append(text)
    return f"({', '.join(parts)})"


def type_name(schema: Any, defs: dict[str, Any] | None = None, depth: int = 0) -> str:
    """A Python-looking name for a JSON Schema: int, list[str], 'a'|'b', Note, str | None..."""
    if not isinstance(schema, dict) or depth > 5:
        return "any"
    defs = defs or {}
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        target = defs.get(name, {})
        return type_name(target, defs, depth + 1) if "enum" in target else name
    if "enum" in schema:
        return "|".join(_literal(value) for value in schema["enum"])
    if "const" in schema:
        return _literal(schema["const"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [type_name(option, defs, depth + 1) for option in schema[key]]
            rest = [o for o in options if o != "None"]
            return " | ".join(rest + (["None"] if len(rest) < len(options) else []))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(type_name({**schema, "type": k}, defs, depth + 1) for k in kind)
    if kind == "array":
        items = schema.get("items")
        if isinstance(schema.get("prefixItems"), list):
            return f"tuple[{', '.join(type_name(i, defs, depth + 1) for i in schema['prefixItems'])}]"
        return f"list[{type_name(items, defs, depth + 1)}]" if items else "list"
    if kind == "object":
        values = schema.get("additionalProperties")
        if isinstance(values, dict):
            return f"dict[str, {type_name(values, defs, depth + 1)}]"
        return schema.get("title") or "dict"
    if isinstance(kind, str):
        name = _NAMES.get(kind, kind)
        fmt = schema.get("format")
        return f"{name} ({fmt})" if fmt else name
    return "any"


def _literal(value: Any) -> str:
    """Python spelling for defaults and enum members: 'text', None, True, 3, [1, 2]."""
    if isinstance(value, (str, bool)) or value is None:
        return repr(value)
    return orjson.dumps(value).decode()


# ---- key=value arguments -------------------------------------------------------------------


def parse_pairs(pairs: tuple[str, ...] | list[str], schema: dict[str, Any]) -> dict[str, Any]:
    """`key=value` arguments. A value is JSON (`n=3`, `tags=["a"]`, `ok=true`) unless the
    parameter takes only strings, or it is not valid JSON: then it is the text as given."""
    properties = schema.get("properties") or {}
    arguments: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"expected KEY=VALUE, got {pair!r}")
        if _only_strings(properties.get(key)):
            arguments[key] = value
            continue
        try:
            arguments[key] = orjson.loads(value)
        except orjson.JSONDecodeError:
            arguments[key] = value
    return arguments


def _only_strings(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    if "anyOf" in schema:
        kinds = [option.get("type") for option in schema["anyOf"] if isinstance(option, dict)]
        kinds = [kind for kind in kinds if kind != "null"]  # str | None: text is text
        return bool(kinds) and all(kind == "string" for kind in kinds)
    enum = schema.get("enum")
    if isinstance(enum, list):
        return all(isinstance(value, str) for value in enum)
    return schema.get("type") == "string"


# ---- progress and logs while a call runs ---------------------------------------------------


class CallDisplay:
    """Shows a call's notifications on stderr: a progress bar on a terminal, lines otherwise."""

    def __init__(self, tool: str, stream: IO[str] | None = None) -> None:
        self.tool = tool
        self.stream = stream or sys.stderr
        self.terminal = self.stream.isatty()
        self.progress: Any = None
        self.task: Any = None

    def __call__(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        params = message.get("params") or {}
        if method == "notifications/progress":
            self.on_progress(params.get("progress", 0), params.get("total"), params.get("message") or "")
        elif method == "notifications/message":
            logger = f" {params['logger']}" if params.get("logger") else ""
            data = params.get("data")
            text = data if isinstance(data, str) else orjson.dumps(data).decode()
            self.write(f"[{params.get('level', 'info')}{logger}] {text}")

    def on_progress(self, done: float, total: float | None, note: str) -> None:
        if not self.terminal:
            amount = f"{_number(done)}/{_number(total)}" if total else f"{_number(done)}"
            self.write(f"progress {amount}" + (f": {note}" if note else ""))
            return
        if self.progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            console = Console(file=self.stream)
            # Refreshed on each update, not by rich's own thread: nothing runs unowned.
            columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
            self.progress = Progress(
                *columns, TextColumn("{task.fields[note]}"), console=console, auto_refresh=False
            )
            self.progress.start()
            self.task = self.progress.add_task(self.tool, total=total, note=note)
        self.progress.update(self.task, completed=done, total=total, note=note)
        self.progress.refresh()

    def write(self, text: str) -> None:
        if self.progress is not None:
            self.progress.console.print(text, markup=False, highlight=False)
            self.progress.refresh()
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def _number(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
