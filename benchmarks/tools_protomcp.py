"""Benchmark tool file for protomcp: run with ``protomcp run benchmarks/tools_protomcp.py``."""

from protomcp_sdk import tool


@tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@tool
def blob(n: int) -> str:
    """Return a string of n 'x' characters."""
    return "x" * n
