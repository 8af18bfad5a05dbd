"""Canned answers to a tool's requests for the client (sampling, elicitation, roots), shared
by Client and RecordingContext; the forms they take are in the package's docstring."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable

from protomcp_sdk.wire.jsontypes import JSONObject

Sampling = str | Callable[[JSONObject], object]
Elicitation = JSONObject | str | Callable[[JSONObject], object]
Roots = Iterable[str | JSONObject]


async def _answer(source: object, params: JSONObject) -> object:
    value = source(params) if callable(source) else source
    return await value if inspect.isawaitable(value) else value


async def sampling_result(sampling: Sampling, params: JSONObject) -> JSONObject:
    """The CreateMessageResult for one sampling request (see the package docstring)."""
    value = await _answer(sampling, params)
    if isinstance(value, str):
        content = {"type": "text", "text": value}
        return {"role": "assistant", "content": content, "model": "protomcp-testing", "stopReason": "endTurn"}
    if isinstance(value, dict):
        return value
    raise TypeError(f"sampling= must give a str or a CreateMessageResult dict, not {value!r}")


async def elicitation_result(elicitation: Elicitation, params: JSONObject) -> JSONObject:
    """The ElicitResult for one elicitation request (see the package docstring)."""
    value = await _answer(elicitation, params)
    if value in ("decline", "cancel"):
        return {"action": value}
    if isinstance(value, dict):
        if value.get("action") in ("accept", "decline", "cancel"):
            return value
        return {"action": "accept", "content": value}
    raise TypeError(f'elicitation= must give a dict, "decline" or "cancel", not {value!r}')


def roots_result(roots: Roots) -> list[JSONObject]:
    return [{"uri": root} if isinstance(root, str) else dict(root) for root in roots]


def client_capabilities(
    sampling: Sampling | None, elicitation: Elicitation | None, roots: Roots | None
) -> JSONObject:
    """What a client with these canned answers declares (MCP ClientCapabilities)."""
    capabilities: JSONObject = {}
    if sampling is not None:
        capabilities["sampling"] = {}
    if elicitation is not None:
        capabilities["elicitation"] = {"form": {}, "url": {}}
    if roots is not None:
        capabilities["roots"] = {"listChanged": True}
    return capabilities


async def answer_request(
    method: str,
    params: JSONObject,
    sampling: Sampling | None,
    elicitation: Elicitation | None,
    roots: Roots | None,
) -> JSONObject:
    """What a client with these canned answers replies to one request of the host: a JSON-RPC
    ``result`` or ``error`` member."""
    if method == "ping":
        return {"result": {}}
    if method == "sampling/createMessage" and sampling is not None:
        return {"result": await sampling_result(sampling, params)}
    if method == "elicitation/create" and elicitation is not None:
        return {"result": await elicitation_result(elicitation, params)}
    if method == "roots/list" and roots is not None:
        return {"result": {"roots": roots_result(roots)}}
    return {"error": {"code": -32601, "message": f"Method not found: {method}"}}
