"""Who may open `/bridge`: peers with their own credential, never an MCP client's.

A peer sends one of this host's bridge tokens (`--bridge-token-env VAR`, repeatable) as
`Authorization: Bearer <token>`; its identity is the credential's name (`VAR`), never the
token. An MCP client's token (`--auth-token-env`, an OAuth access token) opens no link: a host
whose MCP endpoint is authenticated and that has no bridge token refuses every peer, saying so.
The hub then decides which agent ids that credential may claim (ids.py)."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from protomcp_host.transports.http.guard import Authenticator, Identity, Refusal

CHALLENGE = ((b"www-authenticate", b'Bearer realm="protomcp-bridge"'),)


def credential_name(var: str) -> str:
    """The identity of a peer that sent the token of `--bridge-token-env VAR`."""
    return f"bridge token {var}"


class PeerCredentials:
    """The bridge tokens, by the name of the environment variable that holds each."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        self._tokens = {name: token.encode() for name, token in tokens.items()}

    async def check(self, authorization: str | None) -> Refusal | Identity:
        scheme, _, presented = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not presented.strip():
            why = "Unauthorized: a peer sends its bridge token as 'Authorization: Bearer <token>'"
            return Refusal(401, why, CHALLENGE)
        given = presented.strip().encode()
        found = ""
        for name, token in self._tokens.items():  # every one compared: the time says nothing
            if hmac.compare_digest(given, token):
                found = name
        if not found:
            why = "Unauthorized: not a bridge token of this host (an MCP client's token opens no link)"
            return Refusal(401, why, CHALLENGE)
        return Identity(credential_name(found))


class NoPeerCredential:
    """An authenticated MCP endpoint and no bridge token: no peer may dial in."""

    async def check(self, authorization: str | None) -> Refusal | Identity:
        return Refusal(403, "Forbidden: this host takes no peers (start it with --bridge-token-env VAR)")


def bridge_authenticator(
    tokens: Mapping[str, str], client_auth: Authenticator | None
) -> Authenticator | None:
    """What /bridge checks: the bridge tokens; none while the MCP endpoint has no
    authentication either (a loopback setup); else a refusal of everyone."""
    if tokens:
        return PeerCredentials(tokens)
    return None if client_auth is None else NoPeerCredential()
