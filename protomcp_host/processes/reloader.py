"""`protomcp dev`: watch the tool files' folders and ask supervisors to reload."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

import anyio
from watchfiles import Change, DefaultFilter, awatch


class Reloadable(Protocol):
    """What serves one tool file and reloads it when asked (a Supervisor, a Pool)."""

    file: Path

    @property
    def declared_files(self) -> tuple[Path, ...]:
        """The files its resources serve from (an app's HTML): a save of one reloads it."""
        ...

    def request_reload(self) -> None: ...


R = TypeVar("R", bound=Reloadable)

DEBOUNCE_MS = 30  # changes this close together are one change (an editor's save writes several)

SKIP_DIRS = (
    ".venv",
    "venv",
    "env",
    "__pycache__",
    ".git",
    "node_modules",
    ".mypy_cache",
    ".pytest_cache",
    ".tox",
)


class SourceFilter(DefaultFilter):
    """Python sources, whatever --watch globs name and the files the served resources declare
    (asked at each change: a reload may declare others); never virtualenvs or caches."""

    def __init__(self, globs: Iterable[str] = (), declared: Callable[[], Iterable[Path]] = tuple) -> None:
        super().__init__(ignore_dirs=SKIP_DIRS)
        self.globs = tuple(globs)
        self.declared = declared

    def __call__(self, change: Change, path: str) -> bool:
        if not super().__call__(change, path):
            return False
        if path.endswith(".py") or any(fnmatch.fnmatch(path, glob) for glob in self.globs):
            return True
        declared = set(self.declared())
        return bool(declared) and (Path(path) in declared or Path(path).resolve() in declared)


def targets(changed: Iterable[Path], supervisors: Iterable[R]) -> list[R]:
    """A changed tool file reloads its own process; any other change reloads every process
    whose folder tree holds it (it may be a module those tools import), or all of them
    when it lies outside every tool folder (a --watch path)."""
    supervisors = list(supervisors)
    chosen: dict[int, R] = {}
    for path in changed:
        own = [s for s in supervisors if s.file == path]
        if not own:
            own = [s for s in supervisors if path.is_relative_to(s.file.parent)] or supervisors
        chosen.update((id(s), s) for s in own)
    return list(chosen.values())


def watch_roots(files: Iterable[Path], extra: Iterable[str]) -> list[Path]:
    roots = {f.parent for f in files}
    for glob in extra:
        base = Path(glob.split("*", 1)[0] or ".").resolve()
        roots.add(base if base.is_dir() else base.parent)
    # Drop roots inside other roots: watching the outer one covers them.
    return sorted(r for r in roots if not any(r != o and r.is_relative_to(o) for o in roots))


async def watch_and_reload(
    supervisors: Sequence[Reloadable], globs: list[str], stop: anyio.Event, debounce_ms: int = DEBOUNCE_MS
) -> None:
    roots = watch_roots((s.file for s in supervisors), globs)

    def declared() -> Iterable[Path]:  # inside the tool files' folders (files= says so): watched
        return (path for s in supervisors for path in s.declared_files)

    watch_filter = SourceFilter(
        (str(Path(g).resolve()) if not Path(g).is_absolute() else g for g in globs), declared
    )
    async for changes in awatch(
        *roots, watch_filter=watch_filter, debounce=debounce_ms, step=10, stop_event=stop, recursive=True
    ):
        for supervisor in targets((Path(path) for _, path in changes), supervisors):
            supervisor.request_reload()


async def watch_folders(
    folders: list[Path], on_change: Callable[[], None], stop: anyio.Event, debounce_ms: int = DEBOUNCE_MS
) -> None:
    """Call `on_change` after any change under `folders` (every file counts: --skills)."""
    watch_filter = DefaultFilter(ignore_dirs=SKIP_DIRS)
    async for _ in awatch(
        *folders, watch_filter=watch_filter, debounce=debounce_ms, step=10, stop_event=stop, recursive=True
    ):
        on_change()
