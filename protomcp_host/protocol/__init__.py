"""The sans-IO MCP core: JSON-RPC rules, lifecycle, per-session state, tool lists, resources/prompts,
tasks. No I/O, no protobuf; imports nothing from the rest of the host."""
