"""How the processes of one tool file are started and kept serving, typed and frozen.

LaunchSettings says how one process is started (launch, ChildProcess, ToolProcess);
ProcessSettings adds how the Supervisor (and a Pool of them) keeps the file served. The host
builds them from the run's settings (RunSettings.process_settings), whose defaults for these
values are the ones here. No imports beyond the standard library: settings.py reads them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LaunchSettings:
    """How a tool process is started. (Not slotted: `LaunchSettings.python` is the default.)"""

    python: str = sys.executable  # the interpreter that runs the tool file
    # the variables the host reads secrets from: kept out of the process's environment
    hidden_env: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ProcessSettings:
    """How a Supervisor keeps one tool file served. (Not slotted: the class attributes are the
    defaults, for RunSettings.)"""

    launch: LaunchSettings = field(default_factory=LaunchSettings)  # interpreter and environment
    startup_timeout: float = 30.0  # seconds a tool file may take to import and list its tools
    heartbeat_timeout: float = 15.0  # seconds a heartbeat may stay unanswered (0: no heartbeat)
    retire_timeout: float = 30.0  # seconds a replaced (outdated) process may take to finish its calls
    restart_wait: float = 10.0  # seconds a request waits for a restarting process
    standby: bool = False  # keep a warm process that has imported the SDK, for fast reloads (dev)
    wait_for_fix: bool = False  # a file that fails to load serves no tools until saved again (dev)
    # told (file label, "started" | "crashed" | "reloaded") of each tool process event (metrics)
    lifecycle: Callable[[str, str], None] | None = None
