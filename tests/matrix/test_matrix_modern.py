"""The combination matrix in the 2026-07-28 era: the official client's session in the modern era
(server/discover, `_meta` on every request) with a middleware file loaded, over stdio (one
principal) and Streamable HTTP (two concurrent sessions of two OAuth subjects, i.e. two
principals). Scenarios: tool-list control (per principal), a 20 MB answer, a reload of the tool
file mid-call, a crash mid-call. After each: every request got exactly one answer, neither
session received anything of the other's, and both still call a tool.

Test ids read `test_<scenario>[<transport>-mw]` (tests/tools/matrix/mw.py is the middleware)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.matrix.test_matrix import BIG, _copy_files, _rewrite
from tests.support.matrix import (
    MATRIX_MW,
    MATRIX_TOOLS,
    Auth,
    HttpHosts,
    Peer,
    World,
    files_for,
    open_world,
    own_http_host,
    text_of,
)

MODERN_MATRIX = pytest.mark.parametrize(
    ("transport", "middleware"), [pytest.param(t, "mw", id=f"{t}-mw") for t in ("stdio", "http")]
)


@asynccontextmanager
async def modern_world(
    transport: str, middleware: str, tmp_path: Path, http_hosts: HttpHosts
) -> AsyncIterator[World]:
    http = http_hosts.get(middleware) if transport == "http" else None
    args = ["run", *files_for(middleware)]
    async with open_world(transport, args, tmp_path, http, http_hosts.auth, modern=True) as world:
        assert world.a.session.protocol_version == "2026-07-28"
        yield world


@asynccontextmanager
async def own_modern_world(
    transport: str, command: str, files: list[Path], tmp_path: Path, auth: Auth
) -> AsyncIterator[World]:
    args = [command, *map(str, files)]
    if transport == "stdio":
        async with open_world(transport, args, tmp_path, modern=True) as world:
            yield world
        return
    async with (
        own_http_host(*args, auth=auth) as host,
        open_world(transport, [], tmp_path, host, auth, modern=True) as world,
    ):
        yield world


@MODERN_MATRIX
async def test_modern_tool_control_is_the_principals(
    transport: str, middleware: str, tmp_path: Path, http_hosts: HttpHosts
) -> None:
    """A tool enables a hidden tool: its principal's list has it, the other principal's not."""
    async with modern_world(transport, middleware, tmp_path, http_hosts) as world:
        a, b = world.a, world.b
        active = (await a.call("unlock_async", {"tag": a.tag("control")})).structured_content
        assert active is not None and "secret" in active["result"], active
        assert "secret" in await a.tool_names()
        assert await a.text("secret", {}) == "secret"
        if b is not None:
            assert "secret" not in await b.tool_names()
            from mcp.shared.exceptions import MCPError

            with pytest.raises(MCPError) as refused:  # another principal's list: not there
                await b.call("secret", {})
            assert refused.value.error.code == -32602
        await world.finish()


@MODERN_MATRIX
async def test_modern_answer_of_20mb(
    transport: str, middleware: str, tmp_path: Path, http_hosts: HttpHosts
) -> None:
    async with modern_world(transport, middleware, tmp_path, http_hosts) as world:

        async def big(peer: Peer) -> None:
            tag = peer.tag("size")
            text = await peer.text("blob", {"tag": tag, "size": BIG})
            assert len(text) == BIG and text.startswith(tag)

        await world.each(big)
        await world.finish()


@MODERN_MATRIX
async def test_modern_reload_of_the_tool_file_mid_call(
    transport: str, middleware: str, tmp_path: Path, auth: Auth
) -> None:
    """Calls in flight when the tool file is saved finish on the old process, answered once;
    the next list has the new tool (no listen stream here: the modern era tells only those)."""
    files = _copy_files(tmp_path, middleware)
    gate = tmp_path / "gate"
    async with own_modern_world(transport, "dev", files, tmp_path, auth) as world:
        started = {peer.label: anyio.Event() for peer in world.peers}
        answers: dict[str, Any] = {}

        async def call(peer: Peer) -> None:
            tag = peer.tag("reload")

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                started[peer.label].set()

            result = await peer.call(
                "wait_file", {"tag": tag, "path": str(gate)}, progress_callback=on_progress
            )
            answers[peer.label] = (tag, result)

        async with anyio.create_task_group() as tg:
            for peer in world.peers:
                tg.start_soon(call, peer)
            with anyio.fail_after(30):
                for event in started.values():
                    await event.wait()  # every call is running in the tool process
            _rewrite(files[0], "VERSION = 1", "VERSION = 2", "added_tool")
            with anyio.fail_after(30):  # the reload lands: tools/list shows the new tool
                while "added_tool" not in await world.a.tool_names():
                    await anyio.sleep(0.05)
            gate.touch()  # the calls in flight finish now, on the old process
        for peer in world.peers:
            tag, result = answers[peer.label]
            assert not result.is_error, f"session {peer.label}: the call in flight failed: {text_of(result)}"
            assert text_of(result) == f"{tag} finished in version 1"
        assert await world.a.text("version", {}) == "2"
        await world.finish()


@MODERN_MATRIX
async def test_modern_crash_of_the_tool_process_mid_call(
    transport: str, middleware: str, tmp_path: Path, auth: Auth
) -> None:
    """os._exit in the tool mid-call: exactly one error answer; the next calls work (restart)."""
    async with own_modern_world(transport, "run", [MATRIX_TOOLS, MATRIX_MW], tmp_path, auth) as world:
        a = world.a
        result = await a.call("crash", {"tag": a.tag("crash")})
        assert result.is_error and "exited with status 7" in text_of(result), text_of(result)
        await world.finish()
