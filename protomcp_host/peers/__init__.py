"""The MCP-to-MCP bridge protocol between hosts: message models, the WebSocket
endpoint at /bridge, `--peer` links, and peers' tools served as `PEERID_<name>` tools. To the
calls layer a peer is one more source of tools (`ToolSource`, reporting through
`processes.events`); requests from peers run local tools through an in-process session
(`transports.ports.Sessions`). May import `processes`, `transports.ports`, `protocol` (types)
and `protomcp_sdk.wire`; `websockets` is imported only when a link is dialled."""
