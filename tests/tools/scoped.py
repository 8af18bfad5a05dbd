"""Tools, resources and prompts behind OAuth scopes (@tool(scopes=...)), beside open ones, and
a tool that reports who called it (ctx.principal)."""

from __future__ import annotations

from protomcp_sdk import Context, prompt, resource, tool


@tool
def read_notes() -> str:
    """Read the notes (open to every caller)."""
    return "the notes"


@tool(scopes={"files:write"})
def save(text: str) -> str:
    """Save a note (needs files:write)."""
    return f"saved {text}"


@tool(scopes={"files:write", "admin"})
def purge() -> str:
    """Delete every note (needs files:write and admin)."""
    return "purged"


@tool
def who_called(ctx: Context) -> dict[str, object]:
    """Who called, as the host verified it."""
    principal = ctx.principal
    if principal is None:
        return {"principal": None}
    return {
        "subject": principal.subject,
        "scopes": sorted(principal.scopes),
        "iss": principal.claims.get("iss"),
    }


@resource("notes://public")
def public_note() -> str:
    return "public"


@resource("notes://secret", scopes={"notes:read"})
def secret_note() -> str:
    return "secret"


@resource("notes://{name}/private", scopes={"notes:read"})
def private_note(name: str) -> str:
    return f"private {name}"


@resource("notes://me")
def my_note(ctx: Context) -> str:
    principal = ctx.principal
    return f"note of {principal.subject}" if principal is not None else "note of nobody"


@prompt
def hello(ctx: Context) -> str:
    principal = ctx.principal
    return f"Say hello to {principal.subject}" if principal is not None else "Say hello"


@prompt(scopes={"files:write"})
def draft(topic: str) -> str:
    return f"Draft a note about {topic}"
