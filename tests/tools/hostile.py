"""Tool file for the hardening tests: tools that misbehave the ways real code does."""

import threading
from typing import Any

from protomcp_sdk import Context, tool

_gates: dict[str, threading.Event] = {}
_lock = threading.Lock()


def _gate(key: str) -> threading.Event:
    with _lock:
        return _gates.setdefault(key, threading.Event())


@tool
def depth(value: Any) -> int:
    """How deeply the argument nests."""
    level = 0
    while isinstance(value, (list, dict)) and value:
        value = value[0] if isinstance(value, list) else next(iter(value.values()))
        level += 1
    return level


@tool
def quick() -> str:
    """Answer at once (a sync tool, to show the pool is not starved)."""
    return "quick"


@tool
def open_gate(key: str) -> str:
    """Release the sync tools waiting on key."""
    _gate(key).set()
    return "open"


@tool
def blocked(key: str, ctx: Context) -> str:
    """Block a worker thread, ignoring ctx.cancelled, until open_gate(key)."""
    _gate(key).wait(120)
    return f"unblocked {key}"


class Escape(BaseException):
    """Not an Exception: slips past `except Exception`."""


_RAISE = {
    "SystemExit": lambda: SystemExit(3),
    "KeyboardInterrupt": KeyboardInterrupt,
    "GeneratorExit": GeneratorExit,
    "Escape": lambda: Escape("out"),
}


@tool
def raise_base(kind: str) -> str:
    """Raise a BaseException that is not an Exception, from a worker thread."""
    raise _RAISE[kind]()


@tool
async def raise_base_async(kind: str) -> str:
    """The same from an async tool."""
    raise _RAISE[kind]()


@tool
def spin(key: str) -> str:
    """Busy-loop (holding a thread, ignoring ctx.cancelled) until open_gate(key)."""
    gate = _gate(key)
    while not gate.is_set():
        sum(range(1000))
    return f"spun {key}"


@tool
def spin_loud(key: str) -> str:
    """Say this process's pid on stderr, then spin until open_gate(key)."""
    import os
    import sys

    print(f"spinning in pid {os.getpid()}", file=sys.stderr, flush=True)
    return spin(key)


@tool
def shout(times: int, ctx: Context) -> str:
    """Send `times` log messages as fast as possible."""
    for i in range(times):
        ctx.info(f"message {i}")
    return "shouted"


@tool
def chatter(lines: int, width: int) -> str:
    """Print `lines` lines of `width` characters on stderr."""
    import sys

    row = "x" * width
    for _ in range(lines):
        print(row, file=sys.stderr)
    sys.stderr.flush()
    return "chattered"


def _lookup(table: dict[str, int], key: str) -> int:
    return table[key]


@tool
def boom() -> int:
    """Fail deep in the user's own code."""
    return _lookup({}, "missing")


@tool
def forge_spool(path: str, link_spool_dir_to: str = "") -> str:
    """Name a file the host should not touch in a spool frame, as a broken tool process could
    (optionally after making the process's spool directory a symlink to somewhere else)."""
    import os

    from protomcp_sdk import wire

    if link_spool_dir_to:
        os.symlink(link_spool_dir_to, os.environ["PROTOMCP_SPOOL"])
        path = os.path.join(os.environ["PROTOMCP_SPOOL"], os.path.basename(path))
    write_fd = int(os.environ[wire.FD_ENV].split(",")[1])
    os.write(write_fd, wire.raw_header("424242", 2, wire.RAW_RESULT_JSON, path))  # one small, atomic write
    return "forged"


@tool
async def hog_loop(key: str) -> str:
    """An async tool that blocks the event loop (never awaits) until open_gate(key)."""
    gate = _gate(key)
    while not gate.is_set():
        sum(range(1000))
    return "hogged"


@tool
async def pid_async() -> int:
    """This tool process's pid."""
    import os

    return os.getpid()


@tool
def fork_and_crash(leak_frame_fd: bool = False) -> str:
    """Fork a child that lingers, then crash this process (exit status 3). With leak_frame_fd
    the child keeps a copy of the frame pipe, as a fork the SDK does not see would."""
    import os
    import sys
    import time

    from protomcp_sdk import wire

    if leak_frame_fd:
        os.dup(int(os.environ[wire.FD_ENV].split(",")[1]))  # survives the fork in the child
    pid = os.fork()
    if pid == 0:
        print(f"forked child {os.getpid()}", file=sys.stderr, flush=True)
        time.sleep(120)
        os._exit(0)
    os._exit(3)


@tool
def raw_then_wait(size: int, key: str, ctx: Context) -> str:
    """Send a raw result payload for this call ahead of its result, then wait (ignoring
    cancellation) until open_gate(key): the host holds the payload in between."""
    import gc

    from protomcp_sdk import wire

    payload = b'[{"type":"text","text":"' + b"x" * size + b'"}]'
    # Through the process's writer, whose lock keeps other threads' frames from cutting in.
    [process] = [o for o in gc.get_objects() if type(o).__name__ == "ProcessRuntime"]
    process.writer.send_pieces(wire.encode_raw(ctx.request_id, payload, wire.RAW_RESULT_JSON))
    _gate(key).wait(120)
    return "late"
