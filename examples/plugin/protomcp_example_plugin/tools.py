"""Unit conversion tools, shipped as an installable plugin.

Served with `protomcp run --plugin unit-converter` once installed, or straight from a
checkout with `protomcp run -m protomcp_example_plugin.tools` (relative imports work:
the module is loaded as part of its package).
"""

from typing import Literal

from protomcp_sdk import tool

from .units import LENGTHS_IN_METRES

Unit = Literal["m", "km", "cm", "mi", "ft", "in"]


@tool(read_only=True)
def convert_length(value: float, from_unit: Unit, to_unit: Unit) -> float:
    """Convert a length between metric and imperial units."""
    return value * LENGTHS_IN_METRES[from_unit] / LENGTHS_IN_METRES[to_unit]
