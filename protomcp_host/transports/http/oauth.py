"""OAuth 2.1 resource-server mode: access tokens are JWTs checked against the authorization
server's keys (JWKS from a URL or a file): signature, issuer, audience (this server's canonical
URL, RFC 8707), expiry and required scopes. Clients discover the authorization server through
the RFC 9728 protected-resource metadata this module serves.

Verification is PyJWT's (with `cryptography`), never hand-written crypto. Only asymmetric
algorithms are accepted, and only the one each key declares (no algorithm confusion). The token
itself never reaches a tool process.
"""

from __future__ import annotations

import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import orjson

from protomcp_host.transports.http.asgi import Receive, Scope, Send, respond_json
from protomcp_host.transports.http.guard import Identity, Refusal

ASYMMETRIC = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
REFRESH_AFTER = 60.0  # seconds between JWKS re-reads triggered by an unknown key id
METADATA_PATH = "/.well-known/oauth-protected-resource"


class JwksError(Exception):
    pass


def load_jwks(source: str) -> dict[str, Any]:
    """Read a JWKS document from an https/http URL or a file path (blocking)."""
    try:
        if source.startswith(("https://", "http://")):
            with urllib.request.urlopen(source, timeout=10) as response:
                data = orjson.loads(response.read())
        else:
            data = orjson.loads(Path(source).read_bytes())
    except (OSError, ValueError) as exc:
        raise JwksError(f"cannot read the JWKS from {source}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
        raise JwksError(f"{source} is not a JWKS document (an object with a 'keys' list)")
    return data


@dataclass
class OAuthResource:
    jwks_source: str
    issuer: str
    audience: str | None = None  # default: the server's canonical URL, known once it listens
    scopes: tuple[str, ...] = ()
    leeway: float = 30.0
    resource: str = ""  # canonical URL of this MCP server (set by the server)
    _keys: dict[str | None, Any] = field(default_factory=dict, repr=False)
    _loaded_at: float = 0.0

    def load_keys(self) -> None:
        """Read the keys now (at startup, so a wrong source fails at once). Raises JwksError."""
        self._install(load_jwks(self.jwks_source))

    def start(self, resource: str) -> None:
        """Called once the server knows its URL, which is the default audience."""
        self.resource = resource
        if self.audience is None:
            self.audience = resource

    def _install(self, jwks: dict[str, Any]) -> None:
        from jwt import PyJWK
        from jwt.exceptions import PyJWKError

        keys: dict[str | None, Any] = {}
        for entry in jwks["keys"]:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = PyJWK(entry)
            except PyJWKError:
                continue  # a key type or algorithm we cannot use
            if key.algorithm_name in ASYMMETRIC:
                keys[entry.get("kid")] = key
        self._keys = keys
        self._loaded_at = time.monotonic()

    # -- the metadata endpoint -------------------------------------------------------
    def metadata_url(self) -> str:
        base, _, path = self.resource.partition("://")
        host, slash, rest = path.partition("/")
        return f"{base}://{host}{METADATA_PATH}{slash}{rest}".rstrip("/")

    def metadata_paths(self, mcp_path: str) -> list[str]:
        return [METADATA_PATH, METADATA_PATH + mcp_path.rstrip("/")]

    async def metadata(self, scope: Scope, receive: Receive, send: Send) -> None:
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
        }
        if self.scopes:
            document["scopes_supported"] = list(self.scopes)
        await respond_json(send, 200, orjson.dumps(document))

    # -- checking requests -----------------------------------------------------------
    def _challenge(self, error: str = "", description: str = "") -> tuple[bytes, bytes]:
        parts = [f'resource_metadata="{self.metadata_url()}"']
        if self.scopes:
            parts.append(f'scope="{" ".join(self.scopes)}"')
        if error:
            parts.append(f'error="{error}"')
        if description:
            parts.append(f'error_description="{description.replace(chr(34), chr(39))}"')
        return (b"www-authenticate", ("Bearer " + ", ".join(parts)).encode())

    async def check(self, authorization: str | None) -> Refusal | Identity:
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return Refusal(401, "Unauthorized: this server needs an OAuth access token", (self._challenge(),))
        try:
            claims = await self._verify(token)
        except Exception as exc:  # every verification failure is the client's invalid token
            message = f"Unauthorized: the access token is not valid: {exc}"
            return Refusal(401, message, (self._challenge("invalid_token", str(exc)),))
        granted = claims.get("scope", claims.get("scp", ""))
        granted_set = set(granted.split() if isinstance(granted, str) else granted or ())
        missing = [s for s in self.scopes if s not in granted_set]
        if missing:
            message = f"Forbidden: the access token lacks the scope {' '.join(missing)}"
            return Refusal(403, message, (self._challenge("insufficient_scope", message),))
        return Identity(f"{claims.get('iss')} {claims.get('sub', '')}", claims)

    async def _verify(self, token: str) -> dict[str, Any]:
        import jwt

        kid = jwt.get_unverified_header(token).get("kid")
        key = self._key_for(kid)
        if key is None and time.monotonic() - self._loaded_at > REFRESH_AFTER:
            # The authorization server may have rotated its keys: read them again (off the loop).
            self._install(await anyio.to_thread.run_sync(load_jwks, self.jwks_source))
            key = self._key_for(kid)
        if key is None:
            raise jwt.InvalidTokenError(f"no signing key with id {kid!r}")
        return jwt.decode(
            token,
            key.key,
            algorithms=[key.algorithm_name],
            audience=self.audience,
            issuer=self.issuer,
            leeway=self.leeway,
            options={"require": ["exp", "iss", "aud"]},
        )

    def _key_for(self, kid: str | None) -> Any:
        if kid in self._keys:
            return self._keys[kid]
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return None
