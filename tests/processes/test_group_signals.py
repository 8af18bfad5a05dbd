"""A tool process's process group is signalled only while its leader (the tool process) is ours:
running, or exited and not reaped yet. Once reaped its pid may be reused by an unrelated process
(pid_max is 32768 on many systems), which must never get our SIGKILL. What the tool started in
its group still dies with it."""

from __future__ import annotations

import os
import select
import signal
from pathlib import Path

import anyio
import pytest

from protomcp_host.processes.settings import LaunchSettings
from protomcp_host.processes.tool_process import ToolProcess
from tests.processes.test_supervision import Events, alive

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="needs Linux 5.3+ (pidfd)"),
]


PIDFD_OPEN = getattr(os, "pidfd_open", None)  # (the test itself waits on one, whatever the host does)


def _dies(pid: int, timeout: float = 10) -> bool:
    """`pid` is gone within `timeout` (a pidfd becomes readable when it exits)."""
    try:
        pidfd = PIDFD_OPEN(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([pidfd], [], [], timeout)[0])
    finally:
        os.close(pidfd)


# Starts a helper in its own process group (the tool process is that group's leader), then exits.
EXITING = """
import os, subprocess, sys
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
open(__file__ + ".helper", "w").write(str(helper.pid))
os._exit(3)
"""


@pytest.mark.parametrize("waiter", ["pidfd", "thread"])
async def test_no_group_is_signalled_once_its_leader_was_reaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, waiter: str
) -> None:
    """ "thread": as where the OS has no pidfd (macOS), the exit waited for in a thread."""
    if waiter == "thread":
        monkeypatch.delattr(os, "pidfd_open")
    late: list[tuple[int, int]] = []  # (group, signal) sent once the leader was reaped
    killpg = os.killpg

    def checked(group: int, sig: int) -> None:
        try:  # the leader still ours (running, or a zombie)? WNOWAIT: this reaps nothing
            os.waitid(os.P_PID, group, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            late.append((group, sig))
        killpg(group, sig)

    monkeypatch.setattr(os, "killpg", checked)
    file = tmp_path / "exiting.py"
    file.write_text(EXITING)
    process = ToolProcess(file, Events([]), LaunchSettings())
    helper = 0
    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                await tg.start(process.run)
                await process.exited.wait()  # it exited, and was reaped
        helper = int((tmp_path / "exiting.py.helper").read_text())
        assert process.child.popen is not None and process.child.popen.returncode == 3
        assert _dies(helper)  # killed with its group, before the leader was reaped
        process.kill()  # what the supervisor may still do after: nothing is sent
        await process.stop(1)
        process.child.signal_group(signal.SIGTERM)
        assert late == []
    finally:
        if helper and alive(helper):
            os.kill(helper, signal.SIGKILL)
