"""A typed tool whose messages import google/protobuf files (Struct, Timestamp)."""

from report_build import build_report
from report_pb2 import Report, ReportRequest

from protomcp_sdk import tool


@tool
def make_report(request: ReportRequest) -> Report:
    """A report of `rows` rows."""
    return build_report(request)
