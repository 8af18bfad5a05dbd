"""Who a client_id names: a client that registered here (RFC 7591, the fallback), or a client
ID metadata document fetched from its URL (cimd.py; cached in the store within bounds)."""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Any

from protomcp_host.oauth import cimd
from protomcp_host.oauth.records import CIMD_FETCHES, CLIENT_TTL, REGISTRATIONS, Records, digest
from protomcp_host.oauth.redirects import redirect_problem

AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")
MAX_REDIRECT_URIS = 10
MAX_NAME = 200


class ClientError(Exception):
    """The client_id names no client we can use; the message says why."""


@dataclass(frozen=True)
class Client:
    client_id: str
    name: str  # shown on the consent page
    redirect_uris: list[str]
    auth_method: str  # token endpoint: none, client_secret_post, client_secret_basic
    secret_digest: str = ""
    registered: bool = True  # False: a metadata document

    def secret_matches(self, secret: str | None) -> bool:
        if self.auth_method == "none":
            return True
        return secret is not None and hmac.compare_digest(digest(secret), self.secret_digest)


class Clients:
    def __init__(self, records: Records, cimd_allow: frozenset[str]) -> None:
        self.records = records
        self.cimd_allow = cimd_allow

    async def find(self, client_id: str) -> Client:
        """The client `client_id` names. Raises ClientError."""
        if client_id.startswith("https://"):
            return await self._from_document(client_id)
        record = await self.records.get("client", client_id)
        if record is None:
            raise ClientError("unknown client_id (register again)")
        return Client(
            client_id,
            record["client_name"],
            record["redirect_uris"],
            record["token_endpoint_auth_method"],
            record.get("secret_digest", ""),
        )

    async def used(self, client: Client) -> None:
        """A token was issued to `client`: a registration in use lives on."""
        if client.registered:
            record = await self.records.get("client", client.client_id)
            if record is not None:
                await self.records.put("client", client.client_id, record, CLIENT_TTL)

    async def _from_document(self, url: str) -> Client:
        cached = await self.records.get("cimd", digest(url))
        if cached is None:
            if not await self.records.take_slot(CIMD_FETCHES):
                raise ClientError("too many client metadata documents fetched; try again in a minute")
            try:
                document = await cimd.fetch(url, self.cimd_allow)
            except cimd.CimdError as exc:
                raise ClientError(str(exc)) from None
            cached = document.metadata
            await self.records.put("cimd", digest(url), cached, document.ttl)
        name = cached.get("client_name") or url
        return Client(url, str(name)[:MAX_NAME], list(cached["redirect_uris"]), "none", registered=False)

    async def register(self, metadata: Any) -> tuple[int, dict[str, Any]]:
        """RFC 7591 §3: (HTTP status, response body)."""
        problem = _registration_problem(metadata)
        if problem is not None:
            return 400, {"error": problem[0], "error_description": problem[1]}
        if not await self.records.take_slot(REGISTRATIONS):
            return 429, {
                "error": "temporarily_unavailable",
                "error_description": "too many registrations; try again later",
            }
        method = metadata.get("token_endpoint_auth_method", "none")
        client_id = secrets.token_urlsafe(24)
        answer: dict[str, Any] = {
            "client_id": client_id,
            "client_id_issued_at": int(time.time()),
            "client_name": metadata.get("client_name") or "an unnamed client",
            "redirect_uris": metadata["redirect_uris"],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
        }
        record = {k: answer[k] for k in ("client_name", "redirect_uris", "token_endpoint_auth_method")}
        if method != "none":
            secret = secrets.token_urlsafe(32)
            answer.update(client_secret=secret, client_secret_expires_at=0)
            record["secret_digest"] = digest(secret)
        await self.records.put("client", client_id, record, CLIENT_TTL)
        return 201, answer


def _registration_problem(metadata: Any) -> tuple[str, str] | None:
    if not isinstance(metadata, dict):
        return "invalid_client_metadata", "the body must be a JSON object"
    uris = metadata.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        return "invalid_redirect_uri", "redirect_uris must be a non-empty list of URLs"
    if len(uris) > MAX_REDIRECT_URIS:
        return "invalid_redirect_uri", f"at most {MAX_REDIRECT_URIS} redirect URIs"
    for uri in uris:
        problem = redirect_problem(uri)
        if problem is not None:
            return "invalid_redirect_uri", problem
    name = metadata.get("client_name")
    if name is not None and (not isinstance(name, str) or len(name) > MAX_NAME):
        return "invalid_client_metadata", f"client_name must be a string of at most {MAX_NAME} characters"
    if metadata.get("token_endpoint_auth_method", "none") not in AUTH_METHODS:
        return (
            "invalid_client_metadata",
            f"token_endpoint_auth_method must be one of {', '.join(AUTH_METHODS)}",
        )
    grants = metadata.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or not set(grants) <= {"authorization_code", "refresh_token"}:
        return "invalid_client_metadata", "grant_types: only authorization_code and refresh_token"
    responses = metadata.get("response_types", ["code"])
    if not isinstance(responses, list) or set(responses) - {"code"}:
        return "invalid_client_metadata", "response_types: only code"
    return None
