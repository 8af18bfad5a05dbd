"""`--discovery search`: a small fixed tools/list, the rest of the catalogue found on demand.

tools/list shows three meta-tools (find_tools, get_tool_schema, call_tool) and the tools marked
``@tool(pinned=True)``, instead of every tool. ``find_tools`` ranks the tools the session can
see (ranking.py: BM25 over names, descriptions and parameter names) and answers with a short
signature line for each; ``get_tool_schema`` gives one tool's full MCP object; ``call_tool``
becomes the same tools/call the client could have made directly (same request id, progress
token, task, argument validation, middleware, cancellation), so everything after it is the
ordinary call path.

Visibility is the session's (stateful) or the principal's (2026-07-28): a hidden, disabled or
blocked tool is never found, described or called through the meta-tools. Found tools are not
added to tools/list: the listed catalogue stays fixed, so a client's prompt cache stays valid
and no list_changed churn follows a search. A tool the session may see can still be called
directly by name.

Sans-IO: `Discovery.attach(session)` replaces the session's tools/list and tools/call
handlers; with `--discovery full` nothing here runs.
"""

from __future__ import annotations

from typing import Any

import orjson

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.catalog import Catalog, Tool, render
from protomcp_host.protocol.events import Batch, Send
from protomcp_host.protocol.ranking import Bm25Index, index_tools
from protomcp_host.protocol.session import LATEST_VERSION, Event, Handler, Session, error_result

FIND = "find_tools"
SCHEMA = "get_tool_schema"
CALL = "call_tool"
DEFAULT_LIMIT = 5
MAX_LIMIT = 20
MAX_QUERY = 1000  # characters: a query is a few words

# The meta-tools are the way in: Claude Code must not defer them behind its own tool search.
ALWAYS_LOADED = {"anthropic/alwaysLoad": True}
META_TOOLS: list[dict[str, Any]] = [
    {
        "name": FIND,
        "description": (
            "Search this server's tools by what you want to do; returns the best matches with "
            "their parameters. Call a match with call_tool."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words describing the task"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
            },
            "required": ["query"],
        },
        "_meta": ALWAYS_LOADED,
    },
    {
        "name": SCHEMA,
        "description": "The full definition (input schema) of one tool found with find_tools.",
        "inputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The tool's name"}},
            "required": ["name"],
        },
        "_meta": ALWAYS_LOADED,
    },
    {
        "name": CALL,
        "description": "Call a tool found with find_tools by its name, with its arguments.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name"},
                "arguments": {"type": "object", "description": "The tool's arguments"},
            },
            "required": ["name"],
        },
        "_meta": ALWAYS_LOADED,
    },
]
META_NAMES = frozenset(tool["name"] for tool in META_TOOLS)


class Discovery:
    """The search mode of one host: its ranking index (rebuilt on first use after the catalog
    changed) and the handlers it gives each session."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._index: Bm25Index | None = None
        self._generation = -1

    def index(self) -> Bm25Index:
        if self._index is None or self._generation != self.catalog.generation:
            self._index = index_tools([tool.mcp for tool in self.catalog.visible(lambda _: True)])
            self._generation = self.catalog.generation
        return self._index

    def attach(self, session: Session) -> None:
        """Serve this session's tools/list and tools/call in search mode."""
        direct = session.handler("tools/call")
        session.discovery = self
        session.route("tools/list", lambda request, batch: self._tools_list(session, request))
        session.route("tools/call", lambda request, batch: self._tools_call(session, direct, request, batch))

    # -- what the session lists ----------------------------------------------------------
    def listed(self, session: Session) -> dict[str, dict[str, Any]]:
        """The session's tools/list (compared before and after a change for list_changed)."""
        tools = {tool["name"]: tool for tool in META_TOOLS}
        for tool in self.catalog.visible(session.tool_list.shows):
            if tool.pinned:
                tools.setdefault(tool.name, tool.mcp)
        return tools

    def _tools_list(self, session: Session, request: rpc.Request) -> Event:
        if request.params.get("cursor") is not None:  # one page, so no cursor was handed out
            return Send(rpc.error(request.id, rpc.INVALID_PARAMS, "Invalid params: unknown cursor"))
        version = _version(session)
        tools = [render(mcp, version) for mcp in self.listed(session).values()]
        return Send(rpc.raw_result(request.id, orjson.dumps({"tools": tools})))

    # -- the meta-tools ------------------------------------------------------------------
    def _tools_call(
        self, session: Session, direct: Handler, request: rpc.Request, batch: Batch | None
    ) -> Event | list[Event] | None:
        name = request.params.get("name")
        if name not in META_NAMES:
            return direct(request, batch)  # a pinned tool, or a tool called directly by name
        arguments = request.params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return _answer(request, error_result(f"{name}: arguments must be an object"))
        if name == FIND:
            return _answer(request, self._find(session, arguments))
        if name == SCHEMA:
            return _answer(request, self._schema(session, arguments))
        target = arguments.get("name")
        if not isinstance(target, str) or not target:
            return _answer(
                request, error_result('call_tool needs "name": the tool to call (find it with find_tools)')
            )
        tool = self._for_model(session, target)
        if tool is None:
            return _answer(request, error_result(_unknown(target)))
        inner = arguments.get("arguments", {})
        if inner is None:
            inner = {}
        if not isinstance(inner, dict):
            problem = f"call_tool: the arguments for '{target}' must be an object"
            return _answer(request, error_result(problem))
        params = {**request.params, "name": target, "arguments": inner}
        return direct(rpc.Request(request.id, request.method, params), batch)

    def _seen(self, session: Session, name: str) -> Tool | None:
        """The catalog's tool of that name, if this session may see it."""
        tool = self.catalog.get(name)
        return tool if tool is not None and session.tool_list.shows(tool) else None

    def _for_model(self, session: Session, name: str) -> Tool | None:
        """The tool, if the meta-tools may hand it to the model: they act for the model, so an
        MCP App's own tool (its _meta.ui.visibility leaves "model" out) is not theirs to give;
        its app still calls it by name."""
        tool = self._seen(session, name)
        return tool if tool is not None and model_may_use(tool.mcp) else None

    def _find(self, session: Session, arguments: dict[str, Any]) -> dict[str, Any]:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return error_result('find_tools needs "query": a few words saying what you want to do')
        if len(query) > MAX_QUERY:
            return error_result(f"find_tools: the query is longer than {MAX_QUERY} characters")
        limit = arguments.get("limit", DEFAULT_LIMIT)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            return error_result(f'find_tools: "limit" must be a whole number from 1 to {MAX_LIMIT}')

        def allowed(name: str) -> bool:
            return self._for_model(session, name) is not None

        hits = self.index().search(query, limit, allowed)
        if not hits:
            return _text(f'No tool matches "{query}". Try other words.')
        plural = "" if len(hits) == 1 else "s"
        lines = [
            f'{len(hits)} tool{plural} for "{query}", best first. Call one with call_tool '
            '{"name": ..., "arguments": {...}}; get_tool_schema gives its full schema.'
        ]
        for number, hit in enumerate(hits, 1):
            tool = self.catalog.get(hit.name)
            assert tool is not None  # allowed() found it
            lines.append(f"{number}. {signature(tool.mcp)}")
        return _text("\n".join(lines))

    def _schema(self, session: Session, arguments: dict[str, Any]) -> dict[str, Any]:
        name = arguments.get("name")
        if not isinstance(name, str) or not name:
            return error_result('get_tool_schema needs "name": a tool found with find_tools')
        tool = self._for_model(session, name)
        if tool is None:
            return error_result(_unknown(name))
        return _text(orjson.dumps(render(tool.mcp, _version(session))).decode())


def model_may_use(mcp: dict[str, Any]) -> bool:
    """Whether an MCP Tool is the model's to call: MCP Apps' visibility (default: it is)."""
    meta = mcp.get("_meta")
    ui = meta.get("ui") if isinstance(meta, dict) else None
    visibility = ui.get("visibility") if isinstance(ui, dict) else None
    return not isinstance(visibility, list) or "model" in visibility


def signature(tool: dict[str, Any]) -> str:
    """One line a model can call from: name(param: type, optional?: type = default) — summary."""
    schema = tool.get("inputSchema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    required = set(schema.get("required") or ()) if isinstance(schema, dict) else set()
    params = []
    for name, prop in (properties or {}).items():
        prop = prop if isinstance(prop, dict) else {}
        kind = _kind(prop)
        if name in required:
            params.append(f"{name}: {kind}")
        elif "default" in prop:
            params.append(f"{name}?: {kind} = {orjson.dumps(prop['default']).decode()}")
        else:
            params.append(f"{name}?: {kind}")
    return f"{tool.get('name')}({', '.join(params)}) — {summary(str(tool.get('description') or ''))}"


def summary(description: str, limit: int = 160) -> str:
    """The first sentence (or line) of a description, cut at `limit` characters."""
    text = description.strip().split("\n", 1)[0]
    end = text.find(". ")
    if end != -1:
        text = text[: end + 1]
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _kind(prop: dict[str, Any]) -> str:
    if isinstance(prop.get("enum"), list):
        return "|".join(orjson.dumps(value).decode() for value in prop["enum"][:8])
    kind = prop.get("type")
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    options = prop.get("anyOf")
    if isinstance(options, list):
        return "|".join(_kind(o) for o in options if isinstance(o, dict))
    return "any"


def _unknown(name: str) -> str:
    return f"Unknown tool '{name}': use find_tools to search for the tool you need"


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def _answer(request: rpc.Request, result: dict[str, Any]) -> Send:
    return Send(rpc.result(request.id, result))


def _version(session: Session) -> str:
    return session.version or LATEST_VERSION
