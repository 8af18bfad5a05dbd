"""A minimal client side of the io.modelcontextprotocol/tasks extension for the official
`mcp` client (2.3 has the extension mechanism — ClientExtension, ResultClaim — but no tasks
extension of its own): claims resultType "task" on tools/call and polls tasks/get."""

from __future__ import annotations

from typing import Any, Literal

import anyio
from mcp.client import ClaimContext, ClientExtension, ResultClaim
from mcp_types import CallToolResult, Request, RequestParams, Result
from pydantic import ConfigDict

TASKS = "io.modelcontextprotocol/tasks"


class CreateTaskResult(Result):
    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str


class TaskParams(RequestParams):
    model_config = ConfigDict(extra="allow")
    task_id: str


class DetailedTask(Result):
    model_config = ConfigDict(extra="allow")
    result_type: str = "complete"
    task_id: str
    status: str
    status_message: str | None = None
    input_requests: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class GetTask(Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param = "taskId"


class UpdateTask(Request[TaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: TaskParams
    name_param = "taskId"


class CancelTask(Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams
    name_param = "taskId"


class Ack(Result):
    model_config = ConfigDict(extra="allow")
    result_type: str = "complete"


async def get_task(session: Any, task_id: str) -> DetailedTask:
    return await session.send_request(GetTask(params=TaskParams(task_id=task_id)), DetailedTask)


async def update_task(session: Any, task_id: str, responses: dict[str, Any]) -> Ack:
    params = TaskParams(task_id=task_id, inputResponses=responses)
    return await session.send_request(UpdateTask(params=params), Ack)


async def cancel_task(session: Any, task_id: str) -> Ack:
    return await session.send_request(CancelTask(params=TaskParams(task_id=task_id)), Ack)


class Tasks(ClientExtension):
    """Declares the extension; a CreateTaskResult is polled until the task is terminal and
    its inlined result returned (the client's call_tool then looks synchronous)."""

    identifier = TASKS

    def __init__(self, answer: Any = None) -> None:
        self.answer = answer  # (key, inputRequest) -> inputResponse, for input_required tasks
        self.created: list[str] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self._resolve)]

    async def _resolve(self, created: CreateTaskResult, ctx: ClaimContext) -> CallToolResult:
        self.created.append(created.task_id)
        while True:
            task = await get_task(ctx.session, created.task_id)
            if task.status == "completed":
                assert task.result is not None
                return CallToolResult.model_validate(task.result)
            if task.status in ("failed", "cancelled"):
                raise RuntimeError(f"task {task.status}: {task.error or task.status_message}")
            if task.status == "input_required" and task.input_requests and self.answer is not None:
                responses = {k: self.answer(k, r) for k, r in task.input_requests.items()}
                await update_task(ctx.session, created.task_id, responses)
            await anyio.sleep(0.05)
