"""The options that make protomcp the authorization server (cli/oauth_options.py): what they
make, what they refuse, and the secrets they keep from the processes a run starts."""

from __future__ import annotations

import pytest

from protomcp_host.oauth.keys import new_key_pem
from protomcp_host.transports.http.oauth import OAuthResource
from tests.cli.test_run_settings import settings_of

pytestmark = pytest.mark.fast
SERVER = (
    *("run", "tools.py", "--transport", "http", "--public-url", "https://Tools.Example.com"),
    *("--oauth-provider", "oidc:https://idp.example/realms/x/", "--oauth-client-id-env", "CID"),
    *("--oauth-client-secret-env", "CSECRET"),
)


@pytest.fixture(autouse=True)
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CID", "the-app")
    monkeypatch.setenv("CSECRET", "the-secret")
    monkeypatch.setenv("SIGNING", new_key_pem().decode())


def test_the_options_make_the_server_and_its_resource_check(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_of(
        [*SERVER, "--oauth-signing-key-env", "SIGNING", "--oauth-scope", "s1"], monkeypatch
    )
    server = settings.oauth_server
    assert server is not None and settings.http is not None
    assert server.public_url == "https://tools.example.com" and server.issuer == "https://tools.example.com/"
    assert server.resource == "https://tools.example.com/mcp"
    assert server.callback_url == "https://tools.example.com/oauth/callback"
    assert server.provider.kind == "oidc" and server.provider.issuer == "https://idp.example/realms/x"
    assert (server.client_id, server.client_secret, server.scopes) == ("the-app", "the-secret", ("s1",))
    assert "the-secret" not in repr(server)
    auth = settings.http.auth
    assert (
        isinstance(auth, OAuthResource) and auth.issuer == server.issuer and auth.audience == server.resource
    )
    assert "tools.example.com" in settings.http.allow_hosts
    assert "https://tools.example.com" in settings.http.allow_origins
    assert {"CID", "CSECRET", "SIGNING"} <= settings.hidden_env  # tool processes never get them


@pytest.mark.parametrize(
    ("provider", "spec"),
    [("github", ("github", "")), ("github:https://GHE.example.com/", ("github", "https://GHE.example.com"))],
)
def test_github_is_github_com_or_an_enterprise_server(
    provider: str, spec: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = [*SERVER[:7], provider, *SERVER[8:]]
    server = settings_of(args, monkeypatch).oauth_server
    assert server is not None and (server.provider.kind, server.provider.issuer) == spec


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--oauth-provider", "github"], "needs --public-url"),
        (["--public-url", "https://t.example"], "only with --oauth-provider"),
        (["--oauth-cimd-allow", "h"], "only with --oauth-provider"),
        (["--public-url", "http://t.example", "--oauth-provider", "github"], "use https"),
        (["--public-url", "https://t.example/mcp", "--oauth-provider", "github"], "origin only"),
        (["--public-url", "https://t.example", "--oauth-provider", "okta"], "expected oidc:ISSUER-URL"),
        (
            ["--public-url", "https://t.example", "--oauth-provider", "oidc:http://idp.example"],
            "must be https",
        ),
        (
            ["--public-url", "https://t.example", "--oauth-provider", "github:http://ghe.example"],
            "must be https",
        ),
        (["--public-url", "https://t.example", "--oauth-provider", "github"], "needs --oauth-client-id-env"),
    ],
)
def test_what_cannot_be_served_is_a_usage_error(args: list[str], message: str) -> None:
    from click.testing import CliRunner

    from protomcp_host.cli.main import main

    result = CliRunner().invoke(main, ["run", "tools.py", "--transport", "http", *args])
    assert result.exit_code == 2 and message in result.output, result.output


@pytest.mark.parametrize(
    "more",
    [
        ["--oauth-jwks", "jwks.json", "--oauth-issuer", "https://x"],
        ["--auth-token-env", "CID"],
        ["--oauth-client-secret-env", "UNSET_VARIABLE"],
        ["--oauth-signing-key-env", "CID"],  # not a key
        ["--transport", "stdio"],
        ["--transport", "sse"],
    ],
)
def test_clashes_and_missing_secrets_are_usage_errors(more: list[str]) -> None:
    from click.testing import CliRunner

    from protomcp_host.cli.main import main

    result = CliRunner().invoke(main, [*SERVER, *more])
    assert result.exit_code == 2, result.output
