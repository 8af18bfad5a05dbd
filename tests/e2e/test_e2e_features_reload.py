"""Resources, templates and prompts from several files and across reloads (`protomcp dev`)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio

from tests.e2e.test_e2e_dev import Watcher, write_atomic
from tests.support.hosts import HOST, mcp_session

LISTS = ("notifications/resources/list_changed", "notifications/prompts/list_changed")


def feature_source(*, resource: str = "", prompt: str = "", text: str = "v1") -> str:
    # The tool's description carries `text` too: a reload that changes only content still
    # announces itself (tools/list_changed), for the test to wait on.
    out = [
        "from protomcp_sdk import prompt, resource, tool\n",
        f"@tool(description={text!r})\ndef noop() -> str:\n    return 'ok'\n",
    ]
    if resource:
        out.append(f"@resource({resource!r})\ndef res() -> str:\n    return {text!r}\n")
    if prompt:
        out.append(f"@prompt\ndef {prompt}() -> str:\n    '''A prompt.'''\n    return {text!r}\n")
    return "\n".join(out)


class Notes:
    """Collects the list_changed notifications of resources and prompts."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.arrived = anyio.Event()

    async def on_message(self, message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method in LISTS or method == "notifications/tools/list_changed":
            self.seen.append(method)
            self.arrived.set()

    async def wait(self, method: str, count: int = 1, timeout: float = 15) -> None:
        with anyio.fail_after(timeout):
            while self.seen.count(method) < count:
                self.arrived = anyio.Event()
                await self.arrived.wait()


async def test_resources_and_prompts_reload_with_their_file(tmp_path: Path) -> None:
    file = tmp_path / "tools.py"
    write_atomic(file, feature_source(resource="test://a", prompt="first"))
    notes = Notes()
    async with mcp_session("dev", str(file), message_handler=notes.on_message) as session:
        assert [str(r.uri) for r in (await session.list_resources()).resources] == ["test://a"]
        assert (await session.read_resource("test://a")).contents[0].text == "v1"
        # A new resource: resources list_changed only.
        write_atomic(file, feature_source(resource="test://b", prompt="first"))
        await notes.wait(LISTS[0])
        assert [str(r.uri) for r in (await session.list_resources()).resources] == ["test://b"]
        assert notes.seen == [LISTS[0]]
        # A new prompt: prompts list_changed only.
        write_atomic(file, feature_source(resource="test://b", prompt="second"))
        await notes.wait(LISTS[1])
        assert [p.name for p in (await session.list_prompts()).prompts] == ["second"]
        assert notes.seen == [LISTS[0], LISTS[1]]
        # New content behind the same resource and prompt lists: no list_changed for them.
        write_atomic(file, feature_source(resource="test://b", prompt="second", text="v2"))
        await notes.wait("notifications/tools/list_changed")  # the tool's description changed
        assert (await session.read_resource("test://b")).contents[0].text == "v2"
        assert (await session.get_prompt("second")).messages[0].content.text == "v2"
        assert notes.seen == [LISTS[0], LISTS[1], "notifications/tools/list_changed"]


async def test_resources_and_prompts_of_several_files_merge(tmp_path: Path) -> None:
    write_atomic(tmp_path / "a.py", feature_source(resource="test://a", prompt="pa", text="from a"))
    write_atomic(
        tmp_path / "b.py",
        feature_source(resource="test://b", prompt="pb", text="from b").replace("noop", "noop_b"),
    )
    async with mcp_session("run", str(tmp_path)) as session:
        assert {str(r.uri) for r in (await session.list_resources()).resources} == {"test://a", "test://b"}
        assert (await session.read_resource("test://a")).contents[0].text == "from a"
        assert (await session.read_resource("test://b")).contents[0].text == "from b"
        assert (await session.get_prompt("pb")).messages[0].content.text == "from b"


def _startup_error(tmp_path: Path) -> str:
    proc = subprocess.run(
        [*HOST, "run", str(tmp_path)], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 1 and proc.stdout == ""
    return proc.stderr


def test_resource_clash_is_a_startup_error(tmp_path: Path) -> None:
    write_atomic(tmp_path / "one.py", feature_source(resource="test://same"))
    write_atomic(tmp_path / "two.py", feature_source(resource="test://same").replace("noop", "noop2"))
    stderr = _startup_error(tmp_path)
    assert "resource clash: 'test://same'" in stderr and "one.py" in stderr and "two.py" in stderr


def test_prompt_clash_is_a_startup_error(tmp_path: Path) -> None:
    write_atomic(tmp_path / "one.py", feature_source(prompt="same"))
    write_atomic(tmp_path / "two.py", feature_source(prompt="same").replace("noop", "noop2"))
    stderr = _startup_error(tmp_path)
    assert "prompt clash: 'same'" in stderr and "one.py" in stderr and "two.py" in stderr


async def test_a_reload_that_would_clash_keeps_the_old_version(tmp_path: Path) -> None:
    write_atomic(tmp_path / "a.py", feature_source(resource="test://a", text="from a"))
    b = tmp_path / "b.py"
    write_atomic(b, feature_source(resource="test://b", text="from b").replace("noop", "noop_b"))
    watcher = Watcher()
    async with mcp_session("dev", str(tmp_path), logging_callback=watcher.on_log) as session:
        assert len((await session.list_resources()).resources) == 2  # both files loaded and watched
        clashing = feature_source(resource="test://a", text="b again").replace("noop", "noop_b")
        write_atomic(b, clashing)
        error = await watcher.wait_log(lambda p: p.level == "error" and "clash" in str(p.data))
        assert "'test://a'" in str(error.data) and "a.py" in str(error.data) and "b.py" in str(error.data)
        assert (await session.read_resource("test://a")).contents[0].text == "from a"
        assert (await session.read_resource("test://b")).contents[0].text == "from b"  # b's old version
