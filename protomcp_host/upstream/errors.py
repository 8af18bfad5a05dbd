"""What goes wrong with an upstream, and how it reads: the errors, the mcp client's error codes
that say what became of a request, and one line for an exception."""

from __future__ import annotations

from typing import Any

from protomcp_host.upstream.spec import EXTRA_HINT

CONNECTION_CLOSED = -32000  # mcp's code for a connection that closed under a request
INVALID_REQUEST = -32600


class UpstreamError(ValueError):
    """An upstream cannot be served (at start-up: the host does not start)."""


class OfferRefused(Exception):
    """The upstream answered, but its tools cannot be served beside the others (a name clash)."""


def import_mcp() -> Any:
    """The `mcp` client library, or an UpstreamError saying how to install it."""
    try:
        import mcp
        import mcp.client.session
    except ImportError as exc:
        raise UpstreamError(
            f"--upstream needs the official MCP client library ({exc}): {EXTRA_HINT}"
        ) from None
    return mcp


def session_gone(exc: Any) -> bool:
    """An HTTP 404 for the session (the upstream restarted or ended it), as the mcp client
    reports it: the server's own JSON-RPC error (protomcp: "Session not found"), or its
    stand-in "Session terminated"."""
    error = exc.error
    return error.code == INVALID_REQUEST and error.message.startswith(
        ("Session not found", "Session terminated")
    )


def first(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe(exc: BaseException) -> str:
    """One readable line for an exception (the first of a group)."""
    exc = first(exc)
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0] if text else type(exc).__name__
