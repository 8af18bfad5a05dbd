"""telemetry/durations.py: the hand-kept duration histogram reads exactly as prometheus-client's
own Histogram fed the same values (text, names, labels, buckets), and the library's parser reads it."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from protomcp_host.telemetry.durations import Durations
from protomcp_host.telemetry.metrics import BUCKETS

pytestmark = pytest.mark.fast

NAME = "mcp_server_operation_duration_seconds"
LABELS = ["mcp_method_name", "gen_ai_tool_name", "error_type"]
# below the first bound, on bounds (le is inclusive), between them, above the last (+Inf)
VALUES = [0.0001, 0.0005, 0.00051, 0.001, 0.3, 1.0, 2.5, 300.0, 301.0, 0.0]


def test_it_reads_as_the_librarys_histogram() -> None:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    histogram = Histogram(NAME, "How long", LABELS, buckets=BUCKETS, registry=theirs)
    durations = Durations(NAME, "How long", LABELS, BUCKETS)
    ours.register(durations)  # type: ignore[arg-type]
    for labels in (("tools/call", "echo", ""), ("tools/list", "", "-32601")):
        for value in VALUES:
            histogram.labels(*labels).observe(value)
            durations.labels(*labels).observe(value)
    text = generate_latest(ours)
    expected = b"".join(  # (the host turns *_created off: disable_created_metrics)
        line for line in generate_latest(theirs).splitlines(keepends=True) if b"_created" not in line
    )
    assert text == expected
    samples = next(f for f in text_string_to_metric_families(text.decode()) if f.name == NAME).samples
    count = next(s for s in samples if s.name == NAME + "_count" and s.labels["gen_ai_tool_name"] == "echo")
    assert count.value == len(VALUES)
