"""The options that make protomcp the OAuth authorization server MCP clients see (--public-url,
--oauth-provider and their companions), checked, and what they make: OAuthServerSettings and
the resource-server check of protomcp's own tokens, in the run's HttpSettings."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import click

if TYPE_CHECKING:
    from protomcp_host.oauth.settings import OAuthServerSettings, ProviderSpec
    from protomcp_host.transports.http.server import HttpSettings

OAUTH_SERVER_OPTIONS: list[Callable[[Any], Any]] = [
    click.option(
        "--public-url",
        default=None,
        metavar="URL",
        help="[http] The one origin clients reach this server at, e.g. https://tools.example.com: the "
        "OAuth issuer, the resource its tokens are for, and (with /oauth/callback) the redirect URI to "
        "register at the provider. Never taken from request headers.",
    ),
    click.option(
        "--oauth-provider",
        default=None,
        metavar="oidc:ISSUER|github|github:URL|google",
        help="[http] Be the OAuth authorization server MCP clients sign in with (metadata, client ID "
        "metadata documents, dynamic registration, tokens signed here), the user signing in at this "
        "identity provider (github: github.com; github:https://HOST: a GitHub Enterprise Server). "
        "Needs --public-url, --oauth-client-id-env and --oauth-client-secret-env.",
    ),
    click.option(
        "--oauth-client-id-env",
        default=None,
        metavar="NAME",
        help="[http] The environment variable holding the client id of the app registered at the provider "
        "(with --oauth-introspect: the client the introspection calls authenticate as).",
    ),
    click.option(
        "--oauth-client-secret-env",
        default=None,
        metavar="NAME",
        help="[http] The environment variable holding that app's client secret (tool processes "
        "do not get it).",
    ),
    click.option(
        "--oauth-signing-key-env",
        default=None,
        metavar="NAME",
        help="[http] The environment variable holding the PEM private key(s) the access tokens are signed "
        "with (EC P-256, RSA or Ed25519; the first signs, all are published: put a new key first to "
        "rotate).  [default: a key made once and kept in --store, replaced every 30 days]",
    ),
    click.option(
        "--oauth-cimd-allow",
        "oauth_cimd_allow",
        multiple=True,
        metavar="HOST",
        help="[http] Also fetch client ID metadata documents from HOST though it resolves to a loopback or "
        "private address (refused otherwise, as server-side request forgery). Repeatable.",
    ),
]
NAMES = (
    "public_url",
    "oauth_provider",
    "oauth_client_id_env",
    "oauth_client_secret_env",
    "oauth_signing_key_env",
    "oauth_cimd_allow",
)
RESOURCE_SERVER_ONLY = {  # parameter -> flag: resource-server mode for another server's tokens
    "auth_token_env": "--auth-token-env",
    "oauth_jwks": "--oauth-jwks",
    "oauth_issuer": "--oauth-issuer",
    "oauth_audience": "--oauth-audience",
    "oauth_jwks_refresh": "--oauth-jwks-refresh",
    "oauth_introspect": "--oauth-introspect",
    "oauth_leeway": "--oauth-leeway",
}


def oauth_server_settings(given: Mapping[str, Any], http: HttpSettings | None) -> OAuthServerSettings | None:
    """The authorization server the options ask for (None: none); it also becomes the run's
    authentication (`http.auth`), and its public name is allowed as Host and Origin. UsageError
    for a value or a combination that cannot be served."""
    used = [f"--{name.replace('_', '-')}" for name in NAMES if given.get(name) not in (None, ())]
    if not used:
        return None
    if not given.get("oauth_provider"):
        if given.get("oauth_introspect"):  # which authenticates as that client (cli/options.py)
            client = ("--oauth-client-id-env", "--oauth-client-secret-env")
            used = [flag for flag in used if flag not in client]
        if used:
            raise click.UsageError(f"{', '.join(used)}: only with --oauth-provider")
        return None
    if http is None or http.transport != "http":
        raise click.UsageError("--oauth-provider: only with --transport http")
    clashing = [flag for name, flag in RESOURCE_SERVER_ONLY.items() if given.get(name)]
    if clashing:
        raise click.UsageError(
            f"--oauth-provider makes protomcp the authorization server, which signs the tokens it accepts: "
            f"not with {', '.join(clashing)}"
        )
    from protomcp_host.oauth.keys import KeyError_, load_pem_keys
    from protomcp_host.oauth.settings import OAuthServerSettings

    public_url = _public_url(given.get("public_url"))
    provider = _provider(given["oauth_provider"])
    envs = {flag: given.get(name) for name, flag in _SECRETS.items()}
    missing = [flag for flag, name in envs.items() if flag != "--oauth-signing-key-env" and not name]
    if missing:
        raise click.UsageError(f"--oauth-provider needs {' and '.join(missing)}")
    values = {flag: _secret(flag, name) for flag, name in envs.items() if name}
    signing = values.get("--oauth-signing-key-env")
    if signing is not None:
        try:
            load_pem_keys(signing)
        except KeyError_ as exc:
            raise click.UsageError(
                f"--oauth-signing-key-env {envs['--oauth-signing-key-env']}: {exc}"
            ) from None
    settings = OAuthServerSettings(
        public_url=public_url,
        mcp_path=http.path,
        provider=provider,
        client_id=values["--oauth-client-id-env"],
        client_secret=values["--oauth-client-secret-env"],
        signing_keys=(signing,) if signing else (),
        cimd_allow=tuple(host.lower().strip("[]") for host in given.get("oauth_cimd_allow", ())),
        scopes=tuple(given.get("oauth_scopes", ())),
        secret_envs=tuple(name for name in envs.values() if name),
    )
    _serve_as(settings, http)
    return settings


_SECRETS = {
    "oauth_client_id_env": "--oauth-client-id-env",
    "oauth_client_secret_env": "--oauth-client-secret-env",
    "oauth_signing_key_env": "--oauth-signing-key-env",
}


def _secret(flag: str, name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise click.UsageError(f"{flag}: the environment variable {name} is not set")
    return value


def _public_url(value: str | None) -> str:
    if not value:
        raise click.UsageError("--oauth-provider needs --public-url (e.g. https://tools.example.com)")
    from protomcp_host.oauth.providers import secure_enough

    parts = urlsplit(value)
    if not secure_enough(value) or not parts.hostname:
        raise click.UsageError(f"--public-url {value}: use https (http only for a loopback address)")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise click.UsageError(f"--public-url {value}: give the origin only (https://HOST[:PORT])")
    return f"{parts.scheme}://{parts.netloc}".lower()


def _provider(value: str) -> ProviderSpec:
    from protomcp_host.oauth.providers import secure_enough
    from protomcp_host.oauth.settings import ProviderSpec

    if value in ("github", "google"):
        return ProviderSpec(value)
    kind, _, issuer = value.partition(":")
    if kind not in ("oidc", "github") or not issuer:
        raise click.UsageError(
            f"--oauth-provider {value}: expected oidc:ISSUER-URL, github, github:ENTERPRISE-URL or google"
        )
    if not secure_enough(issuer):
        raise click.UsageError(f"--oauth-provider {value}: the URL must be https (http only on loopback)")
    return ProviderSpec(kind, issuer.rstrip("/"))


def _serve_as(settings: OAuthServerSettings, http: HttpSettings) -> None:
    """Accept protomcp's own tokens (verified with its own keys: oauth/server.py sets them when
    the store is open) and requests naming the public host, from pages of the public origin
    (the consent form)."""
    from protomcp_host.transports.http.oauth import OAuthResource

    http.auth = OAuthResource(
        jwks_source="",
        issuer=settings.issuer,
        audience=settings.resource,
        scopes=settings.scopes,
        public_resource=settings.resource,
    )
    host = urlsplit(settings.public_url).hostname or ""
    http.allow_hosts = (*http.allow_hosts, host)
    http.allow_origins = (*http.allow_origins, settings.public_url)
