"""The same tools as tools_protomcp.py, served by FastMCP over stdio.

Run with ``python benchmarks/tools_fastmcp.py``. ``output_schema=None`` makes FastMCP answer
with the same bytes as the other sides (a ``str`` return becomes one text block, without a
duplicate ``structuredContent`` copy); the banner is off so nothing but the protocol is
written.
"""

from fastmcp import FastMCP

server = FastMCP("bench-fastmcp")


@server.tool(output_schema=None)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool(output_schema=None)
def blob(n: int) -> str:
    """Return a string of n 'x' characters."""
    return "x" * n


if __name__ == "__main__":
    server.run("stdio", show_banner=False, log_level="WARNING")
