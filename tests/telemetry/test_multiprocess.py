"""The --workers metrics folder: a dead worker's counters and histograms folded into one archive
while scrapes read the folder. Worker files are written with prometheus-client's own MmapedDict
and keys, as a worker writes them."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.mmap_dict import MmapedDict, mmap_key

from protomcp_host.telemetry.multiprocess import FolderChanging, FolderCollector, forget_process

pytestmark = pytest.mark.fast

CALLS = mmap_key("calls", "calls_total", ["tool"], ["burn"], "calls")
DURATION = mmap_key("duration", "duration_bucket", ["tool", "le"], ["burn", "0.5"], "duration")


def _worker_files(folder: Path, pid: int, calls: float) -> None:
    """What a worker leaves: `calls` counted, one observation, a live gauge."""
    for typ, key, value in (("counter", CALLS, calls), ("histogram", DURATION, 1.0)):
        values = MmapedDict(str(folder / f"{typ}_{pid}.db"))
        values.write_value(key, value, 0.0)
        values.close()
    gauge = MmapedDict(str(folder / f"gauge_livesum_{pid}.db"))
    gauge.write_value(mmap_key("open", "open", [], [], "open"), 1.0, 0.0)
    gauge.close()


def _totals(folder: Path) -> dict[str, float]:
    samples = [s for metric in FolderCollector(str(folder)).collect() for s in metric.samples]
    return {name: sum(s.value for s in samples if s.name == name) for name in {s.name for s in samples}}


def test_a_dead_worker_leaves_its_counts_in_the_archive_and_no_file(tmp_path: Path) -> None:
    for pid in (101, 102, 103):
        _worker_files(tmp_path, pid, calls=pid - 100)
    for pid in (101, 102):
        forget_process(pid, str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == [
        "counter_103.db",
        "counter_archive.db",
        "gauge_livesum_103.db",
        "histogram_103.db",
        "histogram_archive.db",
    ]
    totals = _totals(tmp_path)
    assert totals["calls_total"] == 1 + 2 + 3
    assert totals["duration_count"] == 3 and totals["duration_bucket"] == 3
    assert totals["open"] == 1  # (the dead workers' gauges are gone)
    assert "protomcp_folded_worker" not in str(totals)


def test_a_scrape_during_the_folds_counts_each_value_once(tmp_path: Path) -> None:
    """Scrapes read the folder while one worker after another is folded: every one sees the same
    total (a fold never shows a worker twice, nor not at all)."""
    deaths = 150
    for pid in range(1000, 1000 + deaths):
        _worker_files(tmp_path, pid, calls=1.0)
    folding = threading.Thread(
        target=lambda: [forget_process(p, str(tmp_path)) for p in range(1000, 1000 + deaths)]
    )
    seen: list[float] = []
    gave_up = 0
    folding.start()
    try:
        while folding.is_alive():
            try:
                seen.append(_totals(tmp_path)["calls_total"])
            except FolderChanging:  # (deaths back to back here, far closer than a respawn allows)
                gave_up += 1
    finally:
        folding.join()
    assert seen or gave_up  # (scrapes ran during the folds)
    assert set(seen) <= {deaths}
    assert sorted(os.listdir(tmp_path)) == ["counter_archive.db", "histogram_archive.db"]
    assert _totals(tmp_path)["calls_total"] == deaths


def test_a_scrape_between_any_two_steps_of_a_fold_counts_each_value_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scrape just before and just after each rename and removal the fold makes."""
    for pid in (201, 202, 203):
        _worker_files(tmp_path, pid, calls=1.0)
    forget_process(201, str(tmp_path))  # (an archive to fold the next one into)
    seen: list[float] = []
    replace, remove = os.replace, os.remove

    def scraped_around(step: Any) -> Any:
        def around(*args: Any) -> None:
            seen.append(_totals(tmp_path)["calls_total"])
            step(*args)
            seen.append(_totals(tmp_path)["calls_total"])

        return around

    monkeypatch.setattr(os, "replace", scraped_around(replace))
    monkeypatch.setattr(os, "remove", scraped_around(remove))
    forget_process(202, str(tmp_path))
    assert len(seen) >= 6 and set(seen) == {3}  # (two renames of each archive and its removals)


def test_every_gauge_is_dropped_with_its_worker() -> None:
    """Only live* gauge files go with mark_process_dead; another mode would grow the folder."""
    from prometheus_client import Gauge

    from protomcp_host.telemetry.prometheus import PrometheusMetrics

    gauges = [value for value in vars(PrometheusMetrics()).values() if isinstance(value, Gauge)]
    assert len(gauges) == 3
    assert all(gauge._multiprocess_mode.startswith("live") for gauge in gauges)
