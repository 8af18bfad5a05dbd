"""Handing large payloads to the host as files on a memory file system."""

from __future__ import annotations

import os
import shutil
import tempfile

from protomcp_sdk import wire


class Spool:
    """Hands large payloads to the host as files on a memory file system (/dev/shm), in a
    private directory made on first use. The host deletes each file once it has mapped it;
    the directory goes when the process ends."""

    def __init__(self) -> None:
        self.root = os.environ.get("PROTOMCP_SPOOL_DIR", "/dev/shm")  # "" = always inline
        self.directory: str | None = None
        self.usable = bool(self.root) and os.path.isdir(self.root) and os.access(self.root, os.W_OK)

    def put(self, name: str, payload: bytes) -> str:
        """The path of a new file holding payload, or "" when spooling is not possible."""
        if not self.usable:
            return ""
        try:
            if self.directory is None:
                self.directory = tempfile.mkdtemp(prefix=wire.SPOOL_PREFIX, dir=self.root)
            path = os.path.join(self.directory, f"{name}.json")
            with open(path, "wb") as file:
                file.write(payload)
        except OSError:
            self.usable = False  # full or read-only: send inline from now on
            return ""
        return path

    def remove(self) -> None:
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
