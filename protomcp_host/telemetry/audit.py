"""--audit-log FILE|-: one JSON line per tool call.

Each line: `time` (RFC 3339, UTC, when the call ended), `principal` (the OAuth subject, as
ctx.principal.subject has it; over stdio the local user; null when no one signed in), `client`
(clientInfo "name/version" when the client said it, else the OAuth client id), `tool`, `outcome`
(ok, error: an isError result, refused: a JSON-RPC error such as an unknown tool or invalid
arguments, cancelled; input_required: the call waits for the client's answers, and its retry is a
line of its own; task: it goes on as a task), `duration_ms`, and `arguments` only with --audit-arguments.
A call that goes on as a task has a second line when the task ends on this host: `outcome` ok, error
(failed), cancelled or expired (its ttl passed while it ran), `duration_ms` from the task's creation;
both lines name it in `task`.

A FILE is opened with O_APPEND and each line is one write(): the workers of --workers append to
the same file without tearing each other's lines. `-` is stderr when the MCP stream is stdout
(--transport stdio), stdout otherwise.
"""

from __future__ import annotations

import contextlib
import os
import time
from datetime import UTC, datetime
from typing import Any

import orjson

OK, ERROR, REFUSED, CANCELLED = "ok", "error", "refused", "cancelled"
RATE_LIMITED = "rate_limited"  # an isError result: the call was over its --rate-limit and did not run
INPUT_REQUIRED, TASK = "input_required", "task"  # answered before the tool's result (see metering)
EXPIRED = "expired"  # a task dropped for its ttl while its call ran
TASK_OUTCOMES = {"completed": OK, "failed": ERROR, "cancelled": CANCELLED}  # a task's end, by status
TASK_CLIENTS = 10_000  # the clients of running tasks remembered for their last line (oldest go)


class AuditLog:
    def __init__(self, fd: int, *, arguments: bool = False, local_user: str | None = None) -> None:
        self.fd = fd
        self.arguments = arguments  # --audit-arguments: the call's arguments are written too
        self.local_user = local_user  # stdio: who runs the host is who calls
        self.task_clients: dict[str, str | None] = {}  # task id -> its call's client, until it ends

    @classmethod
    def open(cls, target: str, *, stdio: bool, arguments: bool = False) -> AuditLog:
        """The log `target` names (`-`: stderr over stdio, stdout otherwise). Raises OSError."""
        if target == "-":
            fd = 2 if stdio else 1
        else:
            fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        return cls(fd, arguments=arguments, local_user=_local_user() if stdio else None)

    def principal(self, auth: dict[str, Any] | None) -> str | None:
        """Who called: the token's subject, else (stdio) the local user."""
        if auth:
            subject = auth.get("sub")
            return subject if isinstance(subject, str) else None
        return self.local_user

    def write(
        self,
        principal: str | None,
        client: str | None,
        tool: str,
        outcome: str,
        seconds: float,
        arguments: Any = None,
        task: str = "",
    ) -> None:
        record: dict[str, Any] = {
            "time": _now(),
            "principal": principal,
            "client": client,
            "tool": tool,
            "outcome": outcome,
            "duration_ms": round(seconds * 1000, 3),
        }
        if task:
            record["task"] = task
        if self.arguments:
            record["arguments"] = arguments
        line = orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
        # (a full disk or a closed stderr must not fail the call: its answer is sent already; the
        # file stays open for the host's life)
        with contextlib.suppress(OSError):
            os.write(self.fd, line)  # one write: appended whole (O_APPEND), whoever else appends

    def task_started(self, task: str, client: str | None) -> None:
        """A call went on as `task`: its client is kept for the line its end writes."""
        clients = self.task_clients
        if len(clients) >= TASK_CLIENTS:
            del clients[next(iter(clients))]
        clients[task] = client


def client_name(info: Any, auth: dict[str, Any] | None) -> str | None:
    """The client as the audit log names it: clientInfo "name/version", else the OAuth client id."""
    if isinstance(info, dict) and isinstance(info.get("name"), str):
        version = info.get("version")
        return f"{info['name']}/{version}" if isinstance(version, str) and version else info["name"]
    if auth:
        client = auth.get("client_id") or auth.get("azp")
        return client if isinstance(client, str) else None
    return None


def _now() -> str:
    return datetime.fromtimestamp(time.time(), UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _local_user() -> str | None:
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return None


LOG: AuditLog | None = None  # the run's audit log (--audit-log), if it keeps one


def start(log: AuditLog) -> None:
    global LOG
    LOG = log
