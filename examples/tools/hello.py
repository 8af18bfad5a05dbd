"""The smallest tool file: one function becomes one MCP tool.

Try it:  protomcp call examples/tools/hello.py hello --args '{"name": "Ada"}'
Serve it: protomcp run examples/tools/hello.py
"""

from protomcp_sdk import tool


@tool
def hello(name: str) -> str:
    """Greet someone by name."""
    return f"Hello, {name}!"
