"""The report the typed report tools return (a helper module, not a tool file)."""

from report_pb2 import Report, ReportRequest, Row


def build_report(request: ReportRequest) -> Report:
    report = Report(title=request.title)
    report.rows.extend(Row(id=i, name=f"row {i}", score=i / 2) for i in range(request.rows))
    report.details.update({"source": "test", "pages": 2})
    report.made.FromSeconds(1_700_000_000)
    return report
