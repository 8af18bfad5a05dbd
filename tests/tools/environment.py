"""Tool file for the environment tests: what a tool process sees of the host's environment."""

import os

from protomcp_sdk import tool


@tool
def getenv(name: str) -> str:
    """The value of the environment variable NAME in the tool process, or "<unset>"."""
    return os.environ.get(name, "<unset>")
