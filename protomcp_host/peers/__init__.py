"""This host's peers: other hosts linked to it over the MCP-to-MCP bridge protocol (message
models, the WebSocket endpoint at /bridge, `--peer` links), their tools served here as
`PEERID_<name>` tools. "Peers" names the feature; "bridge" only the protocol between hosts (its
endpoint, messages and flags). To the calls layer a peer is one more source of tools
(`ToolSource`, reporting through `processes.events`); requests from peers run local tools
through an in-process session (`transports.ports.Sessions`). May import `processes`,
`transports.ports`, `transports.http.guard`, `protocol` (types), `calls.execution` (the
`ToolSource` type) and `protomcp_sdk.wire`; `websockets` is imported only when a link is
dialled."""
