"""A tool with 10,000 parameters: its JSON Schema is large enough that checking it costs seconds."""

from protomcp_sdk import tool

WIDTH = 10_000
_source = "def wide({}) -> int:\n    return p0\n".format(", ".join(f"p{i}: int = 0" for i in range(WIDTH)))
_namespace: dict = {}
exec(_source, _namespace)  # a signature this wide is not written by hand
wide = tool(_namespace["wide"])


@tool
def narrow() -> str:
    """A small tool next to it."""
    return "narrow"
