"""runtime.eager: a coroutine run by hand up to where it first waits, a task only if it does."""

from __future__ import annotations

import asyncio

import pytest

from protomcp_sdk.runtime import eager

pytestmark = pytest.mark.fast  # starts no process


async def test_a_coroutine_that_never_waits_runs_at_once_without_a_task() -> None:
    done: list[str] = []

    async def quick() -> None:
        done.append("ran")

    assert eager.start(asyncio.get_running_loop(), quick()) is None
    assert done == ["ran"]


async def test_one_that_waits_goes_on_in_a_task() -> None:
    gate = asyncio.get_running_loop().create_future()
    steps: list[str] = []

    async def waits() -> str:
        steps.append("before")
        value = await gate
        steps.append("after")
        return value

    task = eager.start(asyncio.get_running_loop(), waits())
    assert task is not None and steps == ["before"]
    gate.set_result("opened")
    assert await asyncio.wait_for(task, 10) == "opened" and steps == ["before", "after"]


@pytest.mark.parametrize("before_its_first_step", [True, False])
async def test_a_cancel_reaches_the_coroutine_even_before_the_task_ran(before_its_first_step: bool) -> None:
    ended: list[str] = []

    async def waits_forever() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            ended.append("cleaned up")

    task = eager.start(asyncio.get_running_loop(), waits_forever())
    assert task is not None
    if not before_its_first_step:
        await asyncio.sleep(0)  # the task has resumed the coroutine
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ended == ["cleaned up"]
