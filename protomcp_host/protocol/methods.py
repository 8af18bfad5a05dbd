"""Every MCP method the host answers, in one table: its handler and the facts about it.

A session builds its method table from here (``table``), and so do the readers of the facts:
the stdio transport (what waits for the tool files, what the in-flight bound holds back), the
HTTP transport (the routing-header parameter, the in-flight bound), tracing (the span target)
and the modern era's result stamps (cache hints, input-required round trips). Adding a method
answered in both eras is one entry here plus its handler on the session.

A handler is named by the attribute that answers it: the session's (``"_tools_call"``), its
``FeatureMethods``' (``"features._read"``) or its era's (``"era._initialize"``: what only one
era answers, on handshake.StatefulEra or modern.ModernEra). A name and not a function, so that
this table imports none of them; session.handler_table makes each era's table of functions once.
"""

from __future__ import annotations

from dataclasses import dataclass

STATEFUL = "2025-11-25"  # the handshake era (2024-11-05 to 2025-11-25)
MODERN = "2026-07-28"  # the per-request era
BOTH = frozenset({STATEFUL, MODERN})
FEATURES_PREFIX = "features."
ERA_PREFIX = "era."


@dataclass(frozen=True, slots=True)
class Method:
    handler: str  # the session's attribute that answers it ("features.x", "era.x": theirs)
    eras: frozenset[str] = BOTH
    # what the host must serve for the method to exist: "features" (resources and prompts),
    # "skills" (--skills), "tasks" (the modern tasks extension: a task store); "" always
    serves: str = ""
    before_tools: bool = False  # answered before the tool files load (the lifecycle)
    starts_calls: bool = False  # it starts tool calls: the in-flight bound holds it back
    input_required: bool = False  # 2026-07-28: may end in an InputRequiredResult (a round trip)
    cache: str = ""  # 2026-07-28 cache hints: "public", or "principal" (public unless tool-list control)
    routing: str = ""  # 2026-07-28 HTTP: the params key the Mcp-Name header carries
    span_target: str = ""  # tracing: the span attribute that names params.name


METHODS: dict[str, Method] = {
    "initialize": Method("era._initialize", frozenset({STATEFUL}), before_tools=True),
    "ping": Method("era._ping", frozenset({STATEFUL}), before_tools=True),
    "logging/setLevel": Method("era._set_level", frozenset({STATEFUL}), before_tools=True),
    "server/discover": Method("era._discover", frozenset({MODERN}), before_tools=True, cache="public"),
    "tools/list": Method("_tools_list", cache="principal"),
    "tools/call": Method(
        "_tools_call",
        starts_calls=True,
        input_required=True,
        routing="name",
        span_target="gen_ai.tool.name",
    ),
    "subscriptions/listen": Method("era._listen", frozenset({MODERN})),
    "tasks/get": Method("era._task_get", serves="tasks", routing="taskId"),
    "tasks/result": Method("era._task_result", frozenset({STATEFUL})),
    "tasks/list": Method("era._task_list", frozenset({STATEFUL})),
    "tasks/update": Method("era._task_update", frozenset({MODERN}), serves="tasks", routing="taskId"),
    "tasks/cancel": Method("era._task_cancel", serves="tasks", routing="taskId"),
    "resources/list": Method("features._resources_list", serves="features", cache="public"),
    "resources/templates/list": Method("features._templates_list", serves="features", cache="public"),
    "resources/read": Method(
        "features._read", serves="features", cache="public", input_required=True, routing="uri"
    ),
    "resources/subscribe": Method("features._subscribe", frozenset({STATEFUL}), serves="features"),
    "resources/unsubscribe": Method("features._unsubscribe", frozenset({STATEFUL}), serves="features"),
    "prompts/list": Method("features._prompts_list", serves="features", cache="public"),
    "prompts/get": Method(
        "features._get_prompt",
        serves="features",
        input_required=True,
        routing="name",
        span_target="gen_ai.prompt.name",
    ),
    "completion/complete": Method("features._complete", serves="features"),
    "skills/list": Method("features._skills_list", serves="skills", cache="public"),
    "skills/get": Method("features._skill_get", serves="skills", cache="public"),
    "resources/directory/read": Method("features._directory_read", serves="skills"),
}


def served(era: str, offered: set[str]) -> dict[str, Method]:
    """The methods an era's session answers when the host serves `offered` (of "features",
    "skills", "tasks")."""
    return {
        name: method
        for name, method in METHODS.items()
        if era in method.eras and (not method.serves or method.serves in offered)
    }


def starts_calls(method: str) -> bool:
    """Whether `method` starts tool calls (the in-flight bound holds it back)."""
    known = METHODS.get(method)
    return known is not None and known.starts_calls
