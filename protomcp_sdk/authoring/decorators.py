"""The decorators a tool file uses: ``@tool``, ``@resource``, ``@prompt``, ``@completion``,
``@middleware``, ``@lifespan`` and ``@on_roots_changed``. Each inspects the function once and adds it to the
registry; the function itself is returned unchanged."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TypeVar, overload

from protomcp_sdk.authoring.apps import UI, Visibility
from protomcp_sdk.authoring.completions import completion_spec
from protomcp_sdk.authoring.direct_run import note_direct_run
from protomcp_sdk.authoring.environment import EnvSpec
from protomcp_sdk.authoring.lifespan import Lifespan, lifespan_spec
from protomcp_sdk.authoring.middleware import Middleware, middleware_spec
from protomcp_sdk.authoring.prompts import prompt_spec
from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.authoring.resources import resource_spec
from protomcp_sdk.authoring.tools import _HINTS, TaskSupport, ToolSpec
from protomcp_sdk.wire.jsontypes import JSONObject

F = TypeVar("F", bound=Callable[..., object])
M = TypeVar("M", bound=Middleware)
L = TypeVar("L", bound=Lifespan)


@overload
def tool(fn: F, /) -> F: ...


@overload
def tool(
    name_: str | None = None,
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
    pinned: bool = False,
    tags: Iterable[str] = (),
    timeout: float | None = None,
    task: TaskSupport = "forbidden",
    input_schema: JSONObject | None = None,
    input_before_task: bool = False,
    meta: JSONObject | None = None,
    icons: Iterable[JSONObject] | None = None,
    scopes: Iterable[str] | None = None,
    ui: str | None = None,
    visibility: Iterable[Visibility] | None = None,
    rate_limit: str | None = None,
) -> Callable[[F], F]: ...


def tool(
    fn: F | str | None = None,
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
    pinned: bool = False,
    tags: Iterable[str] = (),
    timeout: float | None = None,
    task: TaskSupport = "forbidden",
    input_schema: JSONObject | None = None,
    input_before_task: bool = False,
    meta: JSONObject | None = None,
    icons: Iterable[JSONObject] | None = None,
    scopes: Iterable[str] | None = None,
    ui: str | None = None,
    visibility: Iterable[Visibility] | None = None,
    rate_limit: str | None = None,
) -> F | Callable[[F], F]:
    """Register a function as an MCP tool; the function itself is returned unchanged.

    Use bare (``@tool``) or with options; ``@tool("name")`` is ``@tool(name="name")``.
    Hints left as None are not sent at all, so a client applies the MCP defaults rather
    than reading them as false. ``hidden`` tools start disabled in every session until a
    tool enables them (``ctx.enable_tools``);
    ``pinned`` tools stay in tools/list when the host runs with ``--discovery search`` (the
    others are found on demand); ``tags`` let a host expose a subset (``--include-tag`` / ``--exclude-tag``);
    ``timeout`` (seconds) overrides the host's ``--call-timeout`` for this tool.
    ``task`` sets MCP ``execution.taskSupport``: "optional" or "required" let (or make)
    clients run the tool as a task; the default "forbidden" does not.
    ``input_before_task=True`` (2026-07-28 tasks extension): the call asks its questions
    (``ctx.elicit`` & co.) through the input-required round trip of ``tools/call`` first and
    becomes a task once they are answered, instead of becoming one at once.
    ``input_schema`` replaces the schema built from the signature (the host validates
    arguments against it; the function still receives them by parameter name).
    ``meta`` is the tool's MCP ``_meta`` (e.g. ``{"anthropic/searchHint": "send sms"}``; a
    pinned tool also gets ``"anthropic/alwaysLoad": True``); ``icons`` is a list of MCP icons
    (``[{"src": "https://.../sms.png", "mimeType": "image/png"}]``).
    ``scopes`` (e.g. ``{"files:write"}``): over HTTP with OAuth, the tool is hidden from and
    refused to a caller whose access token does not grant all of them (HTTP 403
    ``insufficient_scope`` naming them, so the client can ask for them); without OAuth
    (stdio, a shared bearer token) they restrict nothing.
    ``rate_limit`` ("N/second", "N/minute" or "N/hour", e.g. "10/minute"): calls each caller
    may make in any such window, counted by the host before the call reaches this process and
    shared by every host of a ``--store``; a call over it is an error result saying when to
    retry. The host's ``--rate-limit NAME=...`` replaces it.
    """
    if isinstance(fn, str):
        if name is not None:
            raise TypeError(f"@tool({fn!r}, name={name!r}): give the name once")
        fn, name = None, fn
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
            pinned=pinned,
            tags=tags,
            timeout=timeout,
            task=task,
            input_before_task=input_before_task,
            meta=meta,
            icons=icons,
            scopes=scopes,
            ui=ui,
            visibility=visibility,
            rate_limit=rate_limit,
        )
        if input_schema is not None:
            spec.input_schema = dict(input_schema)
        REGISTRY.add(spec)
        note_direct_run(func)
        return func

    return register(fn) if fn is not None else register


def resource(
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    size: int | None = None,
    annotations: JSONObject | None = None,
    meta: JSONObject | None = None,
    icons: Iterable[JSONObject] | None = None,
    scopes: Iterable[str] | None = None,
    ui: UI | None = None,
    files: Iterable[str] | None = None,
) -> Callable[[F], F]:
    """Register a function as an MCP resource. A URI with ``{variables}`` (RFC 6570) is a
    template: each variable is a parameter of the function, converted like a tool argument.
    Return ``str`` (text), ``bytes`` (binary) or a list of contents. ``meta`` and ``icons``
    are listed as the resource's ``_meta`` and ``icons``, and ``scopes`` hide and refuse it as
    on ``@tool``. A ``ui://`` resource is an app (MCP Apps): its mime type defaults to
    ``text/html;profile=mcp-app`` and ``ui=UI(...)`` gives what its host needs to know (the
    origins it may reach, the permissions it asks for...). ``files`` (paths relative to the
    tool file's folder, e.g. ``["chart.html"]``) are files the resource serves from:
    ``protomcp pack`` puts them in the bundle."""

    def register(fn: F) -> F:
        spec = resource_spec(
            fn, uri, name, title, description, mime_type, size, annotations, meta, icons, scopes, ui, files
        )
        REGISTRY.add_resource(spec)
        note_direct_run(fn)
        return fn

    return register


@overload
def prompt(fn: F, /) -> F: ...


@overload
def prompt(
    name_: str | None = None,
    /,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    meta: JSONObject | None = None,
    icons: Iterable[JSONObject] | None = None,
    scopes: Iterable[str] | None = None,
) -> Callable[[F], F]: ...


def prompt(
    fn: F | str | None = None,
    /,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    meta: JSONObject | None = None,
    icons: Iterable[JSONObject] | None = None,
    scopes: Iterable[str] | None = None,
) -> F | Callable[[F], F]:
    """Register a function as an MCP prompt. Its parameters are the prompt's arguments
    (required unless they have a default; descriptions from ``Annotated[..., Field(...)]``).
    ``@prompt("name")`` is ``@prompt(name="name")``; ``meta``, ``icons`` and ``scopes`` as on ``@tool``."""
    if isinstance(fn, str):
        if name is not None:
            raise TypeError(f"@prompt({fn!r}, name={name!r}): give the name once")
        fn, name = None, fn

    def register(func: F) -> F:
        REGISTRY.add_prompt(prompt_spec(func, name, title, description, meta, icons, scopes))
        note_direct_run(func)
        return func

    return register(fn) if fn is not None else register


def completion(*, argument: str, prompt: str | None = None, resource: str | None = None) -> Callable[[F], F]:
    """Register ``fn(value, context) -> list[str]`` to complete `argument` of a prompt (by name)
    or of a resource template (by its URI template). `context` holds the other arguments the
    client already filled in; it may be left out of the signature."""
    if (prompt is None) == (resource is None):
        raise ValueError("@completion needs exactly one of prompt= or resource=")
    if not argument:
        raise ValueError("@completion needs argument=, the name of the argument to complete")

    def register(fn: F) -> F:
        REGISTRY.add_completion(completion_spec(fn, argument, prompt, resource))
        return fn

    return register


@overload
def middleware(fn: M, /) -> M: ...
@overload
def middleware(*, priority: int = 0, name: str | None = None) -> Callable[[M], M]: ...


def middleware(fn: M | None = None, /, *, priority: int = 0, name: str | None = None) -> M | Callable[[M], M]:
    """Register ``async def fn(call, call_next)`` as middleware for every tool call."""

    def register(func: M) -> M:
        REGISTRY.add_middleware(middleware_spec(func, priority, name))
        return func

    return register(fn) if fn is not None else register


def on_roots_changed(fn: F) -> F:
    """Register ``fn()`` (sync or async) to run when a client says its roots changed
    (``notifications/roots/list_changed``), e.g. to drop what was cached about them; the next
    ``ctx.list_roots()`` in a call sees the new roots. Sync hooks run on the event loop before
    anything that arrives after the notification, so keep them short."""
    REGISTRY.roots_hooks.append(fn)
    return fn


def lifespan(fn: L) -> L:
    """Run an async generator once per tool process: the code before its ``yield`` before the
    process serves, the code after it once its calls have drained. The yielded value is
    ``ctx.state`` in every call (see ``protomcp_sdk.authoring.lifespan``)."""
    REGISTRY.set_lifespan(lifespan_spec(fn))
    return fn


def env(name: str, description: str = "", *, secret: bool = False, default: str | None = None) -> str | None:
    """The value of the environment variable `name` (`default` when it is unset or empty: a
    bundle's settings form passes an empty value for an optional setting left blank).

    Called at module level, it also declares the variable as one this file needs (with no
    `default`, a required one), for `protomcp inspect` and `protomcp pack`. `secret=True`
    marks an API key or password.
    """
    REGISTRY.add_env(EnvSpec(name, description, secret, default))
    return os.environ.get(name) or default
