"""protomcp host: speaks MCP to AI clients and supervises tool processes."""

__version__ = "0.1.0"
