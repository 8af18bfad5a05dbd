"""``python tools.py`` runs a tool file as a plain script: its decorators register the tools and
the script ends, silently. When it ends, say how to serve the file instead (once)."""

from __future__ import annotations

import atexit
import sys
from collections.abc import Callable

_noted = False


def note_direct_run(fn: Callable[..., object]) -> None:
    """Called for each decorated function; acts when it was defined in a script run directly
    (the tool process runs a file under another module name)."""
    global _noted
    if _noted or getattr(fn, "__module__", None) != "__main__":
        return
    _noted = True
    atexit.register(_say, sys.argv[0] if sys.argv and sys.argv[0] not in ("", "-c") else "tools.py")


def _say(script: str) -> None:
    print(
        f"{script} defines MCP tools, which python alone does not serve. Try:\n"
        f"  protomcp dev {script}            serve it (hot reload) and show how to add it to a client\n"
        f"  protomcp call {script} TOOL k=v  call one tool\n"
        f"  protomcp install claude-desktop {script}",
        file=sys.stderr,
    )
