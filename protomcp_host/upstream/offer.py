"""What an upstream offers, read with the mcp client and turned into what a tool process would
send: its tools and prompts renamed `NAME_<name>` (the spec's namespace), its resources and
templates as they are, and which served name is which of the upstream's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from protomcp_host.processes.events import Loaded
from protomcp_host.upstream.spec import UpstreamSpec
from protomcp_sdk.wire import envelope_pb2 as pb


@dataclass(frozen=True, slots=True)
class Names:
    """Served name -> the upstream's own, for its tools and its prompts."""

    tools: dict[str, str] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)


async def read_offer(session: Any, spec: UpstreamSpec) -> tuple[Loaded, Names]:
    """Every page of the upstream's lists (those its capabilities say it has)."""
    caps = session.server_capabilities
    namespace = spec.namespace
    tools: list[pb.ToolDefinition] = []
    names = Names()
    if caps is None or caps.tools is not None:
        for tool in await _all(session.list_tools, "tools"):
            definition = tool_definition(dump(tool), namespace, spec.name)
            names.tools[definition.name] = tool.name
            tools.append(definition)
    resources = pb.ResourceListResponse()
    templates = pb.ResourceTemplateListResponse()
    if caps is not None and caps.resources is not None:
        for resource in await _all(session.list_resources, "resources"):
            resources.resources.append(_resource(dump(resource)))
        for template in await _all(session.list_resource_templates, "resource_templates"):
            templates.templates.append(_template(dump(template)))
    prompts = pb.PromptListResponse()
    if caps is not None and caps.prompts is not None:
        for prompt in await _all(session.list_prompts, "prompts"):
            d = dump(prompt)
            served = _prompt(d, namespace + d["name"])
            names.prompts[served.name] = d["name"]
            prompts.prompts.append(served)
    completions = caps is not None and caps.completions is not None
    return Loaded(tools, [], resources, templates, prompts, completions), names


def tool_definition(tool: dict[str, Any], namespace: str, tag: str) -> pb.ToolDefinition:
    """An upstream's MCP Tool as the Envelope definition a tool process would send. Tags (for
    --include-tag/--exclude-tag): `upstream`, the upstream's name, and any the tool declares in
    `_meta` (`tags`, or FastMCP's `_fastmcp.tags`)."""
    meta = tool.get("_meta") or {}
    tags = {"upstream", tag}
    for found in (meta.get("tags"), (meta.get("_fastmcp") or {}).get("tags")):
        if isinstance(found, list):
            tags.update(str(t) for t in found)
    definition = pb.ToolDefinition(
        name=namespace + tool["name"],
        description=tool.get("description") or "",
        input_schema_json=orjson.dumps(tool.get("inputSchema") or {"type": "object"}).decode(),
        title=tool.get("title") or "",
        annotations_json=as_json(tool.get("annotations")),
        meta_json=as_json(tool.get("_meta")),  # passed on as they are (Claude Code reads some keys)
        icons_json=as_json(tool.get("icons")),
        tags=sorted(tags),
        task_support_mode="forbidden",  # tasks are not forwarded
    )
    if tool.get("outputSchema"):
        definition.output_schema_json = orjson.dumps(tool["outputSchema"]).decode()
    return definition


def _resource(d: dict[str, Any]) -> pb.ResourceDefinition:
    return pb.ResourceDefinition(
        uri=d["uri"],
        name=d.get("name", ""),
        title=d.get("title", ""),
        description=d.get("description", ""),
        mime_type=d.get("mimeType", ""),
        size=d.get("size") or 0,
        annotations_json=as_json(d.get("annotations")),
    )


def _template(d: dict[str, Any]) -> pb.ResourceTemplateDefinition:
    return pb.ResourceTemplateDefinition(
        uri_template=d["uriTemplate"],
        name=d.get("name", ""),
        title=d.get("title", ""),
        description=d.get("description", ""),
        mime_type=d.get("mimeType", ""),
        annotations_json=as_json(d.get("annotations")),
    )


def _prompt(d: dict[str, Any], served: str) -> pb.PromptDefinition:
    return pb.PromptDefinition(
        name=served,
        title=d.get("title", ""),
        description=d.get("description", ""),
        arguments=[
            pb.PromptArgument(
                name=a["name"],
                description=a.get("description", ""),
                required=bool(a.get("required")),
            )
            for a in d.get("arguments") or []
        ],
    )


def dump(model: Any) -> dict[str, Any]:
    """An mcp (pydantic) model as the JSON the upstream sent."""
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def as_json(value: Any) -> str:
    return orjson.dumps(value).decode() if value else ""


async def _all(method: Any, listed: str) -> list[Any]:
    """Every page of a list request."""
    from mcp import types

    items: list[Any] = []
    cursor = None
    for _ in range(1000):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await method(params=params)
        items.extend(getattr(page, listed))
        cursor = page.next_cursor
        if not cursor:
            break
    return items
