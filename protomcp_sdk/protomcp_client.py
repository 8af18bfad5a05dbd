"""A small proto-mcp client: see protomcp_sdk.wire.protomcp_client, where it lives
because the host's own `protomcp call --binary` uses it too (the host imports only the SDK's
wire package)."""

from protomcp_sdk.wire.protomcp_client import (
    CallResult,
    ProtoMcpCallResult,
    ProtoMcpClient,
    ProtoMcpError,
    ToolInfo,
)

__all__ = ["CallResult", "ProtoMcpCallResult", "ProtoMcpClient", "ProtoMcpError", "ToolInfo"]
