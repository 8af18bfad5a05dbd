"""Calls between MCP sessions and tool processes: routing, per-call executions, middleware,
forwarded requests and Envelope translation. May import `protocol`, `processes` and `protomcp_sdk.wire`."""
