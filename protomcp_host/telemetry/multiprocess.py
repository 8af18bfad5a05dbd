"""--workers: the folder where every worker records its metrics (prometheus-client's multiprocess
mode), its one archive of the dead workers' counts, and the scrape that reads it.

Each worker writes `counter_<pid>.db`, `histogram_<pid>.db` and `gauge_live*_<pid>.db`. When one
dies the parent (the only one to start workers, one death at a time, before the replacement
starts) drops its gauges and folds its counters and histograms into `counter_archive.db` /
`histogram_archive.db`, the library's own file format and keys, then removes its files: the
folder holds at most one file per live worker and one archive per type, however many died.

A scrape runs at the same time in another process. The archive is rewritten under a temporary
name and renamed over the old one; the new archive names the worker it just absorbed until that
worker's file is gone (a second rename drops the name), and a scrape skips the file so named. A
scrape that saw the folder change under it (an archive replaced, a file gone) reads it again.
So a scrape that answers counts each dead worker's values exactly once; one whose every read
(READ_ATTEMPTS) raced a death fails instead (FolderChanging: /metrics says 503).

Light for the parent: prometheus_client is imported only when a worker dies.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"  # read by prometheus_client when a worker imports it
FOLDED_TYPES = ("counter", "histogram")  # what a dead worker leaves that must keep counting
ARCHIVE = "archive"  # (in place of the pid: `counter_archive.db`, read by the library as a counter)
# the key, in the library's format, under which an archive names the worker it just absorbed
FOLDED_NAME = "protomcp_folded_worker"
FOLDED = json.dumps([FOLDED_NAME, FOLDED_NAME, {}, ""], sort_keys=True)
READ_ATTEMPTS = 5  # a scrape racing a death reads again; deaths are far apart (respawn backoff)


def _path(folder: str, typ: str, who: int | str) -> str:
    return os.path.join(folder, f"{typ}_{who}.db")


def _values(path: str) -> Iterable[tuple[str, float]]:
    from prometheus_client.mmap_dict import MmapedDict

    for key, value, _timestamp, _pos in MmapedDict.read_all_values_from_file(path):  # type: ignore[no-untyped-call]
        yield key, value


def _write_archive(folder: str, typ: str, totals: dict[str, float], folded: int | None) -> None:
    """Replace the archive in one rename (a scrape reads the old one or the new one, whole)."""
    from prometheus_client.mmap_dict import MmapedDict

    temporary = _path(folder, typ, ARCHIVE) + ".new"  # (not `*.db`: no scrape reads it)
    with contextlib.suppress(FileNotFoundError):
        os.remove(temporary)  # (MmapedDict appends to a file that exists)
    archive = MmapedDict(temporary)  # type: ignore[no-untyped-call]
    try:
        for key, value in totals.items():
            archive.write_value(key, value, 0.0)  # type: ignore[no-untyped-call]
        if folded is not None:
            archive.write_value(FOLDED, float(folded), 0.0)  # type: ignore[no-untyped-call]
    finally:
        archive.close()  # type: ignore[no-untyped-call]
    os.replace(temporary, _path(folder, typ, ARCHIVE))


def forget_process(pid: int, folder: str) -> None:
    """A worker died: its live gauges (sessions, streams, store) no longer count; its counters and
    histograms move into the archive, so totals never go back and its files go."""
    from prometheus_client.multiprocess import mark_process_dead

    mark_process_dead(pid, folder)  # type: ignore[no-untyped-call]  # (every gauge here is live*)
    for typ in FOLDED_TYPES:
        dead = _path(folder, typ, pid)
        if not os.path.exists(dead):
            continue
        totals: dict[str, float] = defaultdict(float)
        archive = _path(folder, typ, ARCHIVE)
        for path in (archive, dead) if os.path.exists(archive) else (dead,):
            for key, value in _values(path):
                if key != FOLDED:
                    totals[key] += value
        _write_archive(folder, typ, totals, folded=pid)  # (a scrape now skips `dead`)
        os.remove(dead)
        _write_archive(folder, typ, totals, folded=None)  # (so a later worker with this pid counts)


class FolderChanging(RuntimeError):
    """Workers died during every read of a scrape (the scrape fails rather than count wrong)."""


class FolderCollector:
    """The scrape's collector: every worker's files and the archives, each value counted once."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def collect(self) -> Any:
        for _ in range(READ_ATTEMPTS):
            with contextlib.suppress(FileNotFoundError):  # (a dead worker's file folded away)
                metrics = self._read()
                if metrics is not None:
                    return metrics
        raise FolderChanging(f"the metrics folder changed during each of {READ_ATTEMPTS} reads")

    def _read(self) -> Any:
        """The merged metrics, or None when an archive was replaced while they were read."""
        from prometheus_client.multiprocess import MultiProcessCollector

        with contextlib.ExitStack() as pins:
            # Each archive is held open, so its inode stays its own: the same inode at the path
            # after the merge means the merge read this very archive.
            held: dict[str, int | None] = {}
            skip: set[str] = set()
            for typ in FOLDED_TYPES:
                archive = _path(self.folder, typ, ARCHIVE)
                try:
                    pinned = pins.enter_context(open(archive, "rb"))
                except FileNotFoundError:
                    held[archive] = None
                    continue
                held[archive] = os.fstat(pinned.fileno()).st_ino
                folded = dict(_values(archive)).get(FOLDED)
                if folded is not None:
                    skip.add(_path(self.folder, typ, int(folded)))
            # listed after the archives were read: a file an archive absorbed is skipped, or gone
            files = [
                path
                for path in glob.glob(os.path.join(self.folder, "*.db"))
                if path not in skip and path not in held
            ]
            files += [archive for archive, inode in held.items() if inode is not None]
            metrics = MultiProcessCollector.merge(files)  # type: ignore[no-untyped-call]
            if any(_inode(archive) != inode for archive, inode in held.items()):
                return None
        return [metric for metric in metrics if metric.name != FOLDED_NAME]


def _inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None
