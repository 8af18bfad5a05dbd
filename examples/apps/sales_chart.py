"""Sales by quarter, drawn as a bar chart where the client renders MCP Apps.

`quarterly_sales` shows the app `ui://sales/chart` (chart.html, beside this file) with its
result; a client without apps shows the same result as text. The chart's region buttons call
`region_sales`, a tool only the app may call (the client keeps it from the model).

    protomcp dev examples/apps/sales_chart.py --ui     # try it in the playground
    protomcp list examples/apps/sales_chart.py         # its tools, marked with their app
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from protomcp_sdk import UI, Context, resource, tool

CHART = Path(__file__).parent / "chart.html"
Quarter = Literal["Q1", "Q2", "Q3", "Q4"]
Region = Literal["all", "north", "south"]

SALES: dict[str, dict[str, int]] = {  # quarter -> region -> sales (thousands)
    "Q1": {"north": 120, "south": 95},
    "Q2": {"north": 140, "south": 110},
    "Q3": {"north": 90, "south": 150},
    "Q4": {"north": 170, "south": 130},
}


@resource("ui://sales/chart", files=["chart.html"], ui=UI(prefers_border=True))
def sales_chart() -> str:
    """The bar chart of a year's sales (an MCP App: HTML and inline script, no network)."""
    return CHART.read_text(encoding="utf-8")  # read at each call: a saved edit shows at once


def _year(region: Region) -> list[dict[str, object]]:
    return [
        {"quarter": quarter, "sales": sum(by_region.values()) if region == "all" else by_region[region]}
        for quarter, by_region in SALES.items()
    ]


@tool(ui="ui://sales/chart", read_only=True)
def quarterly_sales(ctx: Context, highlight: Quarter = "Q4") -> dict[str, object]:
    """A year's sales per quarter (thousands), with one quarter highlighted."""
    if not ctx.client_supports("io.modelcontextprotocol/ui"):
        ctx.debug("this client shows no apps: the result is all it sees")
    return {"region": "all", "highlight": highlight, "quarters": _year("all")}


@tool(ui="ui://sales/chart", visibility=["app"], read_only=True)
def region_sales(region: Region) -> dict[str, object]:
    """A year's sales per quarter in one region (called by the chart)."""
    return {"region": region, "highlight": None, "quarters": _year(region)}
