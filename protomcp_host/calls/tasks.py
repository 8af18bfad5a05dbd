"""The 2026-07-28 tasks extension (``io.modelcontextprotocol/tasks``) on the host's side.

A modern-era ``tools/call`` that became a task (``ModernEra._as_task``) has been answered
already; its call runs on with a ``TaskRunner`` as its session side instead of the Router of the
connection that made it (an HTTP request's connection ends with its answer). The runner keeps
the call's outcome in the task (``completed`` with the CallToolResult, even an ``isError`` one;
``failed`` with a JSON-RPC error when the call could not complete: crash, timeout, reload),
turns the call's requests for the client into the task's ``inputRequests`` (``input_required``)
until ``tasks/update`` answers them by key, stops it on ``tasks/cancel``, and tells the
principal's ``subscriptions/listen`` streams that asked for the task (``taskIds``) of every
change with ``notifications/tasks``. Progress and log messages of a task go nowhere (the
extension has none).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from protomcp_host.calls.execution import Dispatcher, Execution
from protomcp_host.processes.events import Reply
from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.modern import task_outcome
from protomcp_host.protocol.request_meta import MISSING_CAPABILITY, missing_capability, valid_answer
from protomcp_host.protocol.session import Call, ToolAnswer
from protomcp_host.protocol.tasks import Task, TaskStore
from protomcp_sdk.wire.toollist import ToolListChange

if TYPE_CHECKING:
    from protomcp_host.calls.router import Router

CANCELLED = "The task was cancelled by request."


class RemoteTasks(Protocol):
    """Tasks whose call runs on another host sharing the store (shared/tasks.py)."""

    def answer(self, task: Task, responses: dict[str, Any]) -> None: ...
    def cancel(self, task: Task) -> None: ...
    def when_settled(self, then: Callable[[], None]) -> None:
        """Call `then` once this host's copies of the others' tasks are settled (bounded)."""


class TaskRunner:
    """Every principal's modern-era tasks: starts their calls, and does what tasks/* asks."""

    def __init__(self, store: TaskStore, dispatcher: Dispatcher, routers: Callable[[], list[Any]]) -> None:
        self.store = store
        self.dispatcher = dispatcher
        self.routers = routers  # every connection (listen streams are found there)
        self.sinks: dict[Task, TaskSink] = {}  # the tasks whose call runs
        self.owners: set[str] = set()  # principals that have had modern tasks (for expiry)
        # --store shared by several hosts: told of every change of a task (shared/tasks.py), and
        # asked to pass tasks/update and tasks/cancel on to the host running the task
        self.on_change: Callable[[Task], None] | None = None
        self.remote: RemoteTasks | None = None
        self._released: anyio.Event | None = None  # set when a task's call stops being run here

    def release(self, task: Task) -> None:
        """The task's call is no longer this runner's (it ended, or the task did)."""
        if self.sinks.pop(task, None) is not None and self._released is not None:
            self._released.set()
            self._released = None

    async def wait_idle(self) -> None:
        """Until no task's call runs here (a drain waits for them, bounded by its caller)."""
        while self.sinks:
            if self._released is None:
                self._released = anyio.Event()
            await self._released.wait()

    def start(self, call: Call, router: Router) -> None:
        task = call.task
        assert task is not None
        self.owners.add(task.owner)
        sink = self.sinks[task] = TaskSink(self, call, router)
        if self.on_change is not None:
            self.on_change(task)
        self.dispatcher.execute(call, sink)

    def adopt(self, call: Call, execution: Execution, router: Router) -> None:
        """A running call that became a task (input_before_task) goes on as the task's."""
        task = call.task
        assert task is not None
        self.owners.add(task.owner)
        sink = self.sinks[task] = TaskSink(self, call, router)
        execution.sink = sink
        if self.on_change is not None:
            self.on_change(task)

    def when_settled(self, then: Callable[[], None]) -> None:
        """`then` once the copies of other hosts' tasks are settled (at once: none shared)."""
        if self.remote is None:
            then()
        else:
            self.remote.when_settled(then)

    # -- tasks/update, tasks/cancel ------------------------------------------------------
    def answer(self, task: Task, responses: dict[str, Any]) -> None:
        """Answers by key for the task's outstanding requests; other keys are ignored (never
        issued, answered already, or not valid for their request)."""
        sink = self.sinks.get(task)
        if sink is None:
            if self.remote is not None and task.call is None and not task.terminal:
                self.remote.answer(task, responses)  # its call runs on another host
            return
        for key, response in responses.items():
            ask = sink.asks.get(key)
            if ask is not None and valid_answer(ask[0], response):
                del sink.asks[key]
                task.inputs.pop(key, None)
                ask[1](response, None)
        if not task.inputs and task.status == "input_required":
            self.changed(task, self.store.update(task, time.time(), status="working"))

    def cancel(self, task: Task) -> None:
        """Cooperative, and at once here: the task is cancelled and its call told to stop."""
        call = task.call
        if self.remote is not None and call is None and task not in self.sinks and not task.terminal:
            self.remote.cancel(task)  # its call runs on another host (this host's copy ends now)
        ended = self.store.finish(task, "cancelled", b"", CANCELLED, time.time())
        task.inputs = {}
        self.release(task)
        if call is not None and call.execution is not None:
            call.execution.cancel("its task was cancelled")
        self.changed(task, ended)

    def tick(self, now: float) -> None:
        """Tasks past their ttl are forgotten; a call still running for one is stopped."""
        for owner in list(self.owners):
            if self.store.earliest(owner) > now:
                continue
            for task in self.store.expire(now, owner):
                self.release(task)
                if task.call is not None and task.call.execution is not None:
                    task.call.execution.cancel("its task expired")
            if owner not in self.store.owners():
                self.owners.discard(owner)

    # -- notifications/tasks -------------------------------------------------------------
    def changed(self, task: Task, changed: bool) -> None:
        """Tell the owner's listen streams that asked for this task (its DetailedTask)."""
        if not changed:
            return
        if self.on_change is not None:
            self.on_change(task)
        detailed: dict[str, Any] | None = None
        for router in self.routers():
            session = router.session
            if getattr(session.era, "owner", None) != task.owner:
                continue
            for listen in list(session.era.listens.values()):
                if task.id in listen.honored.get("taskIds", ()):
                    detailed = detailed or task.detailed()
                    router.write(listen.tagged("notifications/tasks", detailed), listen.id)


class TaskSink:
    """The session side of one task's call (a calls.execution.CallSink)."""

    def __init__(self, runner: TaskRunner, call: Call, origin: Router) -> None:
        self.runner = runner
        self.call = call
        self.origin = origin  # the connection that made it: its encoding, the principal's tool list
        self.asks: dict[str, tuple[str, Reply]] = {}  # outstanding requests for the client, by key
        self.used: set[str] = set()  # every key issued so far
        self.issued = 0

    @property
    def task(self) -> Task:
        assert self.call.task is not None
        return self.call.task

    def _finish(self, status: str, outcome: bytes, message: str | None) -> bool:
        self.runner.release(self.task)
        return self.runner.store.finish(self.task, status, outcome, message, time.time())

    def call_answered(self, call: Call, answer: ToolAnswer) -> None:
        required = missing_capability(answer)
        if required is not None:  # the request itself would have been refused with -32021
            text = f"Tool '{call.tool.name}' needs a client capability the request did not declare"
            ended = self._finish("failed", b"", text)
            if ended:
                self.task.error = {
                    "code": MISSING_CAPABILITY,
                    "message": text,
                    "data": {"requiredCapabilities": required},
                }
            self.runner.changed(self.task, ended)
            return
        outcome = task_outcome(self.origin.session, call, answer)
        self.runner.changed(self.task, self._finish("completed", outcome, None))

    def call_failed(self, call: Call, message: str) -> None:
        text = f"Tool '{call.tool.name}' failed: {message}"
        ended = self._finish("failed", b"", text)
        if ended:
            self.task.error = {"code": rpc.INTERNAL_ERROR, "message": text}
        self.runner.changed(self.task, ended)

    def call_progress(self, call: Call, progress: float, total: float | None, message: str) -> None:
        """Tasks have no progress notifications in this revision."""

    def call_log(self, call: Call, level: str, logger: str, data: Any) -> None:
        """Nor log messages: no request of the client is there to carry them."""

    def call_task_status(self, call: Call, status: str, message: str) -> None:
        """The tool's status message (input_required comes only with requests for the client)."""
        if message:
            self.runner.changed(self.task, self.runner.store.update(self.task, time.time(), message=message))

    def call_control(self, change: ToolListChange | None) -> list[str]:
        return self.origin.call_control(change)  # the principal's tool list

    def call_request(
        self,
        execution: Execution,
        method: str,
        params: dict[str, Any],
        timeout: float | None,
        reply: Reply,
        key: str = "",
    ) -> None:
        """The call asks the client: the task waits on input, the request under its key. (The
        tool process checked the request's declared capabilities: ctx.client_capabilities.)"""
        task = self.task
        if task.terminal:
            reply(None, f"{method} can only be asked while the task runs")
            return
        self.issued += 1
        if not key:  # a tool process of another SDK: keys by order
            key = f"{method}-{self.issued}"
        while key in self.used:  # a key is never reused over the task's life (a tool asking again)
            key = f"{key}-{self.issued}"
        self.used.add(key)
        if method == "elicitation/create":
            params = {k: v for k, v in params.items() if k != "elicitationId"}  # not in this era
        self.asks[key] = (method, reply)
        task.inputs[key] = {"method": method, "params": params}
        self.runner.store.update(task, time.time(), status="input_required")
        self.runner.changed(task, True)

    def call_released(self, execution: Execution, reason: str) -> None:
        """The call ended: what it still asks is answered for the tool process."""
        asks, self.asks = self.asks, {}
        self.task.inputs = {}
        for _, reply in asks.values():
            reply(None, reason)
