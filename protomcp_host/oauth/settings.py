"""What the authorization server was asked to be: typed and frozen, built by the CLI
(cli/oauth_options.py) and read by the server (server.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

CALLBACK_PATH = "/oauth/callback"  # the provider sends the browser back here


@dataclass(frozen=True)
class ProviderSpec:
    kind: str  # "oidc", "github" or "google"
    issuer: str = ""  # oidc: the provider's issuer URL; github: an Enterprise Server's URL (or "")


@dataclass(frozen=True)
class OAuthServerSettings:
    public_url: str  # the one origin clients use, e.g. https://tools.example.com (no trailing /)
    mcp_path: str  # where the MCP endpoint is served: the resource is public_url + mcp_path
    provider: ProviderSpec
    client_id: str  # the app registered at the provider
    client_secret: str = field(repr=False)
    signing_keys: tuple[str, ...] = field(default=(), repr=False)  # PEM private keys; the first signs
    cimd_allow: tuple[str, ...] = ()  # hosts whose metadata documents may be on private addresses
    scopes: tuple[str, ...] = ()  # what a token may grant (--oauth-scope)
    secret_envs: tuple[str, ...] = ()  # the variables the secrets came from (kept from tool processes)
    access_token_ttl: float = 900.0  # seconds an access token lives

    @property
    def issuer(self) -> str:
        """The issuer identifier: the origin with its slash, the form URL parsers render it in
        (clients compare it as a string with what the metadata says)."""
        return self.public_url + "/"

    @property
    def resource(self) -> str:
        """This MCP server's canonical URL (RFC 8707): the audience of the tokens it issues."""
        return self.public_url + self.mcp_path

    @property
    def callback_url(self) -> str:
        return self.public_url + CALLBACK_PATH
