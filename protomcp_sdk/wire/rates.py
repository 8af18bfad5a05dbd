"""A rate limit's text, `N/second`, `N/minute` or `N/hour`: what `@tool(rate_limit=...)` and the
host's `--rate-limit TOOL=...` say, and what ToolDefinition.rate_limit carries between them.
Shared by the SDK (checked when the tool is declared) and the host (read from the definition and
the command line). No protobuf import."""

from __future__ import annotations

import re
from typing import NamedTuple

PERIODS = {"second": 1.0, "minute": 60.0, "hour": 3600.0}
MAX_CALLS = 1_000_000  # N: the log of one principal and tool holds up to N call times
FORM = f"N/second, N/minute or N/hour (N a whole number from 1 to {MAX_CALLS:,}), e.g. 10/minute"
_RATE = re.compile(r"\s*([0-9]+)\s*/\s*([a-z]+)\s*")


class Rate(NamedTuple):
    """At most `calls` calls in any `period` seconds (a sliding window)."""

    calls: int
    period: float
    unit: str  # "second", "minute" or "hour"

    def __str__(self) -> str:
        return f"{self.calls}/{self.unit}"


def parse_rate(text: str) -> Rate:
    """`text` as a Rate. Raises ValueError naming the expected form."""
    match = _RATE.fullmatch(text) if isinstance(text, str) else None
    if match is None or match.group(2) not in PERIODS or not 1 <= int(match.group(1)) <= MAX_CALLS:
        raise ValueError(f"rate limit {text!r}: expected {FORM}")
    unit = match.group(2)
    return Rate(int(match.group(1)), PERIODS[unit], unit)
