"""Resources, resource templates, prompts and completions in the MCP core, sans-IO.

Merged lists like the tool catalog (each tool file replaces its own entries; a clash between
files is an error naming both), the session's request handlers for them, and the events that
hand a read, a prompt or a completion to the tool process that owns it (``Forward``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.events import Batch, Send
from protomcp_host.protocol.listing import InvalidCursor, Listing
from protomcp_host.protocol.scopes import insufficient, lacking, restricts, seen_by
from protomcp_host.protocol.skills import SKILLS_EXTENSION, SKILLS_OWNER, Skills
from protomcp_sdk.wire.uritemplate import TemplateError, UriTemplate

UI_EXTENSION = "io.modelcontextprotocol/ui"  # MCP Apps (ext-apps spec 2026-01-26)

RESOURCE_NOT_FOUND = -32002


@dataclass(slots=True)
class Entry:
    """One resource, template or prompt: its key (URI, URI template or name), the tool file
    that owns it and its MCP object."""

    key: str
    owner: str
    mcp: dict[str, Any]
    template: UriTemplate | None = None  # resource templates: to match URIs
    required: tuple[str, ...] = ()  # prompts: the arguments that must be given
    scopes: frozenset[str] = frozenset()  # OAuth scopes a caller's token must grant (scopes.py)


@dataclass(slots=True)
class FileFeatures:
    """What one tool file offers besides tools (from its handshake)."""

    resources: list[Entry] = field(default_factory=list)
    templates: list[Entry] = field(default_factory=list)
    prompts: list[Entry] = field(default_factory=list)
    completions: bool = False


class FeatureCatalog:
    """The merged resources, templates and prompts of every tool file behind one host."""

    def __init__(self, page_size: int) -> None:
        self.resources: Listing[Entry] = Listing("resource", page_size)
        self.templates: Listing[Entry] = Listing("resource template", page_size)
        self.prompts: Listing[Entry] = Listing("prompt", page_size)
        self.completing: set[str] = set()  # owners that define completion functions
        self.completions_expected = False  # a file not loaded yet uses @completion (read statically)
        self.skills: Skills | None = None  # --skills: served by the host itself (protocol/skills.py)

    def check(self, owner: str, offered: FileFeatures) -> None:
        self.resources.check(owner, offered.resources)
        self.templates.check(owner, offered.templates)
        self.prompts.check(owner, offered.prompts)

    def replace(self, owner: str, offered: FileFeatures) -> list[str]:
        """Swap in a file's entries (call check first); the list_changed notifications due
        (one per kind changed)."""
        changed = self.resources.replace(owner, offered.resources, check=False)
        changed = self.templates.replace(owner, offered.templates, check=False) or changed
        notes = ["notifications/resources/list_changed"] if changed else []
        if self.prompts.replace(owner, offered.prompts, check=False):
            notes.append("notifications/prompts/list_changed")
        if offered.completions:
            self.completing.add(owner)
        else:
            self.completing.discard(owner)
        return notes

    def serve_skills(self, skills: Skills) -> list[str]:
        """Serve `skills` (in place of those served before): each SKILL.md is listed as a
        resource; the list_changed notifications due. NameClash if a tool file has one's URI."""
        listed = [Entry(skill.key, SKILLS_OWNER, skill.resource()) for skill in skills.ordered()]
        changed = self.resources.replace(SKILLS_OWNER, listed)  # (NameClash: nothing changed)
        self.skills = skills
        return ["notifications/resources/list_changed"] if changed else []

    def resource_owner(self, uri: str) -> Entry | None:
        """The resource, or the first template, that `uri` names."""
        entry = self.resources.get(uri)
        if entry is not None:
            return entry
        for template in self.templates.entries.values():
            if template.template is not None and template.template.match(uri) is not None:
                return template
        return None


def template_entry(
    uri_template: str, owner: str, mcp: dict[str, Any], scopes: frozenset[str] = frozenset()
) -> Entry | None:
    """A template entry; None for a template the host cannot read (it is left out)."""
    try:
        return Entry(uri_template, owner, mcp, template=UriTemplate(uri_template), scopes=scopes)
    except TemplateError:
        return None


# -- the session's side --------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class Forward:
    """A resources/read, prompts/get or completion/complete for the tool process `owner`,
    from request to answer. `params` is what that process needs (MCP shapes)."""

    id: bytes
    method: str
    owner: str
    params: dict[str, Any]
    batch: Batch | None = None
    cancel: Callable[[], None] | None = None  # set by the host while the process works on it
    retry: Any = None  # 2026-07-28: (inputResponses, requestState) of a retried request


@dataclass(slots=True)
class CancelForward:
    """The client cancelled a forwarded request: it gets no answer."""

    forward: Forward


@dataclass(slots=True)
class RootsChanged:
    """The client's roots changed (notifications/roots/list_changed): tool processes hear of it."""


@dataclass(slots=True, eq=False)
class ClientRequest:
    """A request this server sent to the client (sampling, elicitation, roots)."""

    id: int
    method: str
    related: bytes | None  # the client request (tool call) it was made for
    on_answer: Callable[[dict[str, Any] | None, str | None], None]  # (result, error)
    timer: Any = None  # its timeout (host side)


@dataclass(slots=True)
class ClientAnswer:
    """The client answered one of our requests: an event for the router."""

    request: ClientRequest
    result: dict[str, Any] | None
    error: str | None


CLIENT_CAPABILITY = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}


class Peer(Protocol):
    """What the feature handlers read of their session: whether the client finished
    initializing and what it declared it can do."""

    @property
    def initialized(self) -> bool: ...

    @property
    def client_capabilities(self) -> dict[str, Any]: ...

    @property
    def auth(self) -> dict[str, Any] | None:
        """The caller's verified token claims (HTTP with OAuth), which scoped entries need."""
        ...


class ClientRequestBook:
    """The requests a session sent to its client (sampling, elicitation, roots), until each is
    answered, dropped or timed out; and whether the client declared what a request needs."""

    def __init__(self, session: Peer) -> None:
        self.session = session
        self.client_requests: dict[int, ClientRequest] = {}
        self._next_id = 0

    def missing_capability(self, method: str, params: dict[str, Any]) -> str | None:
        """Why the client cannot take this request (it did not declare the capability), or None."""
        capability = CLIENT_CAPABILITY[method]
        declared = self.session.client_capabilities.get(capability)
        if not isinstance(declared, dict):
            return f"the client does not support {capability} (it did not declare the capability)"
        if method == "elicitation/create":
            mode = params.get("mode", "form")
            # An empty elicitation capability means form mode only (2025-11-25).
            modes = {m for m in ("form", "url") if m in declared} or {"form"}
            if mode not in modes:
                return f"the client does not support {mode}-mode elicitation"
        return None

    def request_client(
        self,
        method: str,
        params: dict[str, Any],
        related: bytes | None,
        on_answer: Callable[[dict[str, Any] | None, str | None], None],
    ) -> tuple[ClientRequest, bytes]:
        """A request to the client: its record (kept until answered or dropped) and its bytes."""
        self._next_id += 1
        pending = ClientRequest(self._next_id, method, related, on_answer)
        self.client_requests[pending.id] = pending
        return pending, rpc.request(pending.id, method, params)

    def drop_client_request(self, pending: ClientRequest) -> bytes | None:
        """Give up on a request (timeout, cancelled call): the notifications/cancelled to send."""
        if self.client_requests.pop(pending.id, None) is None:
            return None
        return rpc.notification(
            "notifications/cancelled",
            {"requestId": pending.id, "reason": "the tool call no longer waits for it"},
        )

    def client_answer(self, response: rpc.Response) -> ClientAnswer | None:
        try:
            request_id = orjson.loads(response.id)
        except orjson.JSONDecodeError:
            return None
        pending = self.client_requests.pop(request_id, None) if isinstance(request_id, int) else None
        if pending is None:
            return None
        payload = response.payload
        if "error" in payload:
            error = payload["error"]
            message = error.get("message") if isinstance(error, dict) else None
            return ClientAnswer(pending, None, str(message or error))
        result = payload.get("result")
        if not isinstance(result, dict):
            return ClientAnswer(pending, None, "the client's answer is not an object")
        return ClientAnswer(pending, result, None)


FeatureEvent = Send | Forward
Handler = Callable[[rpc.Request, Batch | None], FeatureEvent]


class FeatureEra(Protocol):
    """What the 2026-07-28 era does differently with resources and prompts (modern.py): an
    unknown resource is -32602, answers from tool processes are stamped, and notifications go
    to the listen streams that asked for them."""

    not_found: int

    def answered(self, forward: Forward, result: tuple[bytes, ...]) -> Sequence[bytes]:
        """The tool process's result, as the client gets it."""

    def ended(self, forward: Forward) -> None:
        """The forwarded request is over (answered or failed)."""

    def list_changed(self, notes: list[str]) -> list[bytes]: ...

    def updates(self, uri: str) -> list[bytes]: ...


class FeatureMethods:
    """The session's handlers for resources/*, prompts/* and completion/complete, and its
    server→client requests. Lives next to a Session (its `session`, read through `Peer`);
    its handlers are in the method registry (methods.py). `era`: the 2026-07-28 era's
    differences (None: 2025-11-25's rules)."""

    def __init__(
        self, session: Peer, features: FeatureCatalog, *, offered: bool = True, era: FeatureEra | None = None
    ) -> None:
        self.session = session
        self.features = features
        self.offered = offered  # resources and prompts are served (capabilities declared)
        self.era = era
        # the error code for an unknown resource
        self.not_found = era.not_found if era is not None else RESOURCE_NOT_FOUND
        self.forwarded: dict[bytes, Forward] = {}
        self.subscriptions: set[str] = set()
        self.client = ClientRequestBook(session)  # its requests to the client, until answered

    def table(self) -> dict[str, Handler]:
        skills: dict[str, Handler] = {}
        if self.features.skills is not None:
            skills = {
                "skills/list": self._skills_list,
                "skills/get": self._skill_get,
                "resources/directory/read": self._directory_read,
            }
        return {
            **skills,
            "resources/list": self._resources_list,
            "resources/templates/list": self._templates_list,
            "resources/read": self._read,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
            "prompts/list": self._prompts_list,
            "prompts/get": self._get_prompt,
            "completion/complete": self._complete,
        }

    def capabilities(self) -> dict[str, Any]:
        if not self.offered:
            return {}
        declared: dict[str, Any] = {
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
        }
        if self.features.completing or self.features.completions_expected:
            declared["completions"] = {}
        # MCP Apps: the host serves what a tool file declares of them (tools' _meta.ui, ui://
        # resources); declared whenever resources are served, since initialize is answered
        # before the tool files load and a reload may add an app after it
        declared["extensions"] = {UI_EXTENSION: {}}
        if self.features.skills is not None:
            declared["extensions"][SKILLS_EXTENSION] = self.features.skills.capability()
        return declared

    # -- skills (their handlers are in the table only with --skills; a reload replaces them) --
    @property
    def _skills(self) -> Skills:
        assert self.features.skills is not None
        return self.features.skills

    def _skills_list(self, request: rpc.Request, batch: Batch | None) -> FeatureEvent:
        return self._skills.list_skills(request, batch)

    def _skill_get(self, request: rpc.Request, batch: Batch | None) -> FeatureEvent:
        return self._skills.get_skill(request, batch)

    def _directory_read(self, request: rpc.Request, batch: Batch | None) -> FeatureEvent:
        return self._skills.read_directory(request, batch)

    # -- lists ---------------------------------------------------------------------------
    def _page(self, request: rpc.Request, listing: Listing[Entry], result_key: str) -> FeatureEvent:
        cursor = request.params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            return Send(
                rpc.error(request.id, rpc.INVALID_PARAMS, 'Invalid params: "cursor" must be a string')
            )
        try:
            auth = self.session.auth
            if restricts(listing.ordered(), auth):  # (a listing of its own: not cached)
                items = seen_by(listing.ordered(), auth)
                return Send(rpc.raw_result(request.id, listing.page(cursor, result_key, _mcp, items=items)))
            return Send(rpc.raw_result(request.id, listing.page(cursor, result_key, _mcp, cache=result_key)))
        except InvalidCursor as exc:
            return Send(rpc.error(request.id, rpc.INVALID_PARAMS, str(exc)))

    def _resources_list(self, request: rpc.Request, _: Batch | None) -> FeatureEvent:
        return self._page(request, self.features.resources, "resources")

    def _templates_list(self, request: rpc.Request, _: Batch | None) -> FeatureEvent:
        return self._page(request, self.features.templates, "resourceTemplates")

    def _prompts_list(self, request: rpc.Request, _: Batch | None) -> FeatureEvent:
        return self._page(request, self.features.prompts, "prompts")

    # -- forwarded requests --------------------------------------------------------------
    def _read(self, request: rpc.Request, batch: Batch | None) -> FeatureEvent:
        uri = request.params.get("uri")
        if not isinstance(uri, str):
            return _invalid(request, '"uri" must be a string')
        skills = self.features.skills
        read = skills.read(uri) if skills is not None else None
        if read is not None:  # a skill's file: the host has it
            return Send(rpc.result(request.id, read))
        entry = self.features.resource_owner(uri)
        if entry is None:
            return Send(rpc.error(request.id, self.not_found, f"Resource not found: {uri}", {"uri": uri}))
        missing = lacking(entry.scopes, self.session.auth)
        if missing:  # (over HTTP the transport answered 403 before)
            return _invalid(request, insufficient(f"Resource {uri}", missing), plain=True)
        return self._forward(request, entry.owner, {"uri": uri}, batch)

    def _get_prompt(self, request: rpc.Request, batch: Batch | None) -> FeatureEvent:
        name = request.params.get("name")
        if not isinstance(name, str):
            return _invalid(request, '"name" must be a string')
        arguments = request.params.get("arguments") or {}
        if not isinstance(arguments, dict):
            return _invalid(request, '"arguments" must be an object')
        entry = self.features.prompts.get(name)
        if entry is None:
            return _invalid(request, f"Unknown prompt: {name}", plain=True)
        lacks = lacking(entry.scopes, self.session.auth)
        if lacks:  # (over HTTP the transport answered 403 before)
            return _invalid(request, insufficient(f"Prompt '{name}'", lacks), plain=True)
        missing = [arg for arg in entry.required if arg not in arguments]
        if missing:
            return _invalid(
                request,
                f"Missing required argument{'s' if len(missing) > 1 else ''} for prompt "
                f"'{name}': {', '.join(missing)}",
                plain=True,
            )
        return self._forward(request, entry.owner, {"name": name, "arguments": arguments}, batch)

    def _complete(self, request: rpc.Request, batch: Batch | None) -> FeatureEvent:
        ref = request.params.get("ref")
        argument = request.params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            return _invalid(request, '"ref" and "argument" must be objects')
        name, value = argument.get("name"), argument.get("value", "")
        if not isinstance(name, str) or not isinstance(value, str):
            return _invalid(request, "argument.name and argument.value must be strings")
        context = request.params.get("context") or {}
        given = context.get("arguments") if isinstance(context, dict) else None
        if ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str):
            entry = self.features.prompts.get(ref["name"])
            if entry is None:
                return _invalid(request, f"Unknown prompt: {ref['name']}", plain=True)
            target = ref["name"]
        elif ref.get("type") == "ref/resource" and isinstance(ref.get("uri"), str):
            entry = self.features.templates.get(ref["uri"]) or self.features.resources.get(ref["uri"])
            if entry is None:
                return _invalid(request, f"Unknown resource template: {ref['uri']}", plain=True)
            target = ref["uri"]
        else:
            return _invalid(
                request, 'ref must be {"type": "ref/prompt", "name"} or {"type": "ref/resource", "uri"}'
            )
        missing = lacking(entry.scopes, self.session.auth)
        if missing:  # (completing what the caller may not get would show what it holds)
            return _invalid(request, insufficient(f"Completing {target}", missing), plain=True)
        if entry.owner not in self.features.completing:
            return Send(rpc.result(request.id, {"completion": {"values": [], "total": 0, "hasMore": False}}))
        params = {
            "ref_type": ref["type"],
            "ref": target,
            "argument": name,
            "value": value,
            "context": given if isinstance(given, dict) else {},
        }
        return self._forward(request, entry.owner, params, batch)

    def _forward(
        self, request: rpc.Request, owner: str, params: dict[str, Any], batch: Batch | None
    ) -> FeatureEvent:
        if self.session.auth is not None:  # the caller's verified claims (ctx.auth, ctx.principal)
            params["auth"] = self.session.auth
        forward = Forward(request.id, request.method, owner, params, batch)
        self.forwarded[request.id] = forward
        return forward

    def answered(self, forward: Forward, *result: bytes) -> bytes | None:
        """The tool process answered: the response (None if the client cancelled meanwhile)."""
        if forward.id not in self.forwarded:
            return None
        if self.era is not None:
            self.era.ended(forward)
            result = tuple(self.era.answered(forward, result))
        del self.forwarded[forward.id]
        return self._finish(forward, rpc.raw_result(forward.id, *result))

    def failed(self, forward: Forward, code: int, message: str, data: Any = None) -> bytes | None:
        if self.era is not None:
            self.era.ended(forward)
        if self.forwarded.pop(forward.id, None) is None:
            return None
        return self._finish(forward, rpc.error(forward.id, code, message, data))

    def _finish(self, forward: Forward, data: bytes) -> bytes | None:
        return forward.batch.add(data) if forward.batch is not None else data

    def cancelled(self, request_id: bytes) -> Forward | None:
        """notifications/cancelled for a forwarded request: it gets no answer."""
        return self.forwarded.pop(request_id, None)

    # -- subscriptions -------------------------------------------------------------------
    def _subscribe(self, request: rpc.Request, _: Batch | None) -> FeatureEvent:
        uri = request.params.get("uri")
        if not isinstance(uri, str):
            return _invalid(request, '"uri" must be a string')
        skills = self.features.skills
        entry = self.features.resource_owner(uri)
        if entry is None and (skills is None or uri not in skills.files):
            return Send(rpc.error(request.id, self.not_found, f"Resource not found: {uri}", {"uri": uri}))
        missing = lacking(entry.scopes, self.session.auth) if entry is not None else []
        if missing:  # (its updates would tell what the caller may not read)
            return _invalid(request, insufficient(f"Resource {uri}", missing), plain=True)
        self.subscriptions.add(uri)
        return Send(rpc.result(request.id, {}))

    def _unsubscribe(self, request: rpc.Request, _: Batch | None) -> FeatureEvent:
        uri = request.params.get("uri")
        if not isinstance(uri, str):
            return _invalid(request, '"uri" must be a string')
        self.subscriptions.discard(uri)
        return Send(rpc.result(request.id, {}))

    def updated(self, uri: str) -> bytes | None:
        """notifications/resources/updated, if this session subscribed to `uri` (2025-11-25)."""
        if self.era is not None or uri not in self.subscriptions or not self.session.initialized:
            return None
        return rpc.notification("notifications/resources/updated", {"uri": uri})

    def updates(self, uri: str) -> list[bytes]:
        """The notifications a change of `uri` calls for in this session."""
        if self.era is not None:
            return self.era.updates(uri)
        message = self.updated(uri)
        return [message] if message is not None else []

    def list_changed(self, notes: list[str]) -> list[bytes]:
        if self.era is not None:
            return self.era.list_changed(notes)
        return [rpc.notification(note) for note in notes] if self.session.initialized else []


def _mcp(entry: Entry) -> dict[str, Any]:
    return entry.mcp


def _invalid(request: rpc.Request, message: str, *, plain: bool = False) -> FeatureEvent:
    return Send(rpc.error(request.id, rpc.INVALID_PARAMS, message if plain else f"Invalid params: {message}"))
