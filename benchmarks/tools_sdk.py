"""The same tools as tools_protomcp.py, served by the official MCP Python SDK over stdio.

Run with ``python benchmarks/tools_sdk.py``. ``structured_output=False`` makes the SDK
answer with the same bytes as protomcp (a ``str`` return becomes one text block, without
a duplicate ``structuredContent`` copy), so both sides move the same payload.
"""

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-sdk", log_level="WARNING")


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool(structured_output=False)
def blob(n: int) -> str:
    """Return a string of n 'x' characters."""
    return "x" * n


if __name__ == "__main__":
    server.run()
