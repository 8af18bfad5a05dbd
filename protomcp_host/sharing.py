"""Modern-era tasks shared by every host of one store (`--store redis://...`).

The host that runs a task's call owns its record: every change (created, input_required,
completed, failed, cancelled) is written to the store (`task:ID`, for the task's remaining
ttl) and published on its bus. Every other host keeps a copy in its own TaskStore, so a
`tasks/get` through any host answers at once, and a listen stream on any host that asked for
the task hears `notifications/tasks`. A `tasks/update` or `tasks/cancel` that reaches a host
holding only a copy goes over the bus to the host running the call. A host that starts loads
the records in the store; one that stops answering (no heartbeat for GONE_AFTER seconds) has its
running tasks marked failed by the others, so none stays "working" for ever. Legacy-era tasks
belong to a session, which lives in one host: they are not shared.
"""

from __future__ import annotations

import os
import socket
import time
from collections import deque
from typing import Any

import anyio
import anyio.abc
import orjson

from protomcp_host.bridge.tasks import TaskRunner
from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.tasks import Task, TaskStore
from protomcp_host.store.base import Store, StoreError

TASK = "task"  # bus topics
TASK_INPUT = "task_input"
TASK_CANCEL = "task_cancel"
ALIVE = "alive"
RECORD_PREFIX = "task:"
HEARTBEAT = 1.0  # seconds between a host's "alive" messages
GONE_AFTER = 5.0  # seconds without one after which a host's running tasks are failed
SHARED_OWNERS = "principal:"  # modern-era owners; a legacy session's tasks stay in its host


class SharedTasks:
    def __init__(
        self, store: Store, tasks: TaskStore, runner: TaskRunner, report: Any, host_id: str | None = None
    ) -> None:
        self.store = store
        self.tasks = tasks
        self.runner = runner
        self.report = report
        self.host_id = host_id or f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"
        self.local: set[str] = set()  # ids of the tasks whose call runs here
        self.runners: dict[str, str] = {}  # task id -> the host running it (copies only)
        self.seen: dict[str, float] = {}  # host -> when its last heartbeat arrived (monotonic)
        self._since = time.monotonic()
        self._writes: deque[tuple[str, bytes, float]] = deque()
        self._wake = anyio.Event()
        runner.on_change = self._changed
        runner.remote = self

    # -- lifecycle ---------------------------------------------------------------------
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Load the tasks in the store, then write records and send heartbeats until cancelled."""
        for _, raw in await self.store.scan(RECORD_PREFIX):
            try:
                self._adopt(orjson.loads(raw))
            except (ValueError, KeyError, TypeError):
                continue  # a record this version cannot read: skipped
        task_status.started()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._write)
            while True:
                self.store.publish(ALIVE, self.host_id.encode())
                self._fail_orphans()
                await anyio.sleep(HEARTBEAT)

    def on_bus(self, topic: str, payload: bytes) -> None:
        if topic == ALIVE:
            self.seen[payload.decode(errors="replace")] = time.monotonic()
            return
        if topic not in (TASK, TASK_INPUT, TASK_CANCEL):
            return
        try:
            message = orjson.loads(payload)
            if topic == TASK:
                self._adopt(message)
            elif topic == TASK_INPUT:
                task = self._running_here(message["id"])
                if task is not None and isinstance(message.get("responses"), dict):
                    self.runner.answer(task, message["responses"])
            else:
                task = self._running_here(message["id"])
                if task is not None:
                    self.runner.cancel(task)
        except (ValueError, KeyError, TypeError) as exc:
            self.report(f"protomcp: a shared {topic} message was not understood: {exc}")

    # -- this host's tasks -> the store --------------------------------------------------
    def _changed(self, task: Task) -> None:
        if not task.owner.startswith(SHARED_OWNERS):
            return
        if task.id not in self.local:
            if task not in self.runner.sinks:
                return  # a copy of another host's task: that host publishes it
            self.local.add(task.id)
        self._share(task, self.host_id)

    def _share(self, task: Task, runner: str) -> None:
        record = orjson.dumps(_record(task, runner))
        self.store.publish(TASK, record)
        self._writes.append((RECORD_PREFIX + task.id, record, task.deadline - time.time()))
        self._wake.set()

    async def _write(self) -> None:
        """Records go to the store in the order they changed (one writer)."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            while self._writes:
                key, record, ttl = self._writes.popleft()
                if ttl <= 0:
                    continue
                try:
                    await self.store.put(key, record, ttl)
                except StoreError as exc:
                    self.report(f"protomcp: a task record was not saved: {exc}")

    # -- RemoteTasks: tasks/* for a copy go to the host running the call --------------------
    def answer(self, task: Task, responses: dict[str, Any]) -> None:
        self.store.publish(TASK_INPUT, orjson.dumps({"id": task.id, "responses": responses}))

    def cancel(self, task: Task) -> None:
        self.store.publish(TASK_CANCEL, orjson.dumps({"id": task.id}))

    # -- other hosts' tasks -> copies here -------------------------------------------------
    def _running_here(self, task_id: Any) -> Task | None:
        task = self.tasks.tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None or task.id not in self.local or task.terminal:
            return None
        return task

    def _adopt(self, record: dict[str, Any]) -> None:
        task_id = record["id"]
        if task_id in self.local or not str(record["owner"]).startswith(SHARED_OWNERS):
            return  # this host's own (it knows better), or not a shared owner
        task = self.tasks.tasks.get(task_id)
        if task is None:
            task = Task(task_id, 0, int(record["ttl_ms"]), float(record["created"]), float(record["updated"]))
            task.owner = record["owner"]
            self.tasks.adopt(task)
            self.runner.owners.add(task.owner)
        elif task.terminal and record["status"] not in ("completed", "failed", "cancelled"):
            return  # a late message about a task that has ended meanwhile
        elif float(record["updated"]) < task.updated:
            return  # older than what is known (a record loaded at start after a newer message)
        elif (task.status, task.updated, task.inputs) == (
            record["status"],
            record["updated"],
            record["inputs"],
        ):
            return  # nothing new (this host's own notice of an orphan, say)
        task.status, task.message = record["status"], record["message"]
        task.updated = float(record["updated"])
        task.inputs = record["inputs"] or {}
        task.outcome = record["outcome"].encode()
        task.error = record["error"]
        self.runners[task_id] = record["runner"]
        self.runner.changed(task, True)  # this host's listen streams that asked for it

    def _fail_orphans(self) -> None:
        """Running copies whose host stopped sending heartbeats: failed, here and in the store."""
        now = time.monotonic()
        if now - self._since < GONE_AFTER:
            return  # (just started: the others' heartbeats are yet to come)
        for task in list(self.tasks.tasks.values()):
            runner = self.runners.get(task.id)
            if task.terminal or runner is None or task.id in self.local:
                continue
            if now - self.seen.get(runner, self._since) < GONE_AFTER:
                continue
            text = f"The host running this task ({runner}) stopped before it finished."
            if self.tasks.finish(task, "failed", b"", text, time.time()):
                task.error = {"code": rpc.INTERNAL_ERROR, "message": text}
                task.inputs = {}
                self.runner.changed(task, True)
                self._share(task, runner)
        for task_id in [t for t in self.local if t not in self.tasks.tasks]:
            self.local.discard(task_id)  # expired: forgotten
        for task_id in [t for t in self.runners if t not in self.tasks.tasks]:
            del self.runners[task_id]


def _record(task: Task, runner: str) -> dict[str, Any]:
    return {
        "id": task.id,
        "owner": task.owner,
        "status": task.status,
        "message": task.message,
        "created": task.created,
        "updated": task.updated,
        "ttl_ms": task.ttl_ms,
        "inputs": task.inputs,
        "outcome": task.outcome.decode(),
        "error": task.error,
        "runner": runner,
    }
