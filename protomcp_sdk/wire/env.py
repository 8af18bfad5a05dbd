"""Names the host and the tool process share through the environment and the file system.

The host sets the first four when it starts a tool process; the tool process reads them (and
the tuning knobs below, which the host passes through from its own environment)."""

from __future__ import annotations

FD_ENV = "PROTOMCP_FDS"
"""The tool process's pipe fds: "<read_fd>,<write_fd>"."""

HOST_PID_ENV = "PROTOMCP_HOST_PID"
"""The host's pid: the tool process dies with it (protomcp_sdk.runtime.lifeline)."""

SPOOL_ENV = "PROTOMCP_SPOOL"
"""The one directory the tool process may hand large payloads over in ("" or unset: inline)."""

SPOOL_PREFIX = "protomcp-spool-"
"""The name prefix of every such directory (on a memory file system); RawHeader.path names a
file in it, and the receiver deletes the file."""

SPOOL_DIR_ENV = "PROTOMCP_SPOOL_DIR"
"""Host side: the memory file system the spool directories are made in (default /dev/shm)."""

MAX_FRAME_ENV = "PROTOMCP_MAX_FRAME"
"""Largest frame accepted, in bytes, on both ends."""

CANCEL_GRACE_ENV = "PROTOMCP_CANCEL_GRACE"
"""Tool process: seconds a cancelled sync call may keep its thread before a warning names it."""

EXIT_GRACE_ENV = "PROTOMCP_EXIT_GRACE"
"""Tool process: seconds running calls may take to finish once the host closed its input."""

BLOCK_REPORT_ENV = "PROTOMCP_BLOCK_REPORT"
"""Tool process: seconds the event loop may be blocked before the watchdog names the tool."""

LIFESPAN_STOP_ENV = "PROTOMCP_LIFESPAN_STOP_TIMEOUT"
"""Seconds a @lifespan's code after its `yield` may run when the tool process stops (default 5)."""

ENVELOPE_ENV = "PROTOMCP_ENVELOPE"
"""Tool process: which classes build and read its Envelopes. "upb" (the default): protobuf's own;
"python": pure-Python ones (protomcp_sdk.wire.purepb), about 2 MB less resident memory per tool
process, for several microseconds more CPU per call (see benchmarks/README.md)."""
ENVELOPE_CHOICES = ("upb", "python")

READER_ENV = "PROTOMCP_READER"
"""Tool process: who reads the host's frames once the file is loaded. "auto" (the default): the
call threads when every tool is sync and the file has no middleware, else the event loop;
"threads" or "loop" to choose (see protomcp_sdk.runtime.reading)."""
