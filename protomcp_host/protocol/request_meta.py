"""The 2026-07-28 request envelope, sans-IO: the ``_meta`` keys every modern request carries
(its protocol version, the client's capabilities and info, its log level) and the ladder that
reads them, the stamps of results, listen streams, and the shapes of the input round trip.
modern.py serves the requests; transports read the era of a message from here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.handshake import LOG_LEVELS, SUPPORTED_VERSIONS
from protomcp_host.protocol.records import ToolAnswer

MODERN_VERSION = "2026-07-28"
MODERN_VERSIONS = (MODERN_VERSION,)
STATEFUL_VERSIONS = tuple(reversed(SUPPORTED_VERSIONS))  # newest first

PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022

CACHE_TTL_MS = 0  # lists change with reloads and tool-list control: clients re-ask each time

_MODERN_MARK = PROTOCOL_VERSION.encode()


def supported_versions(serve_modern: bool) -> list[str]:
    """The one list server/discover and -32022 name: the modern revision (only once every
    modern request shape is served), then the handshake revisions, newest first."""
    return [*MODERN_VERSIONS, *STATEFUL_VERSIONS] if serve_modern else list(STATEFUL_VERSIONS)


def is_modern(params: Any) -> bool:
    """Whether a request's params carry the modern per-request envelope."""
    if not isinstance(params, dict):
        return False
    meta = params.get("_meta")
    return isinstance(meta, dict) and PROTOCOL_VERSION in meta


def maybe_modern(line: bytes) -> bool:
    """A cheap test on the raw line: False means certainly not modern (the hot path)."""
    return _MODERN_MARK in line


@dataclass(slots=True)
class RequestEnvelope:
    """What one modern request declared in its _meta."""

    version: str
    capabilities: dict[str, Any]
    client_info: dict[str, Any] | None
    log_level: str | None


def read_envelope(request: rpc.Request, serve_modern: bool) -> RequestEnvelope | tuple[int, str, Any]:
    """The request's envelope, or the error (code, message, data) the ladder answers."""
    meta = request.params.get("_meta")
    if type(meta) is dict and serve_modern:  # (the common case first: a valid envelope)
        version = meta.get(PROTOCOL_VERSION)
        capabilities = meta.get(CLIENT_CAPABILITIES)
        level = meta.get(LOG_LEVEL)
        if (
            type(version) is str
            and version in MODERN_VERSIONS
            and type(capabilities) is dict
            and (level is None or level in LOG_LEVELS)
        ):
            info = meta.get(CLIENT_INFO)
            return RequestEnvelope(version, capabilities, info if isinstance(info, dict) else None, level)
    missing = []
    if not isinstance(meta, dict):
        meta = {}
        missing = [PROTOCOL_VERSION, CLIENT_CAPABILITIES]
    else:
        missing = [key for key in (PROTOCOL_VERSION, CLIENT_CAPABILITIES) if key not in meta]
    if missing:
        return (
            rpc.INVALID_PARAMS,
            f"Invalid params: params._meta is missing the required key(s): {', '.join(missing)}",
            None,
        )
    version = meta[PROTOCOL_VERSION]
    capabilities = meta[CLIENT_CAPABILITIES]
    if not isinstance(version, str):
        return (rpc.INVALID_PARAMS, f"Invalid params: {PROTOCOL_VERSION} must be a string", None)
    if not isinstance(capabilities, dict):
        return (rpc.INVALID_PARAMS, f"Invalid params: {CLIENT_CAPABILITIES} must be an object", None)
    if not serve_modern or version not in MODERN_VERSIONS:
        return (
            UNSUPPORTED_VERSION,
            "Unsupported protocol version",
            {"supported": supported_versions(serve_modern), "requested": version},
        )
    info = meta.get(CLIENT_INFO)
    level = meta.get(LOG_LEVEL)
    if level is not None and level not in LOG_LEVELS:
        return (
            rpc.INVALID_PARAMS,
            f"Invalid params: {LOG_LEVEL} must be one of {', '.join(LOG_LEVELS)}",
            None,
        )
    return RequestEnvelope(version, capabilities, info if isinstance(info, dict) else None, level)


def stamp(result: Sequence[bytes], extra: bytes) -> list[bytes]:
    """A JSON object given in pieces, with `extra` (``"key":value,...``) added at its end."""
    pieces = list(result)
    if len(pieces) == 1 and pieces[0] == b"{}":
        return [b"{" + extra + b"}"]
    last = pieces[-1]
    pieces[-1] = last[: last.rindex(b"}")] + b"," + extra + b"}"
    return pieces


LIST_FLAGS = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}


@dataclass(slots=True)
class Listen:
    """One subscriptions/listen request in progress: what it asked for and was granted."""

    id: bytes
    honored: dict[str, Any]

    @property
    def subscription_id(self) -> Any:
        return orjson.loads(self.id)

    def tagged(self, method: str, params: dict[str, Any] | None = None) -> bytes:
        """A notification for this stream, carrying its subscription id."""
        return rpc.notification(method, {"_meta": {SUBSCRIPTION_ID: self.subscription_id}, **(params or {})})

    def closing(self) -> bytes:
        """The result that ends the stream gracefully."""
        return rpc.result(
            self.id, {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: self.subscription_id}}
        )


def valid_answer(method: str, answer: Any) -> bool:
    """Whether a client's input response has the shape its request's result needs."""
    if not isinstance(answer, dict):
        return False
    if method == "elicitation/create":
        content = answer.get("content")
        return answer.get("action") in ("accept", "decline", "cancel") and (
            content is None or isinstance(content, dict)
        )
    if method == "sampling/createMessage":
        return isinstance(answer.get("content"), (dict, list))
    return isinstance(answer.get("roots"), list)  # roots/list


MISSING_CAPABILITY_CODE = b"missing_client_capability:"


@dataclass(slots=True)
class Retry:
    """A retried request's inputResponses (answers by key) and requestState."""

    responses: dict[str, Any]
    state: str | None


def _retry(params: dict[str, Any]) -> Retry | str | None:
    """The retry fields of an input-required round trip; a str says what is wrong with them."""
    if "inputResponses" not in params and "requestState" not in params:
        return None
    responses = params.get("inputResponses", {})
    state = params.get("requestState")
    if not isinstance(responses, dict):
        return 'Invalid params: "inputResponses" must be an object'
    if state is not None and not isinstance(state, str):
        return 'Invalid params: "requestState" must be a string'
    return Retry(responses, state)


def missing_capability(answer: ToolAnswer) -> dict[str, Any] | None:
    """The capabilities object a tool's escaped missing-capability error names (None: the
    answer is not one)."""
    if not (answer.is_error and answer.meta and MISSING_CAPABILITY_CODE in answer.meta):
        return None
    return _required_capability(answer.meta)


def _required_capability(meta: bytes) -> dict[str, Any] | None:
    """The capabilities object a tool's escaped missing-capability error names."""
    try:
        code = orjson.loads(meta)["protomcp/error"]["code"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    if not isinstance(code, str) or ":" not in code:
        return None
    name = code.split(":", 1)[1]
    capability, _, mode = name.partition(".")
    if capability not in ("sampling", "elicitation", "roots"):
        return None
    return {capability: {mode: {}} if mode else {}}
