"""Which redirect URIs a client may register, and whether an authorization request's URI is one
of them: https, or http to a loopback address (RFC 8252 §7.3, where the port may differ, since
a native app listens on whatever port is free). Never a fragment, never user info."""

from __future__ import annotations

from urllib.parse import urlsplit

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


def redirect_problem(uri: str) -> str | None:
    """Why `uri` cannot be a redirect URI; None when it can."""
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 (raises for a port that is not a number)
    except ValueError:
        return f"{uri!r} is not a URL"
    if parts.fragment or "#" in uri:
        return f"{uri!r} has a fragment"
    if parts.username is not None or parts.password is not None:
        return f"{uri!r} has user information"
    if not parts.hostname:
        return f"{uri!r} names no host"
    if parts.scheme == "https":
        return None
    if parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS:
        return None
    return f"{uri!r} is neither https nor http to a loopback address"


def redirect_matches(registered: list[str], uri: str) -> bool:
    """`uri` is one of `registered`: exactly, or a loopback http URI with another port."""
    if uri in registered:
        return True
    try:
        asked = urlsplit(uri)
    except ValueError:
        return False
    if asked.scheme != "http" or asked.hostname not in LOOPBACK_HOSTS:
        return False
    for entry in registered:
        known = urlsplit(entry)
        if (
            known.scheme == "http"
            and known.hostname == asked.hostname
            and known.path == asked.path
            and known.query == asked.query
        ):
            return True
    return False
