"""Step-up authorization over HTTP (MCP authorization, "Scope Challenge Handling"): a call of a
tool, a read of a resource or a get of a prompt whose scopes (``@tool(scopes=...)``) the
caller's OAuth token does not grant is answered HTTP 403 with ``WWW-Authenticate: Bearer
error="insufficient_scope", scope="..."`` naming the scopes it needs, so that the client asks
its user for them and retries with a new token. Decided from the request's body before it
reaches a session, the same way in both eras (2025-11-25 sessions, 2026-07-28 requests).

Listings are filtered by the session (protocol/scopes.py), which also refuses, as a JSON-RPC
error, what reaches it without passing here (a batch of 2025-03-26).
"""

from __future__ import annotations

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.scopes import insufficient, lacking
from protomcp_host.transports.http.asgi import Scope, Send, respond_json
from protomcp_host.transports.http.guard import Refusal, identity_of
from protomcp_host.transports.ports import Sessions


def needs(host: Sessions, message: rpc.Request) -> tuple[str, frozenset[str]] | None:
    """What the request reaches ("Tool 'save'") and the scopes it needs; None: nothing scoped."""
    params = message.params
    method = message.method
    if method == "tools/call" and isinstance(name := params.get("name"), str):
        tool = host.catalog.get(name)
        return None if tool is None or not tool.scopes else (f"Tool '{name}'", tool.scopes)
    if method == "prompts/get" and isinstance(name := params.get("name"), str):
        prompt = host.features.prompts.get(name)
        return None if prompt is None or not prompt.scopes else (f"Prompt '{name}'", prompt.scopes)
    if method == "resources/read" and isinstance(uri := params.get("uri"), str):
        resource = host.features.resource_owner(uri)
        return None if resource is None or not resource.scopes else (f"Resource {uri}", resource.scopes)
    return None


def refusal(host: Sessions, scope: Scope, message: rpc.Request) -> Refusal | None:
    """The 403 for this request, if its caller's token lacks scopes it needs (OAuth only:
    without a token's claims, scopes restrict nothing)."""
    identity = identity_of(scope)
    if identity is None or identity.claims is None or identity.step_up is None:
        return None
    needed = needs(host, message)
    if needed is None:
        return None
    what, scopes = needed
    missing = lacking(scopes, identity.claims)
    if not missing:
        return None
    return identity.step_up(sorted(scopes), insufficient(what, missing))


async def refuse(send: Send, message: rpc.Request, answer: Refusal) -> None:
    """The 403, its body a JSON-RPC error to the request that says why."""
    body = rpc.error(message.id, rpc.INVALID_PARAMS, answer.message)
    await respond_json(send, answer.status, body, answer.headers)
