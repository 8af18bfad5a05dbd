"""MCP tasks, sans-IO: the host's one task store, and the 2025-11-25 task requests.

A task-augmented ``tools/call`` is answered at once with a ``CreateTaskResult``; the call
runs on and its answer is kept here until the client fetches it (2025-11-25: ``tasks/result``;
2026-07-28's ``io.modelcontextprotocol/tasks`` extension: inlined in ``tasks/get``). Both eras
share one ``TaskStore``; every task has an *owner* — a stateful session (``session:N``) or a
modern-era principal (``principal:NAME``) — and is found only by its owner: anyone else gets
"not found", exactly as for an unknown id. The store's surface is small on purpose (create,
find, update, finish, forget, expire, running, page, owners, owned_by, earliest); a shared store
(shared/tasks.py, with --store) implements the same.
The store never reads the clock: every method that needs the time is given it (seconds
since the epoch), so expiry is tested without waiting.

Limits (documented in docs/guide/tasks.md): a task lives ``ttl`` milliseconds from its creation —
the client's request, at least MIN_TTL_MS and at most MAX_TTL_MS, DEFAULT_TTL_MS when it asks
for none or for 0 or less (the spec lets the receiver override the requested ttl; a task must
never vanish before the client could poll it once) — and is then forgotten (a running call is
cancelled). An owner keeps at most ``max_tasks`` tasks:
when full, the oldest finished task is forgotten early; when every one is still running,
a new task is refused.
"""

from __future__ import annotations

import base64
import binascii
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.jsontypes import is_number

DEFAULT_TTL_MS = 60 * 60 * 1000  # one hour
MAX_TTL_MS = 24 * 60 * 60 * 1000  # one day
POLL_INTERVAL_MS = 1000
MIN_TTL_MS = POLL_INTERVAL_MS  # a shorter task could vanish before its first poll
MAX_TASKS = 100  # per session
PAGE_SIZE = 100
TERMINAL = frozenset({"completed", "failed", "cancelled"})
RELATED_TASK = "io.modelcontextprotocol/related-task"


class TaskNotFound(ValueError):
    """Answered with -32602: the id is unknown, expired, or belongs to another owner."""


class TooManyTasks(Exception):
    """Every task slot of the session holds a running task."""


def new_task_id() -> str:
    import secrets  # here: it imports hmac and hashlib, which a run that makes no task never needs

    return secrets.token_urlsafe(24)  # 192 random bits, 32 characters


@dataclass(slots=True, eq=False)
class Task:
    id: str
    seq: int  # creation order, for cursors that survive deletions
    ttl_ms: int
    created: float
    updated: float
    status: str = "working"
    message: str | None = None
    call: Any = None  # the running call, until the task is terminal
    outcome: bytes = b""  # the CallToolResult JSON object, once terminal
    waiting: list[bytes] = field(default_factory=list)  # ids of tasks/result requests
    owner: str = ""  # who may see it: "session:N" (2025-11-25) or "principal:NAME" (2026-07-28)
    # 2026-07-28 (tasks extension): the requests for the client it waits on, by key, and the
    # JSON-RPC error of a failed task
    inputs: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def deadline(self) -> float:
        return self.created + self.ttl_ms / 1000

    def describe(self) -> dict[str, Any]:
        """The MCP Task object."""
        task: dict[str, Any] = {"taskId": self.id, "status": self.status}
        if self.message is not None:
            task["statusMessage"] = self.message
        task["createdAt"] = iso(self.created)
        task["lastUpdatedAt"] = iso(self.updated)
        task["ttl"] = self.ttl_ms
        if not self.terminal:
            task["pollInterval"] = POLL_INTERVAL_MS
        return task

    def detailed(self) -> dict[str, Any]:
        """The 2026-07-28 DetailedTask: the Task with what its status carries inlined
        (inputRequests, the result, or the error); integer ttlMs / pollIntervalMs."""
        task: dict[str, Any] = {"taskId": self.id, "status": self.status}
        if self.message is not None:
            task["statusMessage"] = self.message
        task["createdAt"] = iso(self.created)
        task["lastUpdatedAt"] = iso(self.updated)
        task["ttlMs"] = self.ttl_ms
        task["pollIntervalMs"] = POLL_INTERVAL_MS
        if self.status == "input_required":
            task["inputRequests"] = self.inputs
        elif self.status == "completed" and self.outcome:
            task["result"] = orjson.loads(self.outcome)
        elif self.status == "failed" and self.error is not None:
            task["error"] = self.error
        return task

    def result_body(self) -> bytes:
        """What tasks/result answers: the call's result, tagged with this task."""
        related = {RELATED_TASK: {"taskId": self.id}}
        if b'"_meta":' in self.outcome:  # the result has a _meta of its own (a ToolError's code)
            result = orjson.loads(self.outcome)
            if isinstance(result.get("_meta"), dict):
                result["_meta"] = {**result["_meta"], **related}
                return orjson.dumps(result)
        return self.outcome[:-1] + b',"_meta":' + orjson.dumps(related) + b"}"


class TaskStore:
    def __init__(
        self,
        *,
        max_tasks: int = MAX_TASKS,
        page_size: int = PAGE_SIZE,
        new_id: Callable[[], str] = new_task_id,
    ) -> None:
        self.max_tasks = max_tasks
        self.page_size = page_size
        self.new_id = new_id
        self.tasks: dict[str, Task] = {}  # every owner's, in creation order
        self.owned: dict[str, dict[str, Task]] = {}  # owner -> its tasks, in creation order
        self._earliest: dict[str, float] = {}  # owner -> its nearest deadline (expire() is cheap)
        self._seq = itertools.count()
        # told of each finished task forgotten to keep its owner within max_tasks (a store
        # shared by several hosts forgets it everywhere: shared/tasks.py)
        self.on_evict: Callable[[Task], None] | None = None
        self.on_status: Callable[[str], None] | None = None  # told each status a task enters (metrics)
        # told of each task whose call ran here as it ends (or expires running), with that call
        # (the audit log)
        self.on_finished: Callable[[Task, Any], None] | None = None
        # set while the copies of other hosts' tasks may be behind (a store shared by several
        # hosts whose bus broke: shared/tasks.py); 2026-07-28 tasks/* of a copy waits for it
        self.unsettled = False

    def __len__(self) -> int:
        return len(self.tasks)

    def earliest(self, owner: str = "") -> float:
        """The nearest deadline of an owner's tasks (inf when it has none)."""
        return self._earliest.get(owner, float("inf"))

    def owners(self) -> list[str]:
        """The owners that have tasks now."""
        return list(self.owned)

    def owned_by(self, owner: str) -> list[Task]:
        """An owner's tasks, in creation order."""
        return list(self.owned.get(owner, {}).values())

    def create(self, requested_ttl: Any, now: float, owner: str = "") -> Task:
        """A new working task of `owner`. Raises TooManyTasks when every one of the owner's
        slots holds a running task (a finished one makes room)."""
        mine = self.owned.setdefault(owner, {})
        if len(mine) >= self.max_tasks and not self._make_room(mine, self.max_tasks - 1):
            raise TooManyTasks(
                f"Too many tasks: there are already {self.max_tasks} running tasks (the limit); "
                "wait for one to finish or cancel one with tasks/cancel"
            )
        mine = self.owned.setdefault(owner, {})  # (making room may have dropped the owner's map)
        task = Task(self.new_id(), next(self._seq), granted_ttl(requested_ttl), now, now, owner=owner)
        self.tasks[task.id] = mine[task.id] = task
        self._earliest[owner] = min(self.earliest(owner), task.deadline)
        if self.on_status is not None:
            self.on_status(task.status)
        return task

    def find(self, task_id: Any, owner: str = "") -> Task:
        """The owner's task with this id; another owner's is not found, like an unknown id."""
        task = self.tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None or task.owner != owner:
            raise TaskNotFound("Failed to retrieve task: Task not found")
        return task

    def adopt(self, task: Task) -> None:
        """Keep a task made elsewhere (another host sharing the store): it gets a place in this
        store's order, its owner finds it, it expires like the others."""
        task.seq = next(self._seq)
        mine = self.owned.setdefault(task.owner, {})
        self.tasks[task.id] = mine[task.id] = task
        self._earliest[task.owner] = min(self.earliest(task.owner), task.deadline)
        self._make_room(mine, self.max_tasks)  # (the bound holds for copies too)

    def _make_room(self, mine: dict[str, Task], keep: int) -> bool:
        """Forget an owner's oldest finished tasks until it has at most `keep`; False when
        only running ones are left and it still has more."""
        while len(mine) > keep:
            finished = [task for task in mine.values() if task.terminal]
            if not finished:
                return False
            oldest = min(finished, key=lambda task: task.created)
            self.forget(oldest)
            if self.on_evict is not None:
                self.on_evict(oldest)
        return True

    def forget(self, task: Task) -> None:
        """Drop a task now (a finished one making room, an expired one)."""
        del self.tasks[task.id]
        mine = self.owned.get(task.owner)
        if mine is not None:
            mine.pop(task.id, None)
            if not mine:
                del self.owned[task.owner]
                self._earliest.pop(task.owner, None)

    def update(
        self, task: Task, now: float, *, status: str | None = None, message: str | None = None
    ) -> bool:
        """Change a running task's status (working <-> input_required) or message; True if it changed."""
        if task.terminal or (status is not None and status not in ("working", "input_required")):
            return False
        new_status = status or task.status
        new_message = message if message is not None else task.message
        if (new_status, new_message) == (task.status, task.message):
            return False
        if new_status != task.status and self.on_status is not None:
            self.on_status(new_status)
        task.status, task.message, task.updated = new_status, new_message, now
        return True

    def finish(self, task: Task, status: str, outcome: bytes, message: str | None, now: float) -> bool:
        """Move a task to a terminal status with its result; False if it already was terminal
        (a cancelled task stays cancelled even when its call completes later)."""
        if task.terminal or status not in TERMINAL:
            return False
        call, task.call = task.call, None
        task.status, task.outcome, task.message, task.updated = status, outcome, message, now
        if self.on_status is not None:
            self.on_status(status)
        if self.on_finished is not None and call is not None:  # (not a copy of another host's)
            self.on_finished(task, call)
        return True

    def expire(self, now: float, owner: str = "") -> list[Task]:
        """Forget the owner's tasks whose ttl has elapsed; returns them (their calls may need
        cancelling)."""
        if now < self.earliest(owner):
            return []
        mine = self.owned.get(owner, {})
        gone = [task for task in mine.values() if task.deadline <= now]
        for task in gone:
            self.forget(task)
            if self.on_finished is not None and task.call is not None and not task.terminal:
                task.updated = now  # (its call is stopped by the caller: it ended now, expired)
                self.on_finished(task, task.call)
        if owner in self.owned:
            self._earliest[owner] = min(t.deadline for t in self.owned[owner].values())
        return gone

    def running(self, owner: str = "") -> list[Task]:
        return [task for task in self.owned.get(owner, {}).values() if not task.terminal]

    def page(self, cursor: Any, owner: str = "") -> tuple[list[Task], str | None]:
        """One page of the owner's tasks in creation order, and the cursor of the next (None
        at the end). Raises InvalidTaskCursor for a cursor this store did not make."""
        start = 0
        if cursor is not None:
            start = decode_cursor(cursor)
        tasks = [task for task in self.owned.get(owner, {}).values() if task.seq >= start]
        page = tasks[: self.page_size]
        if len(tasks) > self.page_size:
            return page, encode_cursor(tasks[self.page_size].seq)
        return page, None


def granted_ttl(requested: Any) -> int:
    """The ttl (ms) a task gets for the one its client asked for: none, not a number, or 0 or
    less gives the default; otherwise it is kept within [MIN_TTL_MS, MAX_TTL_MS]."""
    if not is_number(requested) or not requested > 0:  # (NaN is not > 0 either)
        return DEFAULT_TTL_MS
    if requested >= MAX_TTL_MS:
        return MAX_TTL_MS
    return max(MIN_TTL_MS, int(requested))


class InvalidTaskCursor(ValueError):
    pass


def encode_cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"task:{seq}".encode()).decode()


def decode_cursor(cursor: Any) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        kind, _, number = text.partition(":")
        if kind != "task":
            raise ValueError(kind)
        return int(number)
    except (AttributeError, ValueError, binascii.Error, UnicodeError):
        raise InvalidTaskCursor(f"Invalid params: invalid cursor {cursor!r}") from None


def iso(timestamp: float) -> str:
    """ISO 8601 in UTC with milliseconds, as MCP's createdAt/lastUpdatedAt."""
    text = datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


Write = tuple[bytes, bytes | None]
"""A message to send and the id of the client request it relates to."""


@dataclass(slots=True)
class Effects:
    """What a task operation asks of the session: messages to send, calls to cancel."""

    writes: list[Write] = field(default_factory=list)
    cancel: list[Any] = field(default_factory=list)


class TaskMethods:
    """The task requests of one session (tasks/get, tasks/result, tasks/list, tasks/cancel)
    and what happens to a task as its call runs, as JSON-RPC messages."""

    def __init__(self, store: TaskStore | None = None, owner: str = "") -> None:
        self.store = store if store is not None else TaskStore()  # (an empty store is falsy)
        self.owner = owner  # this session's tasks in a store shared with others
        self._methods: dict[str, Callable[[rpc.Request], Effects]] = {
            "tasks/get": self._get,
            "tasks/result": self._result,
            "tasks/list": self._list,
            "tasks/cancel": self._cancel,
        }
        self.now = 0.0  # seconds since the epoch, as last told

    def handle(self, request: rpc.Request) -> Effects:
        return self._methods[request.method](request)

    # -- requests ----------------------------------------------------------------------
    def _find(self, request: rpc.Request) -> Task | Effects:
        try:
            return self.store.find(request.params.get("taskId"), self.owner)
        except TaskNotFound as exc:
            return _reply(rpc.error(request.id, rpc.INVALID_PARAMS, str(exc)), request.id)

    def _get(self, request: rpc.Request) -> Effects:
        task = self._find(request)
        return (
            task if isinstance(task, Effects) else _reply(rpc.result(request.id, task.describe()), request.id)
        )

    def _result(self, request: rpc.Request) -> Effects:
        """The call's result, exactly; no answer yet (it blocks) until the task is terminal."""
        task = self._find(request)
        if isinstance(task, Effects):
            return task
        if task.terminal:
            return _reply(rpc.raw_result(request.id, task.result_body()), request.id)
        task.waiting.append(request.id)
        return Effects()

    def _list(self, request: rpc.Request) -> Effects:
        try:
            page, cursor = self.store.page(request.params.get("cursor"), self.owner)
        except InvalidTaskCursor as exc:
            return _reply(rpc.error(request.id, rpc.INVALID_PARAMS, str(exc)), request.id)
        result: dict[str, Any] = {"tasks": [task.describe() for task in page]}
        if cursor is not None:
            result["nextCursor"] = cursor
        return _reply(rpc.result(request.id, result), request.id)

    def _cancel(self, request: rpc.Request) -> Effects:
        task = self._find(request)
        if isinstance(task, Effects):
            return task
        if task.terminal:
            message = f"Cannot cancel task: already in terminal status '{task.status}'"
            return _reply(rpc.error(request.id, rpc.INVALID_PARAMS, message), request.id)
        call = task.call
        name = call.tool.name if call is not None else "the tool"
        outcome = _error_result(f"Tool '{name}' was cancelled: its task was cancelled by request")
        ended = self.finish(task, "cancelled", outcome, "The task was cancelled by request.")
        effects = Effects([(rpc.result(request.id, task.describe()), request.id)])
        effects.writes += [(data, related or request.id) for data, related in ended.writes]
        effects.cancel = [call] if call is not None else []
        return effects

    def stop_waiting(self, request_id: bytes) -> None:
        """A tasks/result request the client cancelled gets no answer."""
        for task in self.store.owned_by(self.owner):
            if request_id in task.waiting:
                task.waiting.remove(request_id)

    # -- a task's life -----------------------------------------------------------------
    def create(self, request_id: bytes, params: dict[str, Any], call: Any, problem: str | None) -> Effects:
        """Answer a task-augmented tools/call with its CreateTaskResult. The call becomes the
        task's (`call.task`); with a `problem` (arguments the tool would refuse) there is no
        call and the task fails at once."""
        try:
            task = self.store.create(params.get("ttl"), self.now, self.owner)
        except TooManyTasks as exc:
            return _reply(rpc.error(request_id, rpc.INVALID_REQUEST, str(exc)), request_id)
        effects = _reply(rpc.result(request_id, {"task": task.describe()}), request_id)
        if problem is not None:
            effects.writes += self.finish(task, "failed", _error_result(problem), problem).writes
        else:
            call.task, task.call = task, call
        return effects

    def report(self, task: Task, status: str, message: str, now: float) -> Effects:
        """The tool reported its task's status (working / input_required) or message."""
        self.now = now
        if task.id not in self.store.tasks:
            return Effects()
        if not self.store.update(task, now, status=status or None, message=message or None):
            return Effects()
        return Effects([self._notice(task)])

    def finish(self, task: Task, status: str, outcome: bytes, message: str | None) -> Effects:
        """The task ends with its call's result: tell the client, answer who waits."""
        if not self.store.finish(task, status, outcome, message, self.now):
            return Effects()  # already terminal: a cancelled task stays cancelled
        body = task.result_body()
        writes = [self._notice(task), *((rpc.raw_result(w, body), w) for w in task.waiting)]
        task.waiting.clear()
        return Effects(writes)

    def advance(self, now: float) -> Effects:
        """The time is `now`: forget expired tasks, cancel their calls, answer who waits on them."""
        self.now = now
        effects = Effects()
        for task in self.store.expire(now, self.owner):
            if task.call is not None:
                effects.cancel.append(task.call)
            expired = "Failed to retrieve task: Task has expired"
            effects.writes += [(rpc.error(w, rpc.INVALID_PARAMS, expired), w) for w in task.waiting]
        return effects

    def running(self) -> list[Task]:
        return self.store.running(self.owner)

    def forget_all(self) -> None:
        """The session is over: its tasks go (their calls were cancelled with the session)."""
        for task in self.store.owned_by(self.owner):
            self.store.forget(task)

    def _notice(self, task: Task) -> Write:
        return rpc.notification("notifications/tasks/status", task.describe()), None


def _reply(data: bytes, request_id: bytes) -> Effects:
    return Effects([(data, request_id)])


def _error_result(message: str) -> bytes:
    return orjson.dumps({"content": [{"type": "text", "text": message}], "isError": True})
