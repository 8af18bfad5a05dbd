"""The 2026-07-28 tasks extension (``io.modelcontextprotocol/tasks``) in the protocol core: a
``tools/call`` that becomes a task, and ``tasks/get``, ``tasks/update``, ``tasks/cancel`` of the
principal's own tasks in the host's one store. One per host (``ModernShared.task_calls``): the
principal (``owner``) is given with each request. The calls layer runs a task's call
(calls/tasks.py).

With a store shared by several hosts whose bus broke (``TaskStore.unsettled``), a request for a
task another host runs and that is not final, or for an id this host does not know (made on
another host meanwhile), is not answered from what may be an old copy: it becomes
``TasksUnsettled``, which the calls layer carries out once the copies are settled again
(bounded), and the request is answered then. A task whose call runs here, or a final one, is
answered at once, as is every request while the view is settled."""

from __future__ import annotations

from typing import Any

import orjson

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.events import Send
from protomcp_host.protocol.records import Call, Event, TaskCancel, TaskInput, TasksUnsettled
from protomcp_host.protocol.request_meta import MISSING_CAPABILITY, SERVER_INFO, TASKS_EXTENSION
from protomcp_host.protocol.session import Session
from protomcp_host.protocol.tasks import Task, TaskNotFound, TaskStore, TooManyTasks


class TaskCalls:
    def __init__(self, store: TaskStore | None, server_info: dict[str, Any]) -> None:
        self.store = store  # None: the extension is not offered
        self.server_info = server_info
        self._complete = b'"resultType":"complete","_meta":' + orjson.dumps({SERVER_INFO: server_info})

    def as_task(self, session: Session, owner: str, request: rpc.Request, call: Call) -> Event | list[Event]:
        """The call becomes a task: answered at once with the CreateTaskResult (the task is in
        the store, so a tasks/get for it resolves), its call runs on for the task."""
        assert self.store is not None
        del session.in_flight[call.id]
        try:
            task = self.store.create(None, session.tasks.now, owner)
        except TooManyTasks as exc:
            return Send(rpc.error(request.id, rpc.INTERNAL_ERROR, str(exc)))
        return [Send(self._created(call, task), request.id), call]

    def become_task(self, session: Session, owner: str, call: Call) -> bytes | None:
        """The CreateTaskResult of a call that becomes a task now; None when it stays a plain
        request (it is over already, or every task slot holds a running task)."""
        if self.store is None or session.in_flight.get(call.id) is not call:
            return None
        try:
            task = self.store.create(None, session.tasks.now, owner)
        except TooManyTasks:
            return None
        del session.in_flight[call.id]
        return self._created(call, task)

    def _created(self, call: Call, task: Task) -> bytes:
        call.task, task.call, call.batch, call.task_later = task, call, None, False
        created = {"resultType": "task", **task.detailed(), "_meta": {SERVER_INFO: self.server_info}}
        return rpc.result(call.id, created)

    def _own_task(
        self, session: Session, owner: str, request: rpc.Request, waited: bool
    ) -> Task | Send | None:
        """The principal's task a tasks/* request names, or the error to answer; None: answer
        it once the copies of other hosts' tasks are settled (not `waited` yet)."""
        assert self.store is not None
        if not declares_tasks(session):
            return Send(needs_tasks(request.id, request.method))
        task_id = request.params.get("taskId")
        if not isinstance(task_id, str):
            problem = 'Invalid params: "taskId" must be a string'
            return Send(rpc.error(request.id, rpc.INVALID_PARAMS, problem))
        try:
            task = self.store.find(task_id, owner)
        except TaskNotFound as exc:
            if self.store.unsettled and not waited:
                return None  # (it may have been made on another host meanwhile)
            return Send(rpc.error(request.id, rpc.INVALID_PARAMS, str(exc)))
        if self.store.unsettled and not waited and task.call is None and not task.terminal:
            return None  # another host's task: this copy may be behind
        return task

    def get(self, session: Session, owner: str, request: rpc.Request, waited: bool = False) -> Event:
        task = self._own_task(session, owner, request, waited)
        if task is None:
            return TasksUnsettled(lambda: self.get(session, owner, request, True))
        return task if isinstance(task, Send) else Send(rpc.result(request.id, task.detailed()))

    def update(
        self, session: Session, owner: str, request: rpc.Request, waited: bool = False
    ) -> Event | list[Event]:
        """Answers for the task's outstanding requests; acknowledged at once (the task moves
        on when its call has them: eventually consistent, as the extension allows)."""
        task = self._own_task(session, owner, request, waited)
        if task is None:
            return TasksUnsettled(lambda: self.update(session, owner, request, True))
        if isinstance(task, Send):
            return task
        responses = request.params.get("inputResponses")
        if not isinstance(responses, dict):
            problem = 'Invalid params: "inputResponses" must be an object'
            return Send(rpc.error(request.id, rpc.INVALID_PARAMS, problem))
        return [TaskInput(task, responses), Send(self._ack(request.id), request.id)]

    def cancel(
        self, session: Session, owner: str, request: rpc.Request, waited: bool = False
    ) -> Event | list[Event]:
        """Acknowledged whatever the task's status (idempotent); a running task is cancelled."""
        task = self._own_task(session, owner, request, waited)
        if task is None:
            return TasksUnsettled(lambda: self.cancel(session, owner, request, True))
        if isinstance(task, Send):
            return task
        ack = Send(self._ack(request.id), request.id)
        return [ack] if task.terminal else [TaskCancel(task), ack]

    def _ack(self, request_id: bytes) -> bytes:
        return rpc.raw_result(request_id, b"{" + self._complete + b"}")


def declares_tasks(session: Session) -> bool:
    extensions = session.client_capabilities.get("extensions")
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def needs_tasks(request_id: bytes, what: str) -> bytes:
    return rpc.error(
        request_id,
        MISSING_CAPABILITY,
        f"{what} needs the {TASKS_EXTENSION} extension (declare it in the request's capabilities)",
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )
