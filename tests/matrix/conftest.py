"""The matrix modules' shared fixtures: each module gets its own OAuth issuer and HTTP hosts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.matrix import Auth, HttpHosts


@pytest.fixture(scope="module")
def auth(tmp_path_factory: pytest.TempPathFactory) -> Auth:
    """An OAuth issuer (keys, JWKS) for the module's HTTP hosts."""
    return Auth(tmp_path_factory.mktemp("oauth"))


@pytest.fixture(scope="module")
def http_hosts(auth: Auth) -> Iterator[HttpHosts]:
    """The module's HTTP hosts, one per middleware flavour, started when first asked for."""
    hosts = HttpHosts(auth)
    yield hosts
    hosts.close()
