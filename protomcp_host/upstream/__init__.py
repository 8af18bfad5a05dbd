"""Other MCP servers as sources of tools (`--upstream NAME=CMD|URL`), served beside the tool
processes. To the calls layer an upstream looks like a tool file's processes (`ToolSource`: start a
request for a `Leg`); it reports through `processes.events`. May import `processes` and
`protomcp_sdk.wire`; the official `mcp` client library is imported only when an upstream runs."""
