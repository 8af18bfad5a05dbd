"""`protomcp logs [FILE]`: list the running dev hosts, or follow what the dev hosts serving FILE
do, live, from their journals (cli/devjournal.py), across host restarts, until Ctrl+C."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from protomcp_host.cli.devjournal import DevHost, Follower, running_or_not

POLL = 0.2  # seconds between looks at the journals (plain files: no watcher needed)


def describe_hosts(folder: Path) -> list[str]:
    """Lines that list the running dev hosts (with their playground URL)."""
    running = [host for host in running_or_not(folder) if host.running]
    if not running:
        return [
            "No dev host is running. An AI client starts one when its config runs `protomcp dev FILE` "
            "(protomcp install CLIENT FILE --dev)."
        ]
    lines = []
    for host in running:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(host.started))
        lines.append(f"pid {host.pid}, since {started}: {', '.join(host.files)}")
        if host.url:
            lines.append(f"  playground: {host.url}")
    lines.append("Follow one with: protomcp logs FILE")
    return lines


def serving(folder: Path, file: Path) -> list[DevHost]:
    """The dev hosts (running or not) whose files include `file`, oldest first."""
    wanted = str(file.resolve())
    return [host for host in running_or_not(folder) if wanted in host.files]


def follow(
    folder: Path,
    file: Path,
    say: Callable[[str], None],
    *,
    tail: int = 20,
    keep_going: Callable[[], bool] = lambda: True,
    poll: float = POLL,
) -> None:
    """Print the last `tail` records of the latest host serving `file`, then every record of the
    hosts serving it as they come; wait (saying so) while none runs. While several run (two
    clients, each with its dev host of the file), each line names its host's pid."""
    followers: dict[int, Follower] = {}
    hosts = serving(folder, file)
    latest = hosts[-1].pid if hosts else None
    tagged = sum(host.running for host in hosts) > 1
    for host in hosts:  # what was there before: only the latest host's tail
        follower = followers[host.pid] = Follower(host.journal, tail if host.pid == latest else 0)
        for record in follower.read():
            say(render(record, host.pid, tagged))
    if hosts and hosts[-1].running and hosts[-1].url:  # (its record may be older than the tail)
        say(f"-- playground of dev host {latest}: {hosts[-1].url}")
    waiting = False
    while keep_going():
        hosts = serving(folder, file)
        running = any(host.running for host in hosts)
        tagged = sum(host.running for host in hosts) > 1
        for host in hosts:
            known = followers.get(host.pid)
            if known is None:
                known = followers[host.pid] = Follower(host.journal)
            for record in known.read():
                say(render(record, host.pid, tagged))
        if not running and not waiting:
            say(f"-- waiting for a dev host serving {file.resolve()} (Ctrl+C quits)")
        waiting = not running
        time.sleep(poll)
    for follower in followers.values():
        follower.close()


def render(record: dict[str, Any], pid: int, tagged: bool = False) -> str:
    """One record for a person: time, what happened, and the detail (tracebacks whole);
    `tagged`: also the pid of the host it came from."""
    clock = time.strftime("%H:%M:%S", time.localtime(record.get("t", 0)))
    kind = record.get("kind")
    head = f"{clock} [host {pid}] " if tagged else f"{clock} "
    if kind == "start":
        text = f"-- dev host {pid} started (protomcp {record.get('version')}): {', '.join(record['files'])}"
    elif kind == "stopping":
        text = f"-- dev host {pid} stopping: calls in flight may finish"
    elif kind == "stop":
        text = f"-- dev host {pid} stopped"
    elif kind == "loaded":
        what = "loaded" if record.get("initial") else "reloaded"
        changes = "; ".join(
            f"{key} {', '.join(record[key])}" for key in ("added", "changed", "removed") if record.get(key)
        )
        text = f"{what} {record['label']}: {', '.join(record.get('tools') or []) or 'no tools'}"
        text += f" ({changes})" if changes and not record.get("initial") else ""
    elif kind == "problem":
        message = str(record.get("message"))
        text = message if message.startswith("warning: ") else f"problem: {message}"
    elif kind == "playground":
        text = f"playground: {record.get('url')}"
    elif kind == "call":
        text = f"call #{record.get('id')} {record.get('tool')} {record.get('arguments')}"
    elif kind == "answer":
        outcome = "error" if record.get("error") else "ok"
        text = f"answer #{record.get('id')} {record.get('tool')} {outcome} in {record.get('ms')} ms: "
        text += str(record.get("text", ""))
    elif kind in ("output", "printed"):
        text = f"[{record.get('label')}] {record.get('line')}"
    elif kind == "log":
        source = f" {record.get('logger')}" if record.get("logger") else ""
        text = f"[{record.get('label')}] {record.get('level')}{source}: {record.get('data')}"
    else:
        text = f"{kind}: {record}"
    return head + text
