"""A CPU-bound sync tool for the scale-out benchmark (benchmarks/scale.py): it holds the GIL of
its tool process for the whole call, so one process serves one call at a time."""

from protomcp_sdk import tool


@tool
def burn(n: int = 300_000) -> int:
    """Spin the CPU for n loop steps; returns a checksum."""
    total = 0
    for i in range(n):
        total += i * i
    return total % 1000
