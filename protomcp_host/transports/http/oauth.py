"""OAuth 2.1 resource-server mode: access tokens are JWTs checked against the authorization
server's keys (JWKS from a URL or a file): signature, issuer, audience (this server's canonical
URL, RFC 8707), expiry (within `leeway` seconds of clock skew) and required scopes; or opaque
tokens the authorization server is asked about (introspection.py, RFC 7662). Clients discover the
authorization server through the RFC 9728 protected-resource metadata this module serves. Every
refused token is reported with its reason on the host's stderr (refusals.py: rate-limited).

Verification is PyJWT's (with `cryptography`), never hand-written crypto. Only asymmetric
algorithms are accepted, and only the one each key declares (no algorithm confusion). The token
itself never reaches a tool process.
"""

from __future__ import annotations

import hashlib
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import orjson

from protomcp_host.protocol.principals import principal_of
from protomcp_host.transports.http.asgi import Receive, Scope, Send, respond_json
from protomcp_host.transports.http.guard import Identity, Refusal
from protomcp_host.transports.http.introspection import IntrospectionError, Introspector
from protomcp_host.transports.http.refusals import RefusalLog, TokenRefused

ASYMMETRIC = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
REFRESH_AFTER = 60.0  # seconds between JWKS re-reads triggered by an unknown key id (default)
LEEWAY = 30.0  # seconds of clock skew allowed on a JWT's exp, nbf and iat (default)
MAX_VERIFIED = 10_000  # JWTs remembered as verified (the oldest go first)
INVALID = "Unauthorized: the access token is not valid"  # all a refused caller is told
UNCHECKED = "Service Unavailable: the access token cannot be checked now; try again"
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
    jwks_source: str | None  # None: tokens are opaque, checked by `introspection`
    issuer: str
    audience: str | None = None  # default: the server's canonical URL, known once it listens
    scopes: tuple[str, ...] = ()
    leeway: float = LEEWAY
    refresh_after: float = REFRESH_AFTER  # at most one JWKS re-read per this many seconds
    introspection: Introspector | None = None
    resource: str = ""  # canonical URL of this MCP server (set by the server)
    public_resource: str | None = None  # --public-url: the resource whatever the server listens on
    # protomcp's own authorization server (oauth/server.py): its keys, read from the store
    fetch_jwks: Callable[[], Awaitable[dict[str, Any]]] | None = field(default=None, repr=False)
    log: Callable[[str], None] = field(default=lambda text: _print_stderr(text), repr=False)
    _keys: dict[str | None, Any] = field(default_factory=dict, repr=False)
    _refetched_at: float = float("-inf")  # last re-read attempt, whether it worked or not
    _refetching: Any = field(default=None, repr=False)  # anyio.Lock: one re-read at a time
    _refusals: RefusalLog | None = field(default=None, repr=False)
    # JWT -> (who it is, wall-clock time its acceptance ends: exp + leeway). A client sends the
    # same token with every request; checking its signature each time cost about half the
    # calls/s of a bearer token. The same token string has the same signature and claims, so
    # only the time is checked again.
    _verified: dict[str, tuple[Identity, float]] = field(default_factory=dict, repr=False)

    def load_keys(self) -> None:
        """Read the keys now (at startup, so a wrong source fails at once). Raises JwksError."""
        if self.jwks_source is not None:
            self._install(load_jwks(self.jwks_source))

    def start(self, resource: str, log: Callable[[str], None] | None = None) -> None:
        """Called once the server knows its URL, which is the default audience."""
        self.resource = self.public_resource or resource
        if log is not None:
            self.log = log
        if self.audience is None:
            self.audience = self.resource

    @property
    def refusals(self) -> RefusalLog:
        if self._refusals is None:
            self._refusals = RefusalLog(self.log)
        return self._refusals

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
    def _challenge(
        self, error: str = "", description: str = "", scopes: Sequence[str] | None = None
    ) -> tuple[bytes, bytes]:
        parts = [f'resource_metadata="{self.metadata_url()}"']
        scopes = self.scopes if scopes is None else scopes
        if scopes:
            parts.append(f'scope="{" ".join(scopes)}"')
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
        known = self._verified.get(token)
        if known is not None:
            if time.time() <= known[1]:
                return known[0]
            del self._verified[token]  # expired: verified again, and refused with the reason
        try:
            claims = await self._verify(token)
            granted = _scopes_of(claims)
            subject = claims.get("sub")
            if subject is not None and not isinstance(subject, str):
                raise ValueError(f"the 'sub' claim is a {type(subject).__name__}, not a string")
        except IntrospectionError as exc:  # the authorization server's trouble, not the token's
            self.refusals.refused(token, "introspection failed", f"introspection failed: {exc}")
            return Refusal(503, UNCHECKED, ((b"retry-after", b"5"),))
        except Exception as exc:  # every other verification failure is the client's invalid token
            # The caller learns only that the token is refused; why goes to the host's stderr
            # (rate-limited), since it may name the JWKS or other configuration.
            refused = _refusal_of(exc, token)
            self.refusals.refused(token, refused.kind, str(refused))
            return Refusal(401, INVALID, (self._challenge("invalid_token"),))
        missing = [s for s in self.scopes if s not in granted]
        if missing:
            message = f"Forbidden: the access token lacks the scope {' '.join(missing)}"
            has = " ".join(sorted(granted)) or "none"
            self.refusals.refused(token, "insufficient scope", f"{message[11:]} (it has: {has})")
            return Refusal(403, message, (self._challenge("insufficient_scope", message),))
        # Sessions are bound to the principal: the token's subject, or without one the token
        # itself (hashed), so two tokens without 'sub' never share a session.
        principal = principal_of(claims) or "token " + hashlib.sha256(token.encode()).hexdigest()
        identity = Identity(principal, claims, self.insufficient_scope)
        if self.introspection is None:  # (introspection answers are cached by the introspector)
            if len(self._verified) >= MAX_VERIFIED:
                del self._verified[next(iter(self._verified))]
            self._verified[token] = (identity, float(claims["exp"]) + self.leeway)
        return identity

    def insufficient_scope(self, required: Sequence[str], message: str) -> Refusal:
        """The step-up answer to a valid token that lacks scopes a request needs (a tool's): 403
        naming every scope the request needs, the server's own (--oauth-scope) and `required`,
        so that the client asks for them all at once."""
        scopes = list(dict.fromkeys([*self.scopes, *required]))
        return Refusal(403, message, (self._challenge("insufficient_scope", message, scopes),))

    async def _verify(self, token: str) -> dict[str, Any]:
        if self.introspection is not None:
            return self._check_introspected(await self.introspection.claims(token))
        import jwt

        kid = jwt.get_unverified_header(token).get("kid")
        if kid is not None and not isinstance(kid, str):
            raise TokenRefused("malformed", "the key id ('kid') is not a string")
        key = self._key_for(kid)
        if key is None:
            key = await self._refetch_for(kid)
        if key is None:
            raise TokenRefused("unknown key", f"no signing key with id {kid!r} in the JWKS")
        try:
            return jwt.decode(
                token,
                key.key,
                algorithms=[key.algorithm_name],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:  # signature good: its claims can be quoted
            late = time.time() - jwt.decode(token, options={"verify_signature": False})["exp"]
            raise TokenRefused(
                "expired", f"expired {late:.0f}s ago, beyond the {self.leeway:g}s leeway"
            ) from None

    def _check_introspected(self, claims: dict[str, Any]) -> dict[str, Any]:
        """An active token is still this server's only if its issuer (when named) is ours and its
        audience includes this server (RFC 8707): a token for another resource is refused."""
        if "iss" in claims and claims["iss"] != self.issuer:
            raise TokenRefused("wrong issuer", f"issued by {claims['iss']!r}, not {self.issuer}")
        audience = claims.get("aud")
        named = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
        if self.audience not in named:
            raise TokenRefused("wrong audience", f"meant for {audience!r}, not {self.audience}")
        return claims

    async def _refetch_for(self, kid: str | None) -> Any:
        """The authorization server may have rotated its keys: read them again (off the loop), at
        most once per `refresh_after` seconds whether that works or not; a failure keeps the last
        good keys and is reported on stderr, never to the caller."""
        source = self.jwks_source
        if source is None:
            return None
        if self._refetching is None:
            self._refetching = anyio.Lock()
        async with self._refetching:  # callers that arrive meanwhile use what it read
            key = self._key_for(kid)
            if key is not None or time.monotonic() - self._refetched_at < self.refresh_after:
                return key
            self._refetched_at = time.monotonic()
            try:
                if self.fetch_jwks is not None:
                    self._install(await self.fetch_jwks())
                else:
                    self._install(await anyio.to_thread.run_sync(load_jwks, source))
            except JwksError as exc:
                self.log(
                    f"protomcp: {exc}; keeping the {len(self._keys)} keys read before "
                    f"(next try in {self.refresh_after:g}s at the earliest)"
                )
                return None
            return self._key_for(kid)

    def _key_for(self, kid: str | None) -> Any:
        if kid in self._keys:
            return self._keys[kid]
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return None


def _refusal_of(exc: Exception, token: str) -> TokenRefused:
    """Why a token was refused, as a kind the refusal log counts by and a detail it writes."""
    import jwt

    if isinstance(exc, TokenRefused):
        return exc
    if isinstance(exc, (jwt.InvalidAudienceError, jwt.InvalidIssuerError)):
        # Raised after the signature was checked: the claims can be quoted.
        claims = jwt.decode(token, options={"verify_signature": False})
        if isinstance(exc, jwt.InvalidAudienceError):
            return TokenRefused("wrong audience", f"meant for {claims.get('aud')!r}: {exc}")
        return TokenRefused("wrong issuer", f"issued by {claims.get('iss')!r}: {exc}")
    kinds: list[tuple[type[Exception], str]] = [
        (jwt.ImmatureSignatureError, "not yet valid"),
        (jwt.InvalidSignatureError, "bad signature"),
        (jwt.MissingRequiredClaimError, "missing claim"),
        (jwt.InvalidAlgorithmError, "wrong algorithm"),
        (jwt.DecodeError, "malformed"),
        (ValueError, "malformed claims"),
    ]
    kind = next((kind for cls, kind in kinds if isinstance(exc, cls)), "invalid")
    return TokenRefused(kind, str(exc) or type(exc).__name__)


def _print_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _scopes_of(claims: dict[str, Any]) -> frozenset[str]:
    """The scopes a token grants: 'scope' is a string of space-separated scopes (RFC 9068);
    without it, 'scp' as such a string or a list of strings. Any other shape: ValueError."""
    if "scope" in claims:
        granted, name = claims["scope"], "scope"
    else:
        granted, name = claims.get("scp", ""), "scp"
    if isinstance(granted, str):
        return frozenset(granted.split())
    if name == "scp" and isinstance(granted, list) and all(isinstance(s, str) for s in granted):
        return frozenset(granted)
    raise ValueError(f"the '{name}' claim is not a string of space-separated scopes")
