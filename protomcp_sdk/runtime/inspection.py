"""``python -m protomcp_sdk --inspect FILE``: import a tool file (without serving it or starting
its lifespan) and print one JSON report of everything it defines, for ``protomcp inspect``.

The report's shape is documented in docs/guide/cli.md (`inspect`); `REPORT_VERSION`
changes when a field changes meaning or goes away (new fields may be added).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import orjson

from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.authoring.resources import ResourceSpec
from protomcp_sdk.authoring.tools import ToolSpec
from protomcp_sdk.runtime.loading import load_tool_file
from protomcp_sdk.wire.jsontypes import JSONObject

REPORT_VERSION = 1


def tool_entry(spec: ToolSpec) -> JSONObject:
    entry: JSONObject = {"name": spec.name}
    if spec.title:
        entry["title"] = spec.title
    entry["description"] = spec.description
    entry["inputSchema"] = spec.input_schema
    if spec.output_schema:
        entry["outputSchema"] = spec.output_schema
    if spec.annotations:
        entry["annotations"] = spec.annotations
    entry.update(hidden=spec.hidden, tags=sorted(spec.tags), timeout=spec.timeout, task=spec.task)
    entry["scopes"] = sorted(spec.scopes)
    if spec.rate_limit:
        entry["rateLimit"] = spec.rate_limit
    entry["async"] = spec.is_async
    ui = (spec.meta or {}).get("ui")
    if isinstance(ui, dict):  # MCP Apps: the app it shows, who may call it
        entry["ui"] = ui
    return entry


def resource_entry(spec: ResourceSpec) -> JSONObject:
    entry: JSONObject = {
        "uriTemplate" if spec.template is not None else "uri": spec.uri,
        "name": spec.name,
    }
    optional = {
        "title": spec.title,
        "mimeType": spec.mime_type,
        "size": spec.size,
        "annotations": spec.annotations,
    }
    entry.update({key: value for key, value in optional.items() if value})
    entry["description"] = spec.description
    if spec.scopes:
        entry["scopes"] = sorted(spec.scopes)
    if spec.ui:
        entry["ui"] = spec.ui
    if spec.files:
        entry["files"] = [str(path) for path in spec.files]
    return entry


def report(file: str) -> JSONObject:
    """What `file` defines ("error" holds the traceback when it does not load)."""
    error = load_tool_file(file)
    registry = REGISTRY
    out: JSONObject = {"file": file, "ok": not error, "error": error or None}
    out["tools"] = [tool_entry(spec) for spec in registry.tools.values()]
    out["resources"] = [resource_entry(spec) for spec in registry.resources.values()]
    out["resourceTemplates"] = [resource_entry(spec) for spec in registry.templates.values()]
    out["prompts"] = [
        {
            "name": spec.name,
            **({"title": spec.title} if spec.title else {}),
            "description": spec.description,
            "arguments": [
                {"name": a.name, "description": a.description, "required": a.required} for a in spec.arguments
            ],
            **({"scopes": sorted(spec.scopes)} if spec.scopes else {}),
        }
        for spec in registry.prompts.values()
    ]
    out["completions"] = [
        {
            "ref": {"type": spec.ref_type, ("name" if spec.ref_type == "ref/prompt" else "uri"): spec.ref},
            "argument": spec.argument,
        }
        for spec in registry.completions.values()
    ]
    out["middleware"] = [
        {"name": spec.name, "priority": spec.priority} for spec in registry.middleware.values()
    ]
    out["lifespan"] = registry.lifespan.name if registry.lifespan else None
    out["rootsHooks"] = [getattr(hook, "__name__", repr(hook)) for hook in registry.roots_hooks]
    out["env"] = [
        {
            "name": spec.name,
            "description": spec.description,
            "secret": spec.secret,
            "required": spec.required,
            "default": spec.default,
        }
        for spec in registry.env.values()
    ]
    out["warnings"] = [] if error else registry.warnings(Path(file).name)
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m protomcp_sdk --inspect TOOL_FILE", file=sys.stderr)
        return 2
    stdout = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):  # what the file prints must not spoil the report
        result = report(str(Path(argv[0]).resolve()))
    stdout.buffer.write(orjson.dumps(result, default=str) + b"\n")
    stdout.flush()
    return 0
