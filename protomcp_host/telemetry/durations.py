"""The request-duration histogram of one host process, kept by hand: a request adds 1 to one
bucket (found by bisection) and its seconds to a sum, with no lock (only the event loop's
thread records). prometheus-client's Histogram takes a lock twice and walks the buckets per
observation, about 0.7 µs a request; this is a quarter of it. A scrape reads a copy of each
series and exports it as the library's own histogram family, in the same format, names and
labels (so its parser reads it as before).

With --workers the library's Histogram is kept: its multiprocess mode is what lets any worker's
scrape read every worker's values (prometheus.py)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence

from prometheus_client.core import HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString


class Series:
    """One label set's buckets (the last one +Inf) and sum."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(self.bounds, seconds)] += 1  # (first bound >= seconds: its `le`)
        self.sum += seconds


class Durations:
    """A histogram with labels, collected like prometheus-client's (a registry's collector)."""

    def __init__(
        self, name: str, documentation: str, labelnames: Sequence[str], buckets: Sequence[float]
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = list(labelnames)
        self.bounds = tuple(float(bound) for bound in buckets)
        self.les = [floatToGoString(bound) for bound in self.bounds] + ["+Inf"]  # type: ignore[no-untyped-call]
        self._series: dict[tuple[str, ...], Series] = {}

    def labels(self, *values: str) -> Series:
        series = self._series.get(values)
        if series is None:
            series = self._series[values] = Series(self.bounds)
        return series

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for values, series in list(self._series.items()):
            counts, total = list(series.counts), series.sum  # (a copy: the loop goes on recording)
            cumulative, buckets = 0, []
            for le, count in zip(self.les, counts, strict=True):
                cumulative += count
                buckets.append((le, float(cumulative)))
            family.add_metric(list(values), buckets, total)
        yield family
