"""Which redirect URIs a client may register, and whether an authorization request's URI is one
of them: https; http to a loopback address (RFC 8252 §7.3, where the port may differ, since a
native app listens on whatever port is free); or a native app's private-use scheme (RFC 8252
§7.1, e.g. cursor://...), never one a browser would run or read itself. Never a fragment, never
user information."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
# Schemes a browser handles itself (or that run code): never a private-use redirect.
BROWSER_SCHEMES = frozenset(
    {
        "http",
        "https",
        "javascript",
        "data",
        "file",
        "vbscript",
        "about",
        "blob",
        "ftp",
        "ws",
        "wss",
        "view-source",
    }
)
_SCHEME = re.compile(r"[a-z][a-z0-9+.\-]*")  # RFC 3986 §3.1


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
    scheme = parts.scheme.lower()
    if _SCHEME.fullmatch(scheme) and scheme not in BROWSER_SCHEMES and uri[len(scheme) + 1 :].strip():
        return None  # a native app's own scheme (RFC 8252 §7.1)
    if not parts.hostname:
        return f"{uri!r} names no host"
    if parts.scheme == "https":
        return None
    if parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS:
        return None
    return f"{uri!r} is neither https, nor http to a loopback address, nor an app's own scheme"


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
