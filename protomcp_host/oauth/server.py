"""The authorization server as a whole: its parts built over the --store, its metadata (RFC
8414) and JWKS, and its endpoints mounted beside the MCP endpoint (public paths: no token)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import orjson

from protomcp_host.oauth.authorize import Authorize
from protomcp_host.oauth.clients import AUTH_METHODS, Clients
from protomcp_host.oauth.http_io import BadRequest, error_json
from protomcp_host.oauth.keys import KeyRing, load_pem_keys
from protomcp_host.oauth.providers import Provider
from protomcp_host.oauth.records import Records
from protomcp_host.oauth.settings import CALLBACK_PATH, OAuthServerSettings
from protomcp_host.oauth.token_endpoint import TokenEndpoint
from protomcp_host.oauth.tokens import Tokens
from protomcp_host.store.base import Store, StoreError
from protomcp_host.transports.http.asgi import ASGIApp, Receive, Scope, Send, respond_json
from protomcp_host.transports.http.oauth import OAuthResource
from protomcp_host.transports.http.server import HttpSettings, endpoint_path

METADATA_PATH = "/.well-known/oauth-authorization-server"
AUTHORIZE_PATH = "/oauth/authorize"
TOKEN_PATH = "/oauth/token"
REGISTER_PATH = "/oauth/register"
REVOKE_PATH = "/oauth/revoke"
JWKS_PATH = "/oauth/jwks"
OWN_KEYS_REREAD = 5.0  # seconds between reads of the key ring for a token signed by an unknown key


class AuthorizationServer:
    def __init__(
        self,
        settings: OAuthServerSettings,
        store: Store,
        log: Callable[[str], None],
        declared: Callable[[], Collection[str]] = frozenset,
    ) -> None:
        """`declared`: the scopes the served tools, resources and prompts need (@tool(scopes=...)),
        which clients may ask for beside --oauth-scope's."""
        self.settings = settings
        self.log = log
        records = Records(store)
        given = [key for pem in settings.signing_keys for key in load_pem_keys(pem)]
        self.keys = KeyRing(records, given, token_ttl=settings.access_token_ttl)
        self.tokens = Tokens(records, self.keys, settings.issuer, settings.access_token_ttl)
        clients = Clients(records, frozenset(host.lower() for host in settings.cimd_allow))
        provider = Provider(settings.provider, settings.client_id, settings.client_secret)
        self.authorize = Authorize(settings, records, clients, provider, log, declared)
        self.token_endpoint = TokenEndpoint(records, clients, self.tokens, settings.access_token_ttl)

    def endpoints(self) -> dict[str, ASGIApp]:
        """Path -> ASGI app, every one public (the guard asks no token for them)."""
        endpoints: dict[str, ASGIApp] = {
            METADATA_PATH: self.metadata,
            AUTHORIZE_PATH: self.authorize.authorize,
            CALLBACK_PATH: self.authorize.callback,
            TOKEN_PATH: self.token_endpoint.token,
            REVOKE_PATH: self.token_endpoint.revoke,
            REGISTER_PATH: self.token_endpoint.register,
            JWKS_PATH: self.jwks,
        }
        return {path: self._store_outage_is_503(app) for path, app in endpoints.items()}

    def _store_outage_is_503(self, app: ASGIApp) -> ASGIApp:
        """A store that cannot be reached is the server's trouble, said as OAuth says it (every
        endpoint reads or writes the store before it answers)."""

        async def serve(scope: Scope, receive: Receive, send: Send) -> None:
            try:
                await app(scope, receive, send)
            except StoreError as exc:
                self.log(f"protomcp: oauth: {exc}")
                problem = BadRequest(
                    "temporarily_unavailable", "the server cannot reach its store; try again", 503
                )
                await error_json(send, problem, ((b"retry-after", b"5"),))

        return serve

    def mount(self, http: HttpSettings) -> None:
        """Serve the endpoints beside MCP's; check MCP requests' tokens (the resource check
        cli/oauth_options.py made) with this server's keys; let pages of any origin read the
        metadata and use the endpoints a browser-based client calls (no cookie is used there:
        the consent form and the callback keep the Origin check)."""
        http.public_endpoints.update(self.endpoints())
        resource = http.auth
        assert isinstance(resource, OAuthResource)
        resource.fetch_jwks = self.keys.jwks
        resource.refresh_after = OWN_KEYS_REREAD
        cross_origin = (METADATA_PATH, TOKEN_PATH, REVOKE_PATH, REGISTER_PATH, JWKS_PATH)
        http.any_origin_paths.update(cross_origin, resource.metadata_paths(endpoint_path(http)))

    def metadata_document(self) -> dict[str, Any]:
        url = self.settings.public_url
        document: dict[str, Any] = {
            "issuer": self.settings.issuer,
            "authorization_endpoint": url + AUTHORIZE_PATH,
            "token_endpoint": url + TOKEN_PATH,
            "registration_endpoint": url + REGISTER_PATH,
            "revocation_endpoint": url + REVOKE_PATH,
            "jwks_uri": url + JWKS_PATH,
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "revocation_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
        }
        # (Not the scopes tools declare: a client asking for every scope listed would get them all
        # at the first sign-in; it asks for one when a 403 names it, step-up, and gets it then.)
        if self.settings.scopes:
            document["scopes_supported"] = list(self.settings.scopes)
        return document

    async def metadata(self, scope: Scope, receive: Receive, send: Send) -> None:
        await respond_json(send, 200, orjson.dumps(self.metadata_document()), _PUBLIC_CACHE)

    async def jwks(self, scope: Scope, receive: Receive, send: Send) -> None:
        await respond_json(send, 200, orjson.dumps(await self.keys.jwks()), _PUBLIC_CACHE)


_PUBLIC_CACHE = ((b"cache-control", b"public, max-age=300"),)
