"""--workers: the folder where every worker records its metrics (prometheus-client's multiprocess
mode), as the parent sees it; light, since the parent imports no metrics library until a worker
dies."""

from __future__ import annotations

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"  # read by prometheus_client when a worker imports it


def forget_process(pid: int, folder: str) -> None:
    """A worker died: its live gauges (sessions, streams, store) no longer count; its counters stay,
    so totals never go back."""
    from prometheus_client.multiprocess import mark_process_dead

    mark_process_dead(pid, folder)  # type: ignore[no-untyped-call]
