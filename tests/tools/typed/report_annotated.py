"""A typed tool and a middleware of the same file that reads and changes results (phase
"after"): its process runs the middleware around the tool."""

from report_build import build_report
from report_pb2 import Report, ReportRequest

from protomcp_sdk import ToolResult, middleware, tool


@tool
def annotated_report(request: ReportRequest) -> Report:
    """A report of `rows` rows; this file's middleware changes its title."""
    return build_report(request)


@middleware(priority=50)
async def annotate(call, call_next):  # type: ignore[no-untyped-def]
    result = await call_next(call)
    if isinstance(result.structured, dict) and "title" in result.structured:
        structured = {**result.structured, "title": result.structured["title"] + " (annotated)"}
        return ToolResult(content=result.content, structured=structured)
    return result
