"""Asking the client during a call: sampling (its model), elicitation (its user) and roots
(its workspace). The Envelope requests go to the host, which asks the client session that
made the call; the tool's call stays suspended in this process until the answer comes."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import itertools
import traceback
import uuid
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from protomcp_sdk.authoring.messages import Messages, to_messages
from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.authoring.results import Audio, Image, Text, ToolError
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.jsontypes import JSONObject

DEFAULT_TIMEOUT = 300.0  # seconds: a person may have to answer
GRACE = 5.0  # the host answers at the timeout; wait a little longer for that answer


class ClientRequestError(ToolError):
    """The client could not answer (no such capability, an error, a timeout, the call ended).
    Uncaught, it fails the tool call with its message, like any ToolError."""


MISSING_CAPABILITY = "missing_client_capability"  # the code of the error a request without one raises
_KINDS = {  # frame kind -> (MCP capability, what failed, the answer's frame kind)
    "sampling_request": ("sampling", "sampling", "sampling_response"),
    "elicit_request": ("elicitation", "elicitation", "elicit_response"),
    "list_roots_request": ("roots", "listing the client's roots", "list_roots_response"),
}


def check_capability(envelope: pb.Envelope, capabilities: JSONObject) -> None:
    """Raise ClientRequestError when the client did not declare what this request needs.
    Its code names the capability, so a host can tell the client what was missing."""
    kind = envelope.WhichOneof("msg") or ""
    capability, what, _ = _KINDS[kind]
    declared = capabilities.get(capability)
    problem = ""
    if not isinstance(declared, dict):
        problem = f"the client does not support {capability} (it did not declare the capability)"
    elif kind == "elicit_request":
        mode = orjson.loads(envelope.elicit_request.params_json).get("mode", "form")
        modes = {m for m in ("form", "url") if m in declared} or {"form"}
        if mode not in modes:
            problem = f"the client does not support {mode}-mode elicitation"
            capability = f"elicitation.{mode}"
    if problem:
        raise ClientRequestError(f"{what} failed: {problem}", code=f"{MISSING_CAPABILITY}:{capability}")


def known_answer(envelope: pb.Envelope, key: str, answers_json: str) -> pb.Envelope | None:
    """The answer frame for a request whose answer the call already knows (a re-run of a
    2026-07-28 request retried with its answers), or None."""
    if not answers_json:
        return None
    result = orjson.loads(answers_json).get(key)
    if not isinstance(result, dict):
        return None
    reply_kind = _KINDS[envelope.WhichOneof("msg") or ""][2]
    if reply_kind == "list_roots_response":
        roots = result.get("roots")
        return pb.Envelope(
            list_roots_response=pb.ListRootsResponse(roots_json=orjson.dumps(roots or []).decode())
        )
    result_json = orjson.dumps(result).decode()
    if reply_kind == "sampling_response":
        return pb.Envelope(sampling_response=pb.SamplingResponse(result_json=result_json))
    return pb.Envelope(elicit_response=pb.ElicitResponse(result_json=result_json))


class CallAsking:
    """One call's requests for the client: each one's key (stable across re-runs of the call
    in a 2026-07-28 input-required round) and the answers the call already has (each used once).
    Made on a call's first request, so a call that asks nothing pays nothing."""

    def __init__(self, answers_json: str) -> None:
        self.answers_json = answers_json
        self.asked: dict[str, int] = {}  # requests made so far, per kind
        self.answered: set[str] = set()  # keys answered from answers_json

    def key(self, kind: str, key: str | None) -> str:
        """The request's key: the one given, else ``<kind>-<n>`` in the order the call asks."""
        count = self.asked[kind] = self.asked.get(kind, 0) + 1
        return f"{kind}-{count}" if key is None else key

    def known(self, envelope: pb.Envelope, key: str) -> pb.Envelope | None:
        """The answer the call already has for this request, once; asked again under the same
        key, the host asks the client again."""
        if key in self.answered:
            return None
        answer = known_answer(envelope, key, self.answers_json)
        if answer is not None:
            self.answered.add(key)
        return answer


# -- sampling ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SamplingResult:
    """The client model's answer: ``.text`` for text, ``.content`` for any content block."""

    content: Any  # Text, Image, Audio, or the MCP dict for other kinds (or a list of them)
    model: str
    stop_reason: str | None
    role: str = "assistant"
    raw: JSONObject = dataclasses.field(default_factory=dict, repr=False)

    @property
    def text(self) -> str:
        """The text of the answer ("" when it has none)."""
        blocks = self.content if isinstance(self.content, list) else [self.content]
        return "".join(block.text for block in blocks if isinstance(block, Text))


def sampling_request(
    messages: Messages,
    *,
    max_tokens: int,
    system_prompt: str | None,
    temperature: float | None,
    stop_sequences: list[str] | None,
    model_preferences: JSONObject | None,
    include_context: str | None,
    metadata: JSONObject | None,
    timeout: float,
) -> pb.Envelope:
    params: JSONObject = {"messages": to_messages(messages, "ctx.sample"), "maxTokens": int(max_tokens)}
    optional = {
        "systemPrompt": system_prompt,
        "temperature": temperature,
        "stopSequences": stop_sequences,
        "modelPreferences": model_preferences,
        "includeContext": include_context,
        "metadata": metadata,
    }
    params.update({key: value for key, value in optional.items() if value is not None})
    request = pb.SamplingRequest(params_json=orjson.dumps(params).decode(), timeout=timeout)
    return pb.Envelope(sampling_request=request)


def sampling_result(reply: pb.Envelope) -> SamplingResult:
    response = reply.sampling_response
    if response.is_error:
        raise ClientRequestError(f"sampling failed: {response.error}")
    result = orjson.loads(response.result_json)
    content = result.get("content")
    blocks = [_block(c) for c in content] if isinstance(content, list) else _block(content)
    model = str(result.get("model", ""))
    return SamplingResult(blocks, model, result.get("stopReason"), result.get("role", "assistant"), result)


def _block(content: Any) -> Any:
    if not isinstance(content, dict):
        return content
    kind = content.get("type")
    if kind == "text":
        return Text(str(content.get("text", "")))
    if kind in ("image", "audio"):
        import base64

        cls = Image if kind == "image" else Audio
        return cls(base64.b64decode(content.get("data", "")), str(content.get("mimeType", "")))
    return content


# -- elicitation ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ElicitResult:
    """The user's answer: ``.action`` is "accept", "decline" or "cancel"; ``.data`` the form's
    content (validated into the schema's type) when accepted, else None."""

    action: Literal["accept", "decline", "cancel"]
    data: Any = None
    content: JSONObject | None = None  # the content as the client sent it


def elicit_request(
    message: str,
    schema: type | JSONObject | None,
    url: str | None,
    elicitation_id: str | None,
    timeout: float,
) -> pb.Envelope:
    if url is not None:
        if schema is not None:
            raise ValueError("ctx.elicit: give either schema= (form mode) or url= (URL mode), not both")
        params: JSONObject = {
            "mode": "url",
            "message": message,
            "url": url,
            "elicitationId": elicitation_id or uuid.uuid4().hex,
        }
    else:
        if schema is None:
            raise ValueError("ctx.elicit needs schema= (a pydantic model, a dataclass or a JSON Schema dict)")
        params = {"mode": "form", "message": message, "requestedSchema": requested_schema(schema)}
    request = pb.ElicitRequest(params_json=orjson.dumps(params).decode(), timeout=timeout)
    return pb.Envelope(elicit_request=request)


def elicit_result(reply: pb.Envelope, schema: type | JSONObject | None) -> ElicitResult:
    response = reply.elicit_response
    if response.is_error:
        raise ClientRequestError(f"elicitation failed: {response.error}")
    result = orjson.loads(response.result_json)
    action = result.get("action")
    if action not in ("accept", "decline", "cancel"):
        raise ClientRequestError(f"elicitation failed: the client answered with action {action!r}")
    content = result.get("content") if action == "accept" else None
    data = None
    if action == "accept" and schema is not None:
        content = content if isinstance(content, dict) else {}
        if isinstance(schema, dict):
            data = content
        else:
            from pydantic import TypeAdapter, ValidationError

            try:
                data = TypeAdapter(schema).validate_python(content)
            except ValidationError as exc:
                raise ClientRequestError(f"the user's answer does not fit the form: {exc}") from None
    return ElicitResult(action, data, content)


def requested_schema(schema: type | JSONObject) -> JSONObject:
    """The flat object schema MCP elicitation allows (2025-11-25: primitive properties, string
    enums with or without titles, arrays of enums; defaults kept), from a pydantic model, a
    dataclass, or a JSON Schema dict given as is."""
    if isinstance(schema, dict):
        return schema
    from pydantic import TypeAdapter

    full = TypeAdapter(schema).json_schema()
    if full.get("type") != "object":
        raise TypeError(f"an elicitation schema is a pydantic model or a dataclass, not {schema!r}")
    defs = full.get("$defs", {})
    properties = {}
    for name, prop in full.get("properties", {}).items():
        properties[name] = flat = _flat(prop, defs)
        if not _elicitable(flat):
            raise TypeError(
                f"elicitation field {name!r} of {getattr(schema, '__name__', schema)} is not a plain "
                "string, number, integer, boolean, enum or list of enum values; forms hold only those"
            )
    out: JSONObject = {"type": "object", "properties": properties}
    if full.get("required"):
        out["required"] = list(full["required"])
    return out


def _flat(prop: JSONObject, defs: JSONObject) -> JSONObject:
    """Inline $refs and drop `null` from Optional so each property is one primitive schema."""
    if "$ref" in prop:
        target = dict(defs.get(prop["$ref"].rsplit("/", 1)[-1], {}))
        target.update({k: v for k, v in prop.items() if k != "$ref"})
        prop = target
    if "anyOf" in prop and any(option.get("type") == "null" for option in prop["anyOf"]):
        options = [option for option in prop["anyOf"] if option.get("type") != "null"]
        if len(options) == 1:
            merged = _flat(options[0], defs)
            merged.update({k: v for k, v in prop.items() if k != "anyOf" and v is not None})
            prop = merged
    prop = dict(prop)
    if "enum" in prop and "type" not in prop:
        prop["type"] = "string"
    if prop.get("type") == "array" and isinstance(prop.get("items"), dict):
        prop["items"] = _flat(prop["items"], defs)
    if prop.get("default", 0) is None:
        del prop["default"]
    return prop


def _elicitable(prop: JSONObject) -> bool:
    kind = prop.get("type")
    if kind in ("string", "number", "integer", "boolean"):
        return True
    items = prop.get("items")
    return kind == "array" and isinstance(items, dict) and ("enum" in items or "anyOf" in items)


# -- roots -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Root:
    uri: str
    name: str | None = None


def roots_request(timeout: float) -> pb.Envelope:
    return pb.Envelope(list_roots_request=pb.ListRootsRequest(timeout=timeout))


_HOOK_RUNS = itertools.count(1)  # keys of running async hooks: never reused


def run_roots_hooks(loop: asyncio.AbstractEventLoop, tasks: dict[str, asyncio.Task[object]]) -> None:
    for hook in REGISTRY.roots_hooks:
        try:
            if inspect.iscoroutinefunction(hook):
                key = f"roots-hook-{next(_HOOK_RUNS)}"
                task = tasks[key] = loop.create_task(hook())
                task.add_done_callback(functools.partial(_forget, tasks, key))
            else:
                hook()
        except Exception:
            traceback.print_exc()


def _forget(tasks: dict[str, asyncio.Task[object]], key: str, _: asyncio.Task[object]) -> None:
    tasks.pop(key, None)


def roots_result(reply: pb.Envelope) -> list[Root]:
    response = reply.list_roots_response
    if response.is_error:
        raise ClientRequestError(f"listing the client's roots failed: {response.error}")
    roots = orjson.loads(response.roots_json) if response.roots_json else []
    return [Root(str(r.get("uri", "")), r.get("name")) for r in roots if isinstance(r, dict)]
