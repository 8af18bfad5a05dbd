"""The browser's way through a sign-in:

1. GET /oauth/authorize (from the MCP client): the client and its redirect URI are checked
   first (a request failing there is answered here, never redirected: no open redirect), then
   PKCE S256, `resource` (RFC 8707) and the scopes; the consent page names the client and where
   it will send the person. A pending record is kept in the store and its id in a cookie.
2. POST /oauth/authorize (the consent form, with that cookie): on to the provider's sign-in,
   with protomcp's own state, PKCE and nonce.
3. GET /oauth/callback (from the provider, with the cookie): the provider's answer checked
   (state, iss, then its code redeemed), and the client gets protomcp's own code, with `iss`
   (RFC 9207). Any host of the store can serve any step."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Collection
from typing import Any

from protomcp_host.oauth import pages, pkce
from protomcp_host.oauth.clients import Client, ClientError, Clients
from protomcp_host.oauth.http_io import (
    BadRequest,
    cookie_of,
    query,
    read_form,
    redirect,
    set_cookie,
    with_query,
)
from protomcp_host.oauth.providers import Provider, ProviderError
from protomcp_host.oauth.records import AUTHORIZATIONS, CODE_TTL, PENDING_TTL, Records, digest
from protomcp_host.oauth.redirects import redirect_matches
from protomcp_host.oauth.settings import OAuthServerSettings
from protomcp_host.oauth.tokens import Grant
from protomcp_host.transports.http.asgi import Receive, Scope, Send, respond


class Authorize:
    def __init__(
        self,
        settings: OAuthServerSettings,
        records: Records,
        clients: Clients,
        provider: Provider,
        log: Callable[[str], None],
        declared: Callable[[], Collection[str]] = frozenset,
    ) -> None:
        self.settings = settings
        self.declared = declared  # the scopes tools, resources and prompts need (scopes.py)
        self.records = records
        self.clients = clients
        self.provider = provider
        self.log = log
        self.secure_cookie = settings.public_url.startswith("https://")

    async def authorize(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] == "POST":
            await self._consented(scope, receive, send)
        elif scope["method"] == "GET":
            await self._asked(scope, send)
        else:
            await respond(send, 405, headers=((b"allow", b"GET, POST"),))

    # -- 1. the client's request ---------------------------------------------------------------
    async def _asked(self, scope: Scope, send: Send) -> None:
        try:
            params = query(scope)
        except BadRequest as problem:
            await self._page(send, 400, problem.description)
            return
        client_id, redirect_uri = params.get("client_id", ""), params.get("redirect_uri", "")
        if not client_id:
            await self._page(send, 400, "The request names no client (client_id).")
            return
        try:
            client = await self.clients.find(client_id)
        except ClientError as exc:
            await self._page(send, 400, f"The client {client_id} cannot be used: {exc}.")
            return
        if not redirect_uri and len(client.redirect_uris) == 1:
            redirect_uri = client.redirect_uris[0]
        if not redirect_matches(client.redirect_uris, redirect_uri):
            await self._page(send, 400, "The redirect URI is not one the client registered.")
            return
        # From here on, the client learns of a problem at its redirect URI (RFC 6749 §4.1.2.1).
        state = params.get("state")
        try:
            pending = self._pending(client, redirect_uri, params)
        except BadRequest as problem:
            await self._back(
                send, redirect_uri, state, {"error": problem.error, "error_description": problem.description}
            )
            return
        if not await self.records.take_slot(AUTHORIZATIONS):
            error = {"error": "temporarily_unavailable", "error_description": "too many sign-ins at once"}
            await self._back(send, redirect_uri, state, error)
            return
        pending_id = secrets.token_urlsafe(24)
        await self.records.put("pending", pending_id, pending, PENDING_TTL)
        page = pages.consent(
            server=self.settings.public_url,
            client_name=client.name,
            client_id=client.client_id,
            redirect_uri=redirect_uri,
            provider=self.provider.display_name,
            scope=pending["scope"],
            pending=pending_id,
        )
        cookie = set_cookie(pending_id, self.secure_cookie, int(PENDING_TTL))
        await respond(
            send, 200, page, content_type=b"text/html; charset=utf-8", headers=(*pages.PAGE_HEADERS, cookie)
        )

    def _pending(self, client: Client, redirect_uri: str, params: dict[str, str]) -> dict[str, Any]:
        if params.get("response_type") != "code":
            raise BadRequest("unsupported_response_type", "response_type must be code")
        challenge = params.get("code_challenge", "")
        if not challenge:
            raise BadRequest("invalid_request", "PKCE is required: send code_challenge (S256)")
        if params.get("code_challenge_method") != "S256":
            raise BadRequest("invalid_request", "code_challenge_method must be S256")
        if not pkce.valid_challenge(challenge):
            raise BadRequest("invalid_request", "code_challenge is not a base64url SHA-256")
        resource = params.get("resource", self.settings.resource)
        if resource.rstrip("/") != self.settings.resource.rstrip("/"):
            raise BadRequest("invalid_target", f"this server issues tokens only for {self.settings.resource}")
        return {
            "client_id": client.client_id,
            "client_name": client.name,
            "redirect_uri": redirect_uri,
            "state": params.get("state"),
            "challenge": challenge,
            "scope": self._scope(params.get("scope")),
            "resource": self.settings.resource,
        }

    def _scope(self, asked: str | None) -> str:
        """The scopes granted: those asked for that this server knows (--oauth-scope's, and those
        its tools, resources and prompts need: a client asks for them on a 403 insufficient_scope,
        step-up); --oauth-scope's when the client asks for none of them (a client sending scopes
        of its own, which are left out, RFC 6749 §3.3, still gets a token this server accepts)."""
        known = self.settings.scopes
        declared = self.declared()
        granted = [s for s in dict.fromkeys((asked or "").split()) if s in known or s in declared]
        return " ".join(granted or known)

    # -- 2. the consent ------------------------------------------------------------------------
    async def _consented(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            form = await read_form(scope, receive)
        except BadRequest as problem:
            await self._page(send, problem.status, problem.description)
            return
        pending_id = form.get("pending", "")
        bound = cookie_of(scope)
        # The cookie the consent page set must come back: a POST forged from another site
        # carries none (SameSite=Lax), so nobody consents for someone else's browser.
        if not pending_id or bound is None or not secrets.compare_digest(bound, pending_id):
            await self._page(send, 400, "This consent does not belong to this browser.")
            return
        pending = await self.records.get("pending", pending_id)
        if pending is None:
            await self._page(send, 400, "This sign-in has expired.")
            return
        if form.get("decision") != "allow":
            await self.records.delete("pending", pending_id)
            error = {"error": "access_denied", "error_description": "the user denied access"}
            await self._back(send, pending["redirect_uri"], pending["state"], error, 303)
            return
        verifier, challenge = pkce.new_pair()
        pending["provider"] = {
            "state": secrets.token_urlsafe(24),
            "verifier": verifier,
            "nonce": secrets.token_urlsafe(24),
        }
        try:
            url = await self.provider.authorization_url(
                pending["provider"]["state"],
                self.settings.callback_url,
                challenge,
                pending["provider"]["nonce"],
            )
        except ProviderError as exc:
            self.log(f"protomcp: oauth: cannot reach the identity provider: {exc}")
            await self._page(send, 502, "The identity provider cannot be reached; try again later.")
            return
        await self.records.put("pending", pending_id, pending, PENDING_TTL)
        await redirect(send, url, 303)

    # -- 3. the provider's answer --------------------------------------------------------------
    async def callback(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "GET":
            await respond(send, 405, headers=((b"allow", b"GET"),))
            return
        try:
            params = query(scope)
        except BadRequest as problem:
            await self._page(send, 400, problem.description)
            return
        pending_id = cookie_of(scope)
        pending = None if pending_id is None else await self.records.get("pending", pending_id)
        started = None if pending is None else pending.get("provider")
        if pending_id is None or pending is None or started is None:
            await self._page(
                send, 400, "No sign-in of this browser is waiting for this answer (or it expired)."
            )
            return
        if not secrets.compare_digest(params.get("state", ""), started["state"]):
            await self._page(send, 400, "The identity provider's answer does not belong to this sign-in.")
            return
        await self.records.delete("pending", pending_id)  # one answer per sign-in
        try:
            await self.provider.check_iss(params.get("iss"))
            if "error" in params:
                error = {"error": "access_denied", "error_description": "the sign-in at the provider failed"}
                await self._back(send, pending["redirect_uri"], pending["state"], error)
                return
            person = await self.provider.finish(
                params.get("code", ""), self.settings.callback_url, started["verifier"], started["nonce"]
            )
        except ProviderError as exc:
            self.log(f"protomcp: oauth: a sign-in at the identity provider failed: {exc}")
            await self._page(send, 400, "The sign-in at the identity provider failed.")
            return
        grant = Grant(
            pending["client_id"], person.subject, pending["scope"], pending["resource"], self.provider.issuer
        )
        code = secrets.token_urlsafe(32)
        record = {
            **grant.as_record(),
            "redirect_uri": pending["redirect_uri"],
            "challenge": pending["challenge"],
            "family": secrets.token_urlsafe(16),  # revoked if the code is presented twice
        }
        await self.records.put("code", digest(code), record, CODE_TTL)
        await self._back(send, pending["redirect_uri"], pending["state"], {"code": code})

    # -- answers -------------------------------------------------------------------------------
    async def _back(
        self, send: Send, redirect_uri: str, state: str | None, params: dict[str, str], status: int = 302
    ) -> None:
        """The authorization response at the client's redirect URI, with state and iss."""
        answer = {**params, "iss": self.settings.issuer}
        if state is not None:
            answer["state"] = state
        clear = set_cookie("", self.secure_cookie, 0)
        await redirect(send, with_query(redirect_uri, answer), status, (clear,))

    async def _page(self, send: Send, status: int, message: str) -> None:
        await respond(
            send,
            status,
            pages.error(message),
            content_type=b"text/html; charset=utf-8",
            headers=pages.PAGE_HEADERS,
        )
