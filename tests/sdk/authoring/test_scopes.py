"""`scopes=` on @tool, @resource and @prompt (checked when decorated, carried in the wire
definitions, shown by `inspect`), and ctx.principal (from the verified claims, as
RecordingContext serves it too)."""

from __future__ import annotations

from typing import Any

import pytest

from protomcp_sdk import Context, Principal, prompt, resource, tool
from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.runtime.inspection import resource_entry, tool_entry
from protomcp_sdk.testing import RecordingContext

pytestmark = [pytest.mark.fast, pytest.mark.usefixtures("clean_registry")]  # starts no process
# (The pure-Python Envelope carries the new fields as upb does: tests/sdk/wire/test_purepb.py
# holds every message of protomcp.proto against upb's, both ways.)


def test_scopes_reach_the_definitions_sorted() -> None:
    @tool(scopes={"files:write", "admin"})
    def save() -> str:
        return "x"

    @tool
    def read() -> str:
        return "x"

    @resource("notes://secret", scopes=["notes:read"])
    def secret() -> str:
        return "s"

    @resource("notes://{name}/private", scopes=("notes:read",))
    def private(name: str) -> str:
        return name

    @prompt(scopes={"files:write"})
    def draft() -> str:
        return "d"

    assert list(REGISTRY.tools["save"].definition().scopes) == ["admin", "files:write"]
    assert list(REGISTRY.tools["read"].definition().scopes) == []
    assert list(REGISTRY.resources["notes://secret"].resource_definition().scopes) == ["notes:read"]
    assert list(REGISTRY.templates["notes://{name}/private"].template_definition().scopes) == ["notes:read"]
    assert list(REGISTRY.prompts["draft"].definition().scopes) == ["files:write"]
    # what `protomcp inspect --json` reports
    assert tool_entry(REGISTRY.tools["save"])["scopes"] == ["admin", "files:write"]
    assert tool_entry(REGISTRY.tools["read"])["scopes"] == []
    assert resource_entry(REGISTRY.resources["notes://secret"])["scopes"] == ["notes:read"]


@pytest.mark.parametrize(
    ("scopes", "error", "problem"),
    [
        ("files:write", TypeError, r"scopes must be a set of strings, e.g. scopes=\{'files:write'\}"),
        ({"files write"}, ValueError, "'files write' is not an OAuth scope"),
        ({""}, ValueError, "'' is not an OAuth scope"),
        ({'a"b'}, ValueError, "is not an OAuth scope"),
        ({5}, ValueError, "5 is not an OAuth scope"),
    ],
)
def test_bad_scopes_are_refused_when_decorated(scopes: Any, error: type[Exception], problem: str) -> None:
    def f() -> str:
        return "x"

    with pytest.raises(error, match=problem):
        tool(scopes=scopes)(f)
    with pytest.raises(error, match=problem):
        prompt(scopes=scopes)(f)
    with pytest.raises(error, match=problem):
        resource("x://y", scopes=scopes)(f)


def test_principal_from_the_claims() -> None:
    ada = Principal.from_claims({"sub": "ada", "scope": "files:write  notes:read", "iss": "https://i"})
    assert ada.subject == "ada" and ada.scopes == {"files:write", "notes:read"}
    assert ada.claims["iss"] == "https://i"
    assert Principal.from_claims({"scp": ["a", "b", 3]}).scopes == {"a", "b"}
    assert Principal.from_claims({"scp": "a b"}).scopes == {"a", "b"}
    nobody = Principal.from_claims({"sub": 7, "scope": 5})
    assert nobody.subject is None and nobody.scopes == frozenset()
    assert "claims" not in repr(ada)  # (claims may be long; the subject and scopes say who)


async def test_recording_context_serves_the_principal() -> None:
    @tool
    async def whoami(ctx: Context) -> str:
        principal = ctx.principal
        return "nobody" if principal is None else f"{principal.subject} {sorted(principal.scopes)}"

    assert await whoami(RecordingContext()) == "nobody"
    ctx = RecordingContext(claims={"sub": "ada", "scope": "files:write"})
    assert await whoami(ctx) == "ada ['files:write']"
    assert ctx.auth == {"sub": "ada", "scope": "files:write"}
