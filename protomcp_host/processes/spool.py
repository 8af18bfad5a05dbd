"""Payloads a tool process hands over as files: only from the one directory the host named
for it, only regular files, mapped and deleted at once."""

from __future__ import annotations

import contextlib
import mmap
import os
import stat


def read_spooled(path: str, spool_dir: str) -> list[bytes] | None:
    """Map a spool file and delete it (the mapping stays readable); None if impossible.

    Only a regular file directly inside `spool_dir` (the directory the host named for this
    process; a real directory, not a link) is touched: a path elsewhere is refused untouched."""
    if not spool_dir or os.path.dirname(path) != spool_dir or not spool_path_safe(spool_dir):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        data = mmap.mmap(fd, info.st_size, access=mmap.ACCESS_READ) if info.st_size else b""
    except OSError:
        return None
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
    return [data]  # type: ignore[list-item]  # a read-only mmap is a bytes-like buffer


def spool_path_safe(spool_dir: str) -> bool:
    """The spool directory is a real directory of ours (not a symlink to somewhere else)."""
    try:
        info = os.lstat(spool_dir)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
