"""A tool process never outlives its host.

On Linux the kernel kills the tool process the moment the host dies (parent-death signal),
even when the process is stuck in C code or spinning; elsewhere, and as a second line, the
runtime exits once the host closes the frame pipe (bounded even with calls running)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

from protomcp_sdk.wire.env import HOST_PID_ENV

PR_SET_PDEATHSIG = 1


def die_with_host() -> None:
    """Ask for SIGKILL when the parent dies; exit now if it already has."""
    host_pid = os.environ.get(HOST_PID_ENV, "")
    if not host_pid.isdigit():
        return  # not started by a host (or by one that did not say who it is)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != int(host_pid):  # the host died before the signal was armed
        os._exit(1)
