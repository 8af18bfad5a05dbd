"""The combination matrix (issue 13, item 8): the same scenarios with and without a middleware
file, over stdio (one session) and over Streamable HTTP (two concurrent sessions of two OAuth
subjects). After every scenario: each request got exactly one answer (none when cancelled),
neither session received anything of the other's, and both can still call a tool.

Test ids read `test_<scenario>[<transport>-<middleware>]`; `plain` = the tool file alone, `mw`
= with a second file holding a pass-through @middleware (tests/tools/matrix/mw.py).
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import types

from tests.support.matrix import (
    MATRIX_MW,
    MATRIX_TOOLS,
    Auth,
    HttpHosts,
    Peer,
    World,
    files_for,
    iter_combinations,
    open_world,
    own_http_host,
    text_of,
)

MATRIX = pytest.mark.parametrize(
    ("transport", "middleware"),
    [pytest.param(t, m, id=f"{t}-{m}") for t, m in iter_combinations()],
)
WITH_MIDDLEWARE = pytest.mark.parametrize(
    ("transport", "middleware"),
    [pytest.param(t, m, id=f"{t}-{m}") for t, m in iter_combinations() if m == "mw"],
)
BIG = 20 * 1024 * 1024
pytestmark = pytest.mark.filterwarnings("ignore:resources/subscribe is removed")


@asynccontextmanager
async def world_on(
    transport: str,
    middleware: str,
    tmp_path: Path,
    http_hosts: HttpHosts,
    flavour: str = "main",
    *options: str,
) -> AsyncIterator[World]:
    """Sessions on the shared host of this combination (a fresh one per test over stdio)."""
    http = http_hosts.get(middleware, flavour, *options) if transport == "http" else None
    async with open_world(
        transport, ["run", *files_for(middleware), *options], tmp_path, http, http_hosts.auth
    ) as world:
        yield world


def others(world: World, peer: Peer) -> list[Peer]:
    return [p for p in world.peers if p is not peer]


# -- tool-list control ---------------------------------------------------------------------------
async def _control(world: World, tool: str) -> None:
    a, b = world.a, world.b
    assert "secret" not in await a.tool_names()
    active = (await a.call(tool, {"tag": a.tag("control")})).structured_content
    assert active is not None and "secret" in active["result"], active
    await a.wait_for(lambda m: m.get("method") == "notifications/tools/list_changed", "tools/list_changed")
    assert "secret" in await a.tool_names()
    assert await a.text("secret", {}) == "secret"
    if b is not None:
        assert "secret" not in await b.tool_names()
        refused = await _call_or_error(b, "secret")
        assert refused != "secret", "session B could call the tool A enabled"
    await world.finish()
    if b is not None:
        assert b.notifications("notifications/tools/list_changed") == [], "B was told of A's list change"


async def _call_or_error(peer: Peer, name: str) -> str:
    from mcp.shared.exceptions import MCPError

    try:
        result = await peer.call(name, {})
    except MCPError as exc:
        return f"error {exc.error.code}: {exc.error.message}"
    return text_of(result) if not result.is_error else f"isError: {text_of(result)}"


@MATRIX
async def test_control_from_sync_tool(
    transport: str, middleware: str, tmp_path: Path, http_hosts: HttpHosts
) -> None:
    async with world_on(transport, middleware, tmp_path, http_hosts) as world:
        await _control(world, "unlock_sync")


@MATRIX
async def test_control_from_async_tool(
    transport: str, middleware: str, tmp_path: Path, http_hosts: HttpHosts
) -> None:
    async with world_on(transport, middleware, tmp_path, http_hosts) as world:
        await _control(world, "unlock_async")


# -- late control: the call timed out, then its tool enables `admin` -----------------------------
async def _late_control(world: World, tool: str) -> None:
    a = world.a
    tag = a.tag("late")
    result = await a.call(tool, {"tag": tag})
    assert result.is_error and "timed out" in text_of(result), text_of(result)
    outcome = await a.text("late_outcome", {"tag": tag})  # returns once the tool tried
    for peer in reversed(world.peers):  # over HTTP B first: gaining A's late admin is the worse leak
        names = await peer.tool_names()
        assert "admin" not in names, (
            f"session {peer.label} gained 'admin' from a control request of a call that had timed out "
            f"(the tool's enable_tools got: {outcome})"
        )
        called = await _call_or_error(peer, "admin")
        assert called != "admin", f"session {peer.label} could call 'admin' (late control: {outcome})"
    await world.finish()
    for peer in world.peers:
        assert peer.notifications("notifications/tools/list_changed") == [], (
            f"session {peer.label} was told of a list change made after the call timed out: {outcome}"
        )


@MATRIX
async def test_late_control_after_call_timeout(
    transport: str, middleware: str, tmp_path: Path, http_hosts: HttpHosts
) -> None:
    """A sync tool runs past --call-timeout, then enables `admin`: no session may gain it."""
    async with world_on(transport, middleware, tmp_path, http_hosts, "late", "--call-timeout", "1") as world:
        await _late_control(world, "late_login_sync")


@MATRIX
async def test_late_control_after_tool_timeout(
    transport: str, middleware: str, tmp_path: Path, http_hosts: HttpHosts
) -> None:
    """An async tool past its own @tool(timeout=0.5) enables `admin` while cancelled."""
    async with world_on(transport, middleware, tmp_path, http_hosts, "late", "--call-timeout", "1") as world:
        await _late_control(world, "late_login_async")


# -- sampling, elicitation, roots ---------------------------------------------------------------
async def _asking(world: World, tool: str) -> None:
    async def ask(peer: Peer) -> None:
        tag = peer.tag("ask")
        answer = await peer.text(tool, {"tag": tag})
        me = peer.label
        assert answer == f"{me} saw sample {tag}|accept:{me} for elicit {tag}|file:///root-of-{me}", answer
        assert peer.asked == {"sampling": 1, "elicitation": 1, "roots": 1}, peer.asked

    await world.each(ask)
    await world.finish()


@MATRIX
async def test_sampling_elicitation_roots_async(
    transport: str, middleware: str, tmp_path: Path, http_hosts: HttpHosts
) -> None:
    async with world_on(transport, middleware, tmp_path, http_hosts) as world:
        await _asking(world, "ask_all")


@MATRIX
async def test_sampling_elicitation_roots_sync(
    transport: str, middleware: str, tmp_path: Path, http_hosts: HttpHosts
) -> None:
    async with world_on(transport, middleware, tmp_path, http_hosts) as world:
        await _asking(world, "ask_all_sync")


# -- resources and prompts ------------------------------------------------------------------------
@MATRIX
async def test_resource_read_and_prompt_get(
    transport: str, middleware: str, tmp_path: Path, http_hosts: HttpHosts
) -> None:
    """resources/read and prompts/get whose functions log: the log goes to the reader only."""
    async with world_on(transport, middleware, tmp_path, http_hosts) as world:

        async def read(peer: Peer) -> None:
            tag = peer.tag("content")
            with anyio.fail_after(30):
                (content,) = (await peer.session.read_resource(f"matrix://note/{tag}")).contents
                assert isinstance(content, types.TextResourceContents) and content.text == f"note {tag}"
                prompt = await peer.session.get_prompt("greet", {"tag": tag})
            assert prompt.messages[0].content.text == f"hello {tag}"  # type: ignore[union-attr]
            await peer.wait_log(f"reading note {tag}")
            await peer.wait_log(f"prompting {tag}")

        await world.each(read)
        await world.finish()


# -- tasks ------------------------------------------------------------------------------------------
@MATRIX
async def test_task_augmented_call(
    transport: str, middleware: str, tmp_path: Path, http_hosts: HttpHosts
) -> None:
    """tools/call as a task (raw JSON-RPC: the official client cannot create one): its id, status
    and result belong to the session that made it."""
    async with world_on(transport, middleware, tmp_path, http_hosts) as world:

        async def run_task(peer: Peer) -> None:
            tag = peer.tag("task")
            created = await peer.raw_request(
                "tools/call", {"name": "task_job", "arguments": {"tag": tag}, "task": {"ttl": 60000}}
            )
            task_id = created["result"]["task"]["taskId"]
            peer.markers.append(task_id)
            await peer.wait_for(
                lambda m: (
                    m.get("method") == "notifications/tasks/status"
                    and m["params"]["taskId"] == task_id
                    and m["params"].get("statusMessage") == f"working {tag}"
                ),
                "the task's status message",
            )
            for other in others(world, peer):  # the other session cannot see or touch it
                got = await other.raw_request("tasks/get", {"taskId": task_id})
                assert "error" in got, f"session {other.label} read {peer.label}'s task: {got}"
            assert await peer.text("open_gate", {"tag": tag}) == f"opened {tag}"
            result = await peer.raw_request("tasks/result", {"taskId": task_id})
            assert result["result"]["content"][0]["text"] == f"task done {tag}", result
            listed = await peer.raw_request("tasks/list", {})
            assert [t["taskId"] for t in listed["result"]["tasks"]] == [task_id]

        await world.each(run_task)
        await world.finish()


# -- progress ----------------------------------------------------------------------------------------
@MATRIX
async def test_progress(transport: str, middleware: str, tmp_path: Path, http_hosts: HttpHosts) -> None:
    async with world_on(transport, middleware, tmp_path, http_hosts) as world:

        async def progress(peer: Peer) -> None:
            tag = peer.tag("progress")
            seen: list[tuple[float, float | None, str | None]] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                seen.append((value, total, message))

            assert (
                await peer.text("progress_steps", {"tag": tag, "steps": 3}, progress_callback=on_progress)
                == f"progressed {tag}"
            )
            assert seen == [(i, 3, f"{tag} step {i}") for i in (1, 2, 3)], seen

        await world.each(progress)
        await world.finish()


# -- print() -------------------------------------------------------------------------------------
@MATRIX
async def test_print_reaches_only_the_calling_session(
    transport: str, middleware: str, tmp_path: Path, http_hosts: HttpHosts
) -> None:
    async with world_on(transport, middleware, tmp_path, http_hosts) as world:
        for peer in world.peers:  # one after the other: each print is A's or B's, never both
            tag = peer.tag("print")
            assert await peer.text("print_secret", {"tag": tag}) == f"printed {tag}"
            await peer.wait_log(f"stdout of {tag}")
            await peer.wait_log(f"stderr of {tag}")
            for other in others(world, peer):
                await other.flush()  # anything sent to the other session has arrived by now
                other.assert_no_trace_of(peer)
        await world.finish()


# -- answer sizes ----------------------------------------------------------------------------------
async def _sized(world: World, size: int) -> None:
    async def big(peer: Peer) -> None:
        tag = peer.tag("size")
        text = await peer.text("blob", {"tag": tag, "size": size})
        assert len(text) == size and text.startswith(tag)

    await world.each(big)
    await world.finish()


@MATRIX
async def test_answer_of_1kb(transport: str, middleware: str, tmp_path: Path, http_hosts: HttpHosts) -> None:
    async with world_on(transport, middleware, tmp_path, http_hosts) as world:
        await _sized(world, 1024)


@MATRIX
async def test_answer_of_20mb(transport: str, middleware: str, tmp_path: Path, http_hosts: HttpHosts) -> None:
    async with world_on(transport, middleware, tmp_path, http_hosts) as world:
        await _sized(world, BIG)


# -- cancel ------------------------------------------------------------------------------------------
@MATRIX
async def test_cancel_of_a_running_call(
    transport: str, middleware: str, tmp_path: Path, http_hosts: HttpHosts
) -> None:
    """A cancels its running call (notifications/cancelled): it gets no answer; B's call of the
    same tool goes on and is answered once; the host serves on."""
    async with world_on(transport, middleware, tmp_path, http_hosts) as world:
        a, b = world.a, world.b
        a_tag = a.tag("cancel")
        b_tag = b.tag("cancel") if b is not None else ""
        started = anyio.Event()
        b_answer: list[str] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            started.set()

        async with anyio.create_task_group() as tg:

            async def b_call() -> None:
                assert b is not None
                b_answer.append(await b.text("wait_cancel", {"tag": b_tag}))

            if b is not None:
                tg.start_soon(b_call)
            scope = anyio.CancelScope()

            async def a_call() -> None:
                with scope:
                    await a.call("wait_cancel", {"tag": a_tag}, progress_callback=on_progress)
                    raise AssertionError("the call was answered although it was cancelled")

            tg.start_soon(a_call)
            with anyio.fail_after(30):
                await started.wait()
            scope.cancel()  # the official client sends notifications/cancelled
            assert await a.text("was_cancelled", {"tag": a_tag}) == "cancelled"
            if b is not None:
                assert await b.text("open_gate", {"tag": b_tag}) == f"opened {b_tag}"
        assert [m["method"] for m in a.sent if m.get("method") == "notifications/cancelled"]
        if b is not None:
            assert b_answer == [f"released {b_tag}"]
        await world.finish()


# -- reload mid-call ----------------------------------------------------------------------------------
def _copy_files(tmp_path: Path, middleware: str) -> list[Path]:
    """The tool file (and the middleware file) copied into folders of their own, for `dev`."""
    (tmp_path / "t").mkdir()
    files = [Path(shutil.copy(MATRIX_TOOLS, tmp_path / "t" / "tools.py"))]
    if middleware == "mw":
        (tmp_path / "m").mkdir()
        files.append(Path(shutil.copy(MATRIX_MW, tmp_path / "m" / "mw.py")))
    return files


def _rewrite(path: Path, old: str, new: str, extra_tool: str) -> None:
    source = path.read_text()
    assert old in source
    source = source.replace(old, new) + f"\n\n@tool\ndef {extra_tool}() -> str:\n    return 'new'\n"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(source)
    tmp.replace(path)


@asynccontextmanager
async def own_world(
    transport: str, command: str, files: list[Path], tmp_path: Path, auth: Auth, *options: str
) -> AsyncIterator[World]:
    args = [command, *map(str, files), *options]
    if transport == "stdio":
        async with open_world(transport, args, tmp_path) as world:
            yield world
        return
    async with (
        own_http_host(*args, auth=auth) as host,
        open_world(transport, [], tmp_path, host, auth) as world,
    ):
        yield world


async def _reload_mid_call(world: World, file: Path, old: str, new: str, extra: str, gate: Path) -> None:
    started = {peer.label: anyio.Event() for peer in world.peers}
    answers: dict[str, Any] = {}

    async def call(peer: Peer) -> None:
        tag = peer.tag("reload")

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            started[peer.label].set()

        answers[peer.label] = (
            tag,
            await peer.call("wait_file", {"tag": tag, "path": str(gate)}, progress_callback=on_progress),
        )

    async with anyio.create_task_group() as tg:
        for peer in world.peers:
            tg.start_soon(call, peer)
        with anyio.fail_after(30):
            for event in started.values():
                await event.wait()  # every call is running in the tool process
        _rewrite(file, old, new, extra)
        for peer in world.peers:  # every session hears of the reload
            await peer.wait_for(
                lambda m: m.get("method") == "notifications/tools/list_changed", "list_changed after the save"
            )
            assert extra in await peer.tool_names()
        gate.touch()  # the calls in flight finish now, on the old process
    for peer in world.peers:
        tag, result = answers[peer.label]
        assert not result.is_error, f"session {peer.label}: the call in flight failed: {text_of(result)}"
        assert text_of(result) == f"{tag} finished in version 1"
    await world.finish()


@MATRIX
async def test_reload_of_the_tool_file_mid_call(
    transport: str, middleware: str, tmp_path: Path, auth: Auth
) -> None:
    files = _copy_files(tmp_path, middleware)
    async with own_world(transport, "dev", files, tmp_path, auth) as world:
        await _reload_mid_call(world, files[0], "VERSION = 1", "VERSION = 2", "added_tool", tmp_path / "gate")
        assert await world.a.text("version", {}) == "2"


@WITH_MIDDLEWARE
async def test_reload_of_the_middleware_file_mid_call(
    transport: str, middleware: str, tmp_path: Path, auth: Auth
) -> None:
    files = _copy_files(tmp_path, middleware)
    async with own_world(transport, "dev", files, tmp_path, auth) as world:
        await _reload_mid_call(
            world, files[1], "MW_VERSION = 1", "MW_VERSION = 2", "added_mw_tool", tmp_path / "gate"
        )
        assert await world.a.text("mw_version", {}) == "2"


# -- crash mid-call -------------------------------------------------------------------------------------
@MATRIX
async def test_crash_of_the_tool_process_mid_call(
    transport: str, middleware: str, tmp_path: Path, auth: Auth
) -> None:
    """os._exit in the tool mid-call: exactly one error answer; the next calls work (restart)."""
    files = [MATRIX_TOOLS, *([MATRIX_MW] if middleware == "mw" else [])]
    async with own_world(transport, "run", files, tmp_path, auth) as world:
        a = world.a
        tag = a.tag("crash")
        result = await a.call("crash", {"tag": tag})
        assert result.is_error, text_of(result)
        assert "exited with status 7" in text_of(result), text_of(result)
        await world.finish()
