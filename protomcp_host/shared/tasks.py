"""Modern-era tasks shared by every host of one store (`--store redis://...`).

The host that runs a task's call owns its record: every change (created, input_required,
completed, failed, cancelled) is written to the store (`task:ID`, for the task's remaining
ttl) and published on its bus. Every other host keeps a copy in its own TaskStore, so a
`tasks/get` through any host answers at once, and a listen stream on any host that asked for
the task hears `notifications/tasks`. A `tasks/update` or `tasks/cancel` that reaches a host
holding only a copy goes over the bus to the host running the call. A host that starts loads
the records in the store; one that stops answering (no heartbeat for GONE_AFTER seconds while
the bus works) has its running tasks marked failed by the others, so none stays "working" for
ever. A heartbeat on the bus can queue behind data (a tool publishing thousands of resource
updates a second): each host also keeps a liveness record in the store (`alive:HOST`, renewed
every HEARTBEAT, gone GONE_AFTER after the last), which decides: a host whose record is there is
alive, however late its heartbeats on the bus. Stateful-era tasks belong to a session, which
lives in one host: they are not shared.

Nothing is lost to a broken store: a record that cannot be written now is kept and written
when the store is back (the latest per task, in order). A terminal record is final, in the store
too (a conditional write): no host turns a completed task into failed or back. When an
owner's bound (TaskStore.max_tasks) makes a host forget a finished task, every host and the
store forget it.

A break of the bus (the store says DISCONNECTED, or this host's own heartbeats stop coming back)
makes this host's copies unsettled (task_sync.py): a tasks/* request for a copy that is not
final, or for an id unknown here, waits (at most WAIT_AT_MOST) instead of answering from what
may be old. Once the bus is back, the host writes its own tasks and the final records it knows
to the store (it may have come back empty), re-publishes its own tasks, then a sync marker
asking the others to do the same (`task_sync`: each answers with its own tasks, then a marker).
When every host it expects has sent a marker since (or SETTLE_WITHIN passed), it reads the store
once more and is settled: the waiting requests are answered, each from a copy at least as new as
what any host had served before.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import orjson

from protomcp_host.calls.tasks import TaskRunner
from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.tasks import Task, TaskStore
from protomcp_host.shared.task_sync import SETTLE_WITHIN, TaskSync
from protomcp_host.store.base import DISCONNECTED, RECONNECTED, Store, StoreError

TASK = "task"  # bus topics
TASK_INPUT = "task_input"
TASK_CANCEL = "task_cancel"
TASK_FORGET = "task_forget"
TASK_SYNC = "task_sync"  # {"from": host, "ask": bool}: its own tasks were just re-published
ALIVE = "alive"
RECORD_PREFIX = "task:"
ALIVE_PREFIX = "alive:"  # store records: a host's liveness, renewed every HEARTBEAT
HEARTBEAT = 1.0  # seconds between a host's "alive" messages
GONE_AFTER = 5.0  # seconds without one (while the bus works) after which a host's running tasks fail
BROKEN_AFTER = 3 * HEARTBEAT  # this host's own heartbeat missing this long: its bus is broken
RETRY = 1.0  # seconds between attempts to write records the store could not take
WAIT_AT_MOST = 10.0  # seconds a tasks/* request for a copy waits for the copies to settle
SHARED_OWNERS = "principal:"  # modern-era owners; a stateful session's tasks stay in its host

Unsaved = tuple[bytes | None, float, bool]  # record (None: delete it), deadline (epoch), final


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
        self._since = time.monotonic()  # since when the bus has worked without a break
        self._unsaved: dict[str, Unsaved] = {}  # by key: the latest not written yet, oldest first
        self._failing = False  # the store refused writes (said once, until they are all written)
        self._wake = anyio.Event()
        self._flushed = anyio.Event()  # set when every record was written (or given up)
        self._flushed.set()
        self.sync = TaskSync()
        self._resync = False  # the bus is back: write and re-publish this host's tasks, then ask
        self._answer = False  # another host asked: re-publish this host's tasks, then a marker
        self._sync_wake = anyio.Event()
        self._waiting: list[tuple[float, Callable[[], None]]] = []  # (deadline, then): see when_settled
        self._first_waiting = anyio.Event()  # set when a request starts waiting while none did
        self._stopped = False  # run() is over: nothing waits any more
        runner.on_change = self._changed
        runner.remote = self
        tasks.on_evict = self._evicted

    # -- lifecycle ---------------------------------------------------------------------
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Load the tasks in the store, then write records and send heartbeats until cancelled."""
        await self._load()
        self.seen[self.host_id] = time.monotonic()  # (its heartbeats are judged from now)
        task_status.started()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._write)
                tg.start_soon(self._live)
                tg.start_soon(self._syncing)
                tg.start_soon(self._timing_out)
                while True:
                    self.store.publish(ALIVE, self.host_id.encode())
                    if time.monotonic() - self.seen[self.host_id] > BROKEN_AFTER:
                        self._broke()  # this host's own heartbeats do not come back
                    await self._fail_orphans()
                    await anyio.sleep(HEARTBEAT)
        finally:
            self._stopped = True
            self._release(float("inf"))  # (stopping: what waits is answered with what is known)

    async def _live(self) -> None:
        """This host's liveness record, on its own path: never behind the bus's messages."""
        while True:
            with anyio.move_on_after(GONE_AFTER):
                with contextlib.suppress(StoreError):  # (the store reports its outage)
                    await self.store.put(ALIVE_PREFIX + self.host_id, b"alive", GONE_AFTER)
            await anyio.sleep(HEARTBEAT)

    async def _alive_in_store(self, host: str) -> bool | None:
        """Whether `host`'s liveness record is in the store (None: the store cannot tell)."""
        try:
            return await self.store.get(ALIVE_PREFIX + host) is not None
        except StoreError:
            return None

    async def _load(self) -> None:
        for _, raw in await self.store.scan(RECORD_PREFIX):
            try:
                self._adopt(orjson.loads(raw))
            except (ValueError, KeyError, TypeError):
                continue  # a record this version cannot read: skipped

    def on_bus(self, topic: str, payload: bytes) -> None:
        if topic == ALIVE:
            self._alive(payload.decode(errors="replace"))
            return
        if topic == DISCONNECTED:
            self._broke()
            return
        if topic == RECONNECTED:
            self._back()
            return
        if topic not in (TASK, TASK_INPUT, TASK_CANCEL, TASK_FORGET, TASK_SYNC):
            return
        try:
            message = orjson.loads(payload)
            if topic == TASK:
                self._adopt(message)
            elif topic == TASK_SYNC:
                self._marker(str(message["from"]), bool(message["ask"]))
            elif topic == TASK_INPUT:
                task = self._running_here(message["id"])
                if task is not None and isinstance(message.get("responses"), dict):
                    self.runner.answer(task, message["responses"])
            elif topic == TASK_CANCEL:
                task = self._running_here(message["id"])
                if task is not None:
                    self.runner.cancel(task)
            else:
                task = self.tasks.tasks.get(message["id"])
                if task is not None and task.terminal:
                    self.tasks.forget(task)
        except (ValueError, KeyError, TypeError) as exc:
            self.report(f"protomcp: a shared {topic} message was not understood: {exc}")

    def _alive(self, host: str) -> None:
        now = time.monotonic()
        if host == self.host_id:
            if now - self.seen.get(host, now) > BROKEN_AFTER:
                self._broke()  # (a break the heartbeat loop had no time to see)
            if self.sync.broken:
                self._back()  # its own heartbeats come back: the bus works again
        else:
            self.sync.heartbeat(host)
        self.seen[host] = now

    # -- a break of the bus, and the sync after it (task_sync.py) -------------------------
    def _broke(self) -> None:
        now = time.monotonic()
        recent = [host for host, at in self.seen.items() if host != self.host_id and now - at < GONE_AFTER]
        self.sync.broke(recent)
        self.tasks.unsettled = True

    def _back(self) -> None:
        now = time.monotonic()
        self._since = now  # (the others' heartbeats of the break did not come)
        self.seen[self.host_id] = now
        self.sync.back(now)
        self.tasks.unsettled = True
        self._resync = True
        self._sync_wake.set()

    def _marker(self, host: str, ask: bool) -> None:
        if host == self.host_id:
            return
        self.sync.marker(host)
        if ask:
            self._answer = True
        self._sync_wake.set()

    def when_settled(self, then: Callable[[], None]) -> None:
        """RemoteTasks: `then` once the copies are settled, or after WAIT_AT_MOST."""
        if not self.tasks.unsettled or self._stopped:
            then()
            return
        if not self._waiting:
            self._first_waiting.set()  # (the others' deadlines come before this one's)
        self._waiting.append((time.monotonic() + WAIT_AT_MOST, then))

    async def _syncing(self) -> None:
        """Re-share this host's tasks after a break or when asked; settle once the sync ends."""
        while True:
            ends = self.sync.deadline()
            with anyio.move_on_after(float("inf") if ends is None else ends - time.monotonic()):
                await self._sync_wake.wait()
            self._sync_wake = anyio.Event()
            if self._resync or self._answer:
                ask, self._resync, self._answer = self._resync, False, False
                await self._reshare(ask)
            if self.sync.due(time.monotonic()):
                try:
                    await self._load()
                except StoreError:
                    await anyio.sleep(RETRY)
                    self._sync_wake.set()  # (read again)
                    continue
                if self.sync.due(time.monotonic()):  # (not broken again meanwhile)
                    self.sync.settled()
                    self.tasks.unsettled = False
                    self._release(float("inf"))

    async def _timing_out(self) -> None:
        """A request that waited WAIT_AT_MOST for the copies to settle is answered with what is
        known (they wait in the order they came, each as long)."""
        while True:
            if self._waiting:
                with anyio.move_on_after(self._waiting[0][0] - time.monotonic()):
                    await self._first_waiting.wait()
            else:
                await self._first_waiting.wait()
            self._first_waiting = anyio.Event()
            self._release(time.monotonic())

    async def _reshare(self, ask: bool) -> None:
        """This host's tasks on the bus, then its marker: whoever hears the marker has them. After
        this host's own break (`ask`), its tasks and the final records it knows (its copies'
        too: their host may be gone) are written first, as the store may have come back empty,
        and so is what it reads after a sync; and the others are asked to do the same."""
        if ask:
            for task in list(self.tasks.tasks.values()):
                if task.id in self.local:
                    self._save(RECORD_PREFIX + task.id, (self._record_of(task), task.deadline, task.terminal))
                elif task.terminal and task.id in self.runners:  # (a final record never replaces another)
                    self._save(RECORD_PREFIX + task.id, (self._record_of(task), task.deadline, True))
        with anyio.move_on_after(SETTLE_WITHIN):  # (a store that takes no write: the bus goes on)
            while self._unsaved:
                await self._flushed.wait()
        if ask:
            with contextlib.suppress(StoreError):  # (hosts with a liveness record: alive)
                self.sync.expect(
                    key[len(ALIVE_PREFIX) :]
                    for key, _ in await self.store.scan(ALIVE_PREFIX)
                    if key[len(ALIVE_PREFIX) :] != self.host_id
                )
        self._answer = False  # (this marker answers whoever asked so far too)
        for task in list(self.tasks.tasks.values()):
            if task.id in self.local:
                self.store.publish(TASK, self._record_of(task))
        self.store.publish(TASK_SYNC, orjson.dumps({"from": self.host_id, "ask": ask}))

    def _record_of(self, task: Task) -> bytes:
        return orjson.dumps(_record(task, self.host_id if task.id in self.local else self.runners[task.id]))

    def _release(self, now: float) -> None:
        """Answer the requests waiting for the copies to settle: all of them once settled (or
        stopping), else those whose WAIT_AT_MOST is up (answered with what is known)."""
        if not self._waiting:
            return
        if not self.tasks.unsettled:
            now = float("inf")
        count = next((i for i, (at, _) in enumerate(self._waiting) if at > now), len(self._waiting))
        due = [then for _, then in self._waiting[:count]]
        del self._waiting[:count]
        for then in due:
            try:
                then()
            except Exception as exc:  # (one request's answer never stops the host's sharing)
                self.report(f"protomcp: a waiting task request could not be answered: {exc!r}")

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
        self._save(RECORD_PREFIX + task.id, (record, task.deadline, task.terminal))

    def _evicted(self, task: Task) -> None:
        """A finished task this host forgot to keep its owner within the bound: forgotten by
        every host and by the store too."""
        if not task.owner.startswith(SHARED_OWNERS):
            return
        self.local.discard(task.id)
        self.runners.pop(task.id, None)
        self.store.publish(TASK_FORGET, orjson.dumps({"id": task.id}))
        self._save(RECORD_PREFIX + task.id, (None, 0.0, False))

    def _save(self, key: str, unsaved: Unsaved) -> None:
        self._unsaved[key] = unsaved
        if self._flushed.is_set():
            self._flushed = anyio.Event()
        self._wake.set()

    async def _write(self) -> None:
        """Records go to the store in the order they changed (one writer); one the store cannot
        take now is tried again until it is written or its task has expired."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            while self._unsaved:
                key, entry = next(iter(self._unsaved.items()))
                record, deadline, final = entry
                kept = None
                try:
                    if record is None:
                        await self.store.delete(key)
                    elif deadline > time.time():
                        kept = await self.store.put(key, record, deadline - time.time(), final=final)
                except StoreError as exc:
                    if not self._failing:
                        self._failing = True
                        self.report(
                            f"protomcp: a task record was not saved ({exc}); it and the ones after it "
                            f"are kept and saved once the store is back (retrying every {RETRY:g}s)"
                        )
                    await anyio.sleep(RETRY)
                    continue
                if self._unsaved.get(key) is entry:  # (not changed again meanwhile)
                    del self._unsaved[key]
                if kept is not None:
                    self._kept(kept, self._overruled)
            self._flushed.set()
            if self._failing:
                self._failing = False
                self.report("protomcp: the task records held back are saved")

    def _kept(self, raw: bytes, follow: Any) -> None:
        """The final record the store kept instead of this host's write."""
        try:
            follow(orjson.loads(raw))
        except (ValueError, KeyError, TypeError) as exc:
            self.report(f"protomcp: a task record in the store was not understood: {exc}")

    def _overruled(self, record: dict[str, Any]) -> None:
        """The store holds a final record of a task this host wrote (another host failed it
        while this one could not reach the store): every host sees that one, so this one does."""
        task = self.tasks.tasks.get(record["id"])
        if task is None or (task.status, task.updated) == (record["status"], record["updated"]):
            return
        call = task.call
        self.runner.sinks.pop(task, None)
        self.local.discard(task.id)
        self.runners[task.id] = record["runner"]
        _apply(task, record)
        task.call = None
        if call is not None and call.execution is not None:
            call.execution.cancel("another host ended its task")
        self.runner.changed(task, True)

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
            _apply(task, record)
            self.runners[task_id] = record["runner"]
            self.tasks.adopt(task)  # (may forget an older finished one: the owner's bound)
            self.runner.owners.add(task.owner)
            self.runner.changed(task, True)  # this host's listen streams that asked for it
            return
        if task.terminal:
            return  # final: a late message, or another host's verdict on a host it lost
        if float(record["updated"]) < task.updated:
            return  # older than what is known (a record loaded at start after a newer message)
        known = (task.status, task.updated, task.inputs)
        if known == (record["status"], record["updated"], record["inputs"]):
            return  # nothing new (this host's own notice of an orphan, say)
        _apply(task, record)
        self.runners[task_id] = record["runner"]
        self.runner.changed(task, True)

    async def _fail_orphans(self) -> None:
        """Running copies whose host stopped sending heartbeats while the bus works: failed in
        the store first (unless it holds a final record already), then here and on the bus."""
        now = time.monotonic()
        if now - self.seen.get(self.host_id, float("-inf")) > BROKEN_AFTER or now - self._since < GONE_AFTER:
            return  # the bus does not work (or just came back): silence says nothing of the others
        for task in list(self.tasks.tasks.values()):
            runner = self.runners.get(task.id)
            if task.terminal or runner is None or task.id in self.local:
                continue
            if now - max(self.seen.get(runner, self._since), self._since) < GONE_AFTER:
                continue
            alive = await self._alive_in_store(runner)
            if alive is None:
                continue  # (the next heartbeat asks again)
            if alive:  # its heartbeats are late on the bus, not missing
                self.seen[runner] = time.monotonic()
                continue
            text = f"The host running this task ({runner}) stopped before it finished."
            error = {"code": rpc.INTERNAL_ERROR, "message": text}
            failed = {
                **_record(task, runner),
                "status": "failed",
                "message": text,
                "updated": time.time(),
                "inputs": {},
                "outcome": "",
                "error": error,
            }
            try:
                kept = await self.store.put(
                    RECORD_PREFIX + task.id, orjson.dumps(failed), task.deadline - time.time(), final=True
                )
            except StoreError:
                continue  # (the next heartbeat tries again)
            if task.terminal or task.id not in self.tasks.tasks:
                continue  # ended meanwhile
            if kept is not None:
                self._kept(kept, self._adopt)  # its host finished it after all
                continue
            _apply(task, failed)
            task.call = None
            self.runner.changed(task, True)
            self.store.publish(TASK, orjson.dumps(failed))
        for task_id in [t for t in self.local if t not in self.tasks.tasks]:
            self.local.discard(task_id)  # expired: forgotten
        for task_id in [t for t in self.runners if t not in self.tasks.tasks]:
            del self.runners[task_id]


def _apply(task: Task, record: dict[str, Any]) -> None:
    task.status, task.message = record["status"], record["message"]
    task.updated = float(record["updated"])
    task.inputs = record["inputs"] or {}
    task.outcome = record["outcome"].encode()
    task.error = record["error"]


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
