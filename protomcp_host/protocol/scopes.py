"""OAuth scopes per tool, resource and prompt (``@tool(scopes=...)``), sans-IO.

An entry with scopes is hidden from, and refused to, a caller whose access token does not
grant all of them. The caller is known by its verified token claims (``session.auth``, set by
the HTTP transport under OAuth); without claims — stdio, a shared bearer token, no auth —
nothing is restricted: scopes are an OAuth notion, and those callers hold no token with any.

Scopes are compared as exact strings: a token granting ``files`` does not grant
``files:write`` (a provider whose scopes form a hierarchy puts every implied scope in its
tokens, or the tool names the broad one).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Protocol, TypeVar


class Scoped(Protocol):
    @property
    def scopes(self) -> frozenset[str]: ...


S = TypeVar("S", bound=Scoped)


def granted(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes a token's claims grant: ``scope``, a string of space-separated scopes (RFC
    9068), or without it ``scp``, such a string or a list of strings. Any other shape grants
    none (the resource server refuses such tokens before they get here)."""
    value = claims["scope"] if "scope" in claims else claims.get("scp", "")
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        return frozenset(scope for scope in value if isinstance(scope, str))
    return frozenset()


def lacking(required: Collection[str], claims: Mapping[str, Any] | None) -> list[str]:
    """The scopes of `required` the caller's token does not grant, sorted; none without claims."""
    if not required or claims is None:
        return []
    have = granted(claims)
    return sorted(scope for scope in required if scope not in have)


def allowed(entry: Scoped, claims: Mapping[str, Any] | None) -> bool:
    return not entry.scopes or not lacking(entry.scopes, claims)


def restricts(entries: Iterable[Scoped], claims: Mapping[str, Any] | None) -> bool:
    """Whether some of these entries may be hidden from this caller (a listing must be filtered)."""
    return claims is not None and any(entry.scopes for entry in entries)


def seen_by(entries: list[S], claims: Mapping[str, Any] | None) -> list[S]:
    """The entries this caller may see."""
    if not restricts(entries, claims):
        return entries
    return [entry for entry in entries if allowed(entry, claims)]


def declared_scopes(*listings: Iterable[Scoped]) -> frozenset[str]:
    """Every scope the entries of these listings (the host's tools, resources, templates and
    prompts) need: the authorization server grants them to clients that ask (step-up)."""
    return frozenset(scope for listed in listings for entry in listed for scope in entry.scopes)


def insufficient(what: str, missing: Collection[str]) -> str:
    """The refusal's text: `what` ("Tool 'save'") needs scopes the token does not grant."""
    plural = "s" if len(missing) > 1 else ""
    named = " ".join(missing)
    return f"Forbidden: {what} needs the scope{plural} {named}, which the access token does not grant"
