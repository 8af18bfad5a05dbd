"""proto-mcp: the binary protocol between a client and the host (MCPMessage frames).

Its codec turns frames into the JSON-RPC lines of an ordinary stateful session and back, and
builds each tool's message descriptors. It imports `protocol` (the sans-IO core) and protobuf;
the transports that carry proto-mcp (stdio, the /proto-mcp WebSocket) import it.
"""
