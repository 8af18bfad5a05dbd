"""A session's 2025-11-25 tasks, as the events a session returns.

The task records and requests are in tasks.py (TaskMethods, which speaks in Effects); this
is the session's side of them: the tool's taskSupport rule at tools/call, and the router's
reports (done, failed, status, the clock) turned into Send / CancelCall events.
"""

from __future__ import annotations

from typing import Any, Protocol

import orjson

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.catalog import Tool
from protomcp_host.protocol.events import Send
from protomcp_host.protocol.handshake import TASK_VERSIONS
from protomcp_host.protocol.records import Call, Event, ToolAnswer, error_result, first_text
from protomcp_host.protocol.tasks import Effects, TaskMethods


class TaskSession(Protocol):
    """What the task side reads of its session (session.Session)."""

    version: str | None
    tasks: TaskMethods

    def call_result(self, call: Call, answer: ToolAnswer) -> list[bytes]: ...
    def carry(self, effects: Effects) -> list[Event]: ...


class TaskEvents:
    """The task side of one session (`session.task_events`). It holds a weak reference to the
    session, so that a session made per request is still freed by reference counting."""

    __slots__ = ("session",)

    def __init__(self, session: TaskSession) -> None:
        self.session = session

    def support(self, request: rpc.Request, tool: Tool, task: Any) -> Event | None:
        """Enforce the tool's execution.taskSupport (-32601, as the spec prescribes)."""
        if self.session.version not in TASK_VERSIONS:
            return None  # older revisions know no tasks: every tool is called directly
        mode = tool.mcp.get("execution", {}).get("taskSupport", "forbidden")
        if task is not None and mode == "forbidden":
            message = (
                f"Tool '{tool.name}' cannot run as a task (its execution.taskSupport is forbidden); "
                "call it without params.task"
            )
        elif task is None and mode == "required":
            message = (
                f"Tool '{tool.name}' must run as a task (its execution.taskSupport is required); "
                "add params.task to the call"
            )
        elif task is not None and not isinstance(task, dict):
            return Send(rpc.error(request.id, rpc.INVALID_PARAMS, 'Invalid params: "task" must be an object'))
        else:
            return None
        return Send(rpc.error(request.id, rpc.METHOD_NOT_FOUND, message))

    def advance(self, now: float) -> list[Event]:
        """The time is `now`: tasks past their ttl expire."""
        tasks = self.session.tasks
        tasks.now = now
        if now < tasks.store.earliest(tasks.owner):  # the common case: nothing to do
            return []
        return self.session.carry(tasks.advance(now))

    def done(self, call: Call, answer: ToolAnswer, now: float) -> list[Event]:
        """A task's call answered: the task completes (or fails, for an isError result)."""
        assert call.task is not None
        tasks = self.session.tasks
        tasks.now = now
        outcome = b"".join(self.session.call_result(call, answer))
        if not outcome.endswith(b'"isError":true}'):
            return self.session.carry(tasks.finish(call.task, "completed", outcome, None))
        return self.session.carry(tasks.finish(call.task, "failed", outcome, first_text(outcome)))

    def failed(self, call: Call, message: str, now: float) -> list[Event]:
        """A task's call could not complete (its process died, it timed out, ...)."""
        assert call.task is not None
        tasks = self.session.tasks
        tasks.now = now
        outcome = orjson.dumps(error_result(message))
        return self.session.carry(tasks.finish(call.task, "failed", outcome, message))

    def status(self, call: Call, status: str, message: str, now: float) -> list[Event]:
        """The tool reported its task's status (working / input_required) or message."""
        if not call.task:
            return []
        return self.session.carry(self.session.tasks.report(call.task, status, message, now))
