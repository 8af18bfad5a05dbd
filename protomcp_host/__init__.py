"""protomcp host: speaks MCP to AI clients and supervises tool processes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    __version__: str  # the installed distribution's, read from its metadata on first use


def __getattr__(name: str) -> Any:
    if name != "__version__":
        raise AttributeError(f"module 'protomcp_host' has no attribute {name!r}")
    from protomcp_sdk.wire.version import installed_version

    globals()[name] = installed_version()
    return globals()[name]
