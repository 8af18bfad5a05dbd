"""POST /oauth/token (authorization_code, refresh_token), POST /oauth/revoke (RFC 7009) and
POST /oauth/register (RFC 7591). Errors are JSON with the status RFC 6749 §5.2 gives them: an
unknown client or a wrong secret is 401 invalid_client (the one answer after which clients
register again), a bad code or refresh token 400 invalid_grant."""

from __future__ import annotations

from typing import Any

from protomcp_host.oauth import pkce
from protomcp_host.oauth.clients import Client, ClientError, Clients
from protomcp_host.oauth.http_io import (
    BadRequest,
    answer_json,
    client_credentials,
    error_json,
    read_form,
    read_json_object,
    refused_unless_post,
)
from protomcp_host.oauth.records import CODE_TTL, Records, digest
from protomcp_host.oauth.tokens import Grant, Reused, Tokens
from protomcp_host.transports.http.asgi import Receive, Scope, Send, respond

BASIC_CHALLENGE = ((b"www-authenticate", b'Basic realm="protomcp"'),)


async def _refuse(send: Send, problem: BadRequest) -> None:
    """The JSON error; a 401 (invalid_client) also says how to authenticate (RFC 6749 §5.2)."""
    await error_json(send, problem, BASIC_CHALLENGE if problem.status == 401 else ())


class TokenEndpoint:
    def __init__(self, records: Records, clients: Clients, tokens: Tokens, access_ttl: float) -> None:
        self.records = records
        self.clients = clients
        self.tokens = tokens
        self.access_ttl = access_ttl

    async def token(self, scope: Scope, receive: Receive, send: Send) -> None:
        if await refused_unless_post(scope, send):
            return
        try:
            form = await read_form(scope, receive)
            client = await self._client(scope, form)
            kind = form.get("grant_type")
            if kind == "authorization_code":
                grant, refresh = await self._redeem_code(client, form)
            elif kind == "refresh_token":
                grant, refresh = await self._refresh(client, form)
            else:
                raise BadRequest("unsupported_grant_type", "grant_type: authorization_code or refresh_token")
        except BadRequest as problem:
            await _refuse(send, problem)
            return
        await self.clients.used(client)
        await answer_json(
            send,
            200,
            {
                "access_token": await self.tokens.access_token(grant),
                "token_type": "Bearer",
                "expires_in": int(self.access_ttl),
                "refresh_token": refresh,
                "scope": grant.scope,
            },
        )

    async def _client(self, scope: Scope, form: dict[str, str]) -> Client:
        client_id, secret, method = client_credentials(scope, form)
        try:
            client = await self.clients.find(client_id)
        except ClientError as exc:
            raise BadRequest("invalid_client", str(exc), 401) from None
        if client.auth_method != "none" and (
            method != client.auth_method or not client.secret_matches(secret)
        ):
            raise BadRequest("invalid_client", "the client's credentials are not valid", 401)
        return client

    async def _redeem_code(self, client: Client, form: dict[str, str]) -> tuple[Grant, str]:
        code = form.get("code", "")
        record = await self.records.get("code", digest(code)) if code else None
        if record is None:
            raise BadRequest("invalid_grant", "the authorization code is not valid (or expired)")
        if not await self.records.claim("code-used", digest(code), CODE_TTL * 2):
            # RFC 6749 §4.1.2: a code used twice revokes what it gave the first time.
            await self.tokens.revoke_family(record["family"])
            raise BadRequest("invalid_grant", "the authorization code was already used")
        if record["client_id"] != client.client_id:
            raise BadRequest("invalid_grant", "the authorization code was issued to another client")
        if form.get("redirect_uri", record["redirect_uri"]) != record["redirect_uri"]:
            raise BadRequest("invalid_grant", "redirect_uri is not the one of the authorization request")
        if not pkce.verifies(form.get("code_verifier", ""), record["challenge"]):
            raise BadRequest("invalid_grant", "the code_verifier does not match the code_challenge")
        self._check_resource(form, record["resource"])
        grant = Grant.from_record(record)
        return grant, await self.tokens.new_family(grant, record["family"])

    async def _refresh(self, client: Client, form: dict[str, str]) -> tuple[Grant, str]:
        try:
            rotated = await self.tokens.rotate(form.get("refresh_token", ""), client.client_id)
        except Reused:
            raise BadRequest("invalid_grant", "the refresh token was already used; sign in again") from None
        if rotated is None:
            raise BadRequest("invalid_grant", "the refresh token is not valid")
        grant, refresh = rotated
        self._check_resource(form, grant.resource)
        asked = form.get("scope")
        if asked is not None:
            narrower = [s for s in asked.split() if s in grant.scope.split()]
            if len(narrower) != len(asked.split()):
                raise BadRequest("invalid_scope", "a refresh cannot widen the scopes granted")
            grant = Grant(grant.client_id, grant.subject, " ".join(narrower), grant.resource, grant.provider)
        return grant, refresh

    @staticmethod
    def _check_resource(form: dict[str, str], granted: str) -> None:
        asked = form.get("resource")
        if asked is not None and asked.rstrip("/") != granted.rstrip("/"):
            raise BadRequest("invalid_target", f"tokens here are only for {granted}")

    async def revoke(self, scope: Scope, receive: Receive, send: Send) -> None:
        if await refused_unless_post(scope, send):
            return
        try:
            form = await read_form(scope, receive)
            client = await self._client(scope, form)
            if "token" not in form:
                raise BadRequest("invalid_request", "the request names no token")
        except BadRequest as problem:
            await _refuse(send, problem)
            return
        await self.tokens.revoke(form["token"], client.client_id)
        await respond(send, 200, headers=((b"cache-control", b"no-store"),))

    async def register(self, scope: Scope, receive: Receive, send: Send) -> None:
        if await refused_unless_post(scope, send):
            return
        try:
            metadata: Any = await read_json_object(receive)
        except BadRequest as problem:
            await error_json(send, problem)
            return
        status, body = await self.clients.register(metadata)
        await answer_json(send, status, body)
