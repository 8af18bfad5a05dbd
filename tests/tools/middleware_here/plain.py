"""A tool file without middleware, served beside here.py: its calls cross to here.py's process
for every middleware (one frame per phase for outer, inner and passthrough together)."""

from protomcp_sdk import tool


@tool
def echo_plain(text: str) -> str:
    return text
