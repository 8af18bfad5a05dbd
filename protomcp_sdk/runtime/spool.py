"""Handing large payloads to the host as files on a memory file system."""

from __future__ import annotations

import contextlib
import os
import shutil

from protomcp_sdk.wire.env import SPOOL_ENV


class Spool:
    """Hands large payloads to the host as files in the directory the host named for this
    process (on a memory file system), made on first use. The host accepts files from that
    directory only, deletes each once it has mapped it, and removes the directory when the
    process is gone."""

    def __init__(self) -> None:
        self.directory = os.environ.get(SPOOL_ENV, "")
        self.usable = os.path.isabs(self.directory)
        self.made = False

    def put(self, name: str, payload: bytes) -> str:
        """The path of a new file holding payload, or "" when spooling is not possible."""
        if not self.usable:
            return ""
        try:
            if not self.made:
                os.mkdir(self.directory, 0o700)  # fails if anything is already there
                self.made = True
            path = os.path.join(self.directory, f"{name}.json")
            with open(path, "wb") as file:
                file.write(payload)
        except OSError:
            self.usable = False  # full, read-only, taken: send inline from now on
            return ""
        return path

    def remove(self, *, everything: bool = True) -> None:
        """At exit. Files still in the directory hold answers the host has not read yet (it
        deletes each once mapped, and the directory once this process is gone): unless
        `everything` (the host is gone), only an empty directory is removed."""
        if not self.made:
            return
        if everything:
            shutil.rmtree(self.directory, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.rmdir(self.directory)
