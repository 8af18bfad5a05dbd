"""The dev playground (`protomcp dev --ui`) in a real headless Chromium (Debian's `chromium`,
driven by Playwright's Python API; no browser download): the token guard, forms and calls,
progress and cancel, the elicitation dialog, reloads with their diff, load errors, crashes, the
AI client's session in the wire view (the official SDK client), and a page reload.

Every wait is on a page condition (Playwright's expect) or a host event, never a fixed sleep."""

from __future__ import annotations

import http.client
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from protomcp_host.playground.journal import Journal, message
from protomcp_host.tool_events import tool_diff
from tests.support.hosts import HOST, RawHost, write_atomic
from tests.support.installed import missing

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
URL = re.compile(r"protomcp playground: (http://\S+)")
WAIT = 20_000  # ms Playwright waits for a page condition

TOOLS = """
import asyncio, os
from typing import Literal, Optional
from pydantic import BaseModel
from protomcp_sdk import Context, tool

class Point(BaseModel):
    x: int
    y: int = 0

@tool
def add(a: int, b: int = 2) -> int:
    \"\"\"Add two numbers.\"\"\"
    return a + b

@tool
def shape(
    kind: Literal["circle", "square"], where: Point, tags: list[str], note: Optional[str] = None
) -> dict:
    \"\"\"Describe a shape.\"\"\"
    return {"kind": kind, "where": where.model_dump(), "tags": tags, "note": note}

@tool
async def slow(n: int, ctx: Context) -> str:
    \"\"\"Count slowly.\"\"\"
    for i in range(n):
        await ctx.report_progress(i + 1, n, f"step {i + 1}")
        await asyncio.sleep(0.2)
    return "finished"

class Name(BaseModel):
    name: str

@tool
async def ask(ctx: Context) -> str:
    \"\"\"Ask the person for a name.\"\"\"
    answer = await ctx.elicit("What is your name?", schema=Name)
    return f"{answer.action}: {answer.data.name if answer.data else None}"

@tool
def crash() -> str:
    \"\"\"Die without a word to the host, like a crash in C code.\"\"\"
    os.write(2, b"last words before the crash\\n")
    os._exit(3)
"""


def _playwright() -> Any:
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        missing("playwright is not installed (pip install -e '.[test]')")
    if CHROMIUM is None:
        missing("no chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)")
    return async_playwright


pytestmark = pytest.mark.anyio


@asynccontextmanager
async def browser() -> AsyncIterator[Any]:
    async with _playwright()() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            yield chromium
        finally:
            await chromium.close()


@asynccontextmanager
async def playground(
    tmp_path: Path, source: str = TOOLS, *options: str
) -> AsyncIterator[tuple[RawHost, str, Path]]:
    """`protomcp dev tools.py --ui --ui-port 0 [options]` (stdin open, no client yet) and the page URL."""
    _playwright()
    file = tmp_path / "tools.py"
    write_atomic(file, source)
    host = RawHost("dev", str(file), "--ui", "--ui-port", "0", *options, read_stdout=False)
    try:
        text = await anyio.to_thread.run_sync(host.wait_stderr, "protomcp playground: ")
        match = URL.search(text)
        assert match is not None, text
        yield host, match.group(1), file
    finally:
        code = await anyio.to_thread.run_sync(host.close)
    assert code == 0, host.stderr_text()  # a clean stop, page streams open or not


async def shot(page: Any, name: str) -> None:
    """With PLAYGROUND_SCREENSHOTS=DIR, save a screenshot of the page (docs/playground/*.png
    are made this way: PLAYGROUND_SCREENSHOTS=docs/playground pytest tests/playground/test_playground.py)."""
    folder = os.environ.get("PLAYGROUND_SCREENSHOTS")
    if folder:
        await page.screenshot(path=str(Path(folder) / f"{name}.png"))


async def open_page(chromium: Any, url: str) -> Any:
    page = await chromium.new_page(viewport={"width": 1100, "height": 760})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.errors = errors
    response = await page.goto(url)
    assert response.status == 200
    return page


# -- the token guard ----------------------------------------------------------------------------


def status(url: str, method: str = "GET", body: bytes | None = None, host: str | None = None) -> int:
    """The status of one plain HTTP request (stdlib; a Host header of our choosing)."""
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        target = parts.path + ("?" + parts.query if parts.query else "")
        headers = {"Host": host} if host else {}
        connection.request(method, target, body=body, headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


async def test_every_request_needs_the_token(tmp_path: Path) -> None:
    async with playground(tmp_path) as (_, url, _file):
        base, token = url.split("/?token=")

        def check() -> None:
            assert status(url) == 200
            for path in (
                "/",
                "/static/app.js",
                "/events",
                "/?token=wrong",
                "/static/app.js?token=" + token[:-1],
            ):
                assert status(base + path) == 403, path
            assert status(base + "/rpc", "POST", b"{}") == 403
            # A DNS-rebinding page has the right address but another Host name.
            assert status(url, host="evil.example:80") == 403
            assert status(f"{base}/static/app.js?token={token}") == 200
            assert status(f"{base}/static/nope.js?token={token}") == 404
            assert status(f"{base}/rpc?token={token}", "POST", b"{not json") == 400

        await anyio.to_thread.run_sync(check)
        async with browser() as chromium:
            page = await chromium.new_page()
            response = await page.goto(url.split("?")[0])
            assert response.status == 403


# -- tools: forms, calls, progress, cancel, elicitation -----------------------------------------


async def test_forms_call_progress_cancel_and_elicitation(tmp_path: Path) -> None:
    from playwright.async_api import expect

    async with playground(tmp_path) as (_, url, _file), browser() as chromium:
        page = await open_page(chromium, url)
        await expect(page.locator("#tool-list [data-tool=add]")).to_be_visible(timeout=WAIT)

        # A flat form with a default.
        await page.click("#tool-list [data-tool=add]")
        await expect(page.locator("#f-b")).to_have_value("2")
        await page.fill("#f-a", "40")
        await page.click("#call")
        first = page.locator("#calls .call").first
        await expect(first.locator(".status")).to_contain_text("done", timeout=WAIT)
        await expect(first.locator(".result pre")).to_have_text("42")

        # Enum, nested object, array and nullable fields.
        await page.click("#tool-list [data-tool=shape]")
        await page.select_option("#f-kind", label="square")
        await page.fill("#f-where\\.x", "3")
        await page.click("[data-field=tags] button.add")
        await page.click("[data-field=tags] button.add")
        await page.fill("#f-tags\\.0", "red")
        await page.fill("#f-tags\\.1", "blue")
        await page.uncheck("[data-null=note]")
        await page.fill("#f-note", "hi")
        await page.click("#call")
        await expect(first.locator(".status")).to_contain_text("done", timeout=WAIT)
        tree = first.locator(".tree")
        await expect(tree).to_contain_text('kind: "square"')
        await expect(tree).to_contain_text('note: "hi"')
        await expect(tree).to_contain_text('"blue"')
        await expect(first.locator("h3")).to_contain_text('"where":{"x":3,"y":0}')
        await shot(page, "form")

        # Live progress, then cancel.
        await page.click("#tool-list [data-tool=slow]")
        await page.fill("#f-n", "200")
        await page.click("#call")
        await expect(first.locator(".progress")).to_contain_text("step 2", timeout=WAIT)
        await expect(first.locator("progress")).to_have_attribute("max", "200")
        await shot(page, "progress")
        await first.locator("button.cancel").click()
        await expect(first.locator(".status")).to_contain_text("cancelled", timeout=WAIT)

        # The tool asks; the person answers in a dialog.
        await page.click("#tool-list [data-tool=ask]")
        await page.click("#call")
        dialog = page.locator("#ask")
        await expect(dialog).to_be_visible(timeout=WAIT)
        await expect(dialog.locator("#ask-message")).to_have_text("What is your name?")
        await page.fill("#f-ask\\.name", "Ada")
        await shot(page, "elicitation")
        await page.click("#ask-accept")
        await expect(first.locator(".result pre")).to_have_text("accept: Ada", timeout=WAIT)
        # Declining is an answer too.
        await page.click("#call")
        await expect(dialog).to_be_visible(timeout=WAIT)
        await page.click("#ask-decline")
        await expect(first.locator(".result pre")).to_have_text("decline: None", timeout=WAIT)

        # The page's own session in the wire view: grouped by request, with its messages.
        await page.click("[data-view=wire]")
        group = page.locator(".wire-group", has_text="tools/call slow")
        await expect(group).to_contain_text("notifications/progress")
        await expect(group).to_contain_text("notifications/cancelled")
        await expect(page.locator(".wire-group", has_text="tools/call ask").first).to_contain_text(
            "elicitation/create"
        )
        await page.locator(".wire-group", has_text="tools/call slow").locator("summary").first.click()
        await shot(page, "wire")

        # A reload of the page keeps its calls (replayed from the journal), on the same session;
        # a call running meanwhile goes on, and its result reaches the reloaded page.
        await page.click("[data-view=tools]")
        await page.click("#tool-list [data-tool=slow]")
        await page.fill("#f-n", "3")
        await page.click("#call")
        await expect(first.locator(".progress")).to_contain_text("step 1", timeout=WAIT)
        await page.reload()
        await expect(page.locator("#calls .call")).to_have_count(6, timeout=WAIT)
        await expect(first.locator(".result pre")).to_have_text("finished", timeout=WAIT)
        await expect(page.locator("#calls .call").last.locator(".result pre")).to_have_text("42")
        await page.click("[data-view=wire]")
        await expect(page.locator(".wire-group", has_text="tools/list").first).to_be_visible()
        await expect(page.locator(".wire-group[data-method=initialize]")).to_have_count(1)
        assert page.errors == []


# -- results, sampling, tasks, resources, prompts, completions --------------------------------

EVERYTHING = Path(__file__).resolve().parents[2] / "examples" / "tools" / "everything.py"


# An unexpected exception (the fixture's own jobs now fail in other ways: see everything.py).
EXPLODE = '''

@tool
def explode() -> str:
    """Fail with an unexpected exception."""
    raise RuntimeError("crashed on purpose")
'''


async def test_results_sampling_tasks_resources_prompts_and_completions(tmp_path: Path) -> None:
    from playwright.async_api import expect

    async with (
        playground(tmp_path, EVERYTHING.read_text() + EXPLODE) as (_, url, _file),
        browser() as chromium,
    ):
        page = await open_page(chromium, url)
        first = page.locator("#calls .call").first

        async def call(tool: str) -> None:
            await page.click(f"#tool-list [data-tool={tool}]")
            await page.click("#call")

        # Images and audio are shown; a tool error is an error; an unexpected exception comes
        # with the tool's traceback (its debug log line).
        await expect(page.locator("#tool-list [data-tool=test_image_content]")).to_be_visible(timeout=WAIT)
        await call("test_image_content")
        await expect(first.locator(".result img")).to_have_attribute(
            "src", re.compile("^data:image/png;base64,")
        )
        await call("test_audio_content")
        await expect(first.locator(".result audio")).to_have_attribute("src", re.compile("^data:audio/wav;"))
        await call("test_error_handling")
        await expect(first).to_have_class(re.compile("error"))
        await expect(first.locator(".result")).to_contain_text("intentionally returns an error")
        await call("explode")
        await expect(first.locator(".logs")).to_contain_text("Traceback", timeout=WAIT)
        await expect(first.locator(".logs")).to_contain_text("crashed on purpose")
        await shot(page, "tools")

        # Sampling: the person is the model.
        await page.click("#tool-list [data-tool=test_sampling]")
        await page.fill("#f-prompt", "What is 2+2?")
        await page.click("#call")
        await expect(page.locator("#ask")).to_be_visible(timeout=WAIT)
        await expect(page.locator("#ask-message")).to_contain_text("What is 2+2?")
        await page.fill("#f-sample", "Four.")
        await shot(page, "sampling")
        await page.click("#ask-accept")
        await expect(first.locator(".result pre")).to_have_text("LLM response: Four.", timeout=WAIT)

        # Tasks: run as a task, follow its status, read its result; cancel another.
        await page.click("#tool-list [data-tool=slow_compute]")
        await page.fill("#f-seconds", "0.2")
        await page.check("#as-task")
        await page.click("#call")
        await expect(first.locator(".status")).to_contain_text("task created", timeout=WAIT)
        await page.fill("#f-seconds", "60")
        await page.click("#call")
        await expect(page.locator("#calls .call", has_text="task created")).to_have_count(2, timeout=WAIT)
        await page.click("[data-view=tasks]")
        tasks = page.locator("#task-list [data-task]")
        await expect(tasks).to_have_count(2)
        done, running = tasks.nth(1), tasks.nth(0)
        await expect(done.locator(".status")).to_contain_text("completed", timeout=WAIT)
        await done.get_by_role("button", name="Result").click()
        await expect(done.locator(".task-result")).to_contain_text("Computed result after 0.2s", timeout=WAIT)
        await expect(running.locator(".status")).to_contain_text("working")
        await running.get_by_role("button", name="Cancel").click()
        await expect(running.locator(".status")).to_contain_text("cancelled", timeout=WAIT)
        await shot(page, "tasks")

        # Resources: a static one, and a template whose variable has completions.
        await page.click("[data-view=resources]")
        await page.get_by_role("button", name=re.compile("^static-text")).click()
        await page.click("#resource-form button.primary")
        await expect(page.locator("#reads .card").first).to_contain_text(
            "content of the static text resource"
        )
        await page.get_by_role("button", name=re.compile("^template-data")).click()
        await page.fill("#f-tv-id", "1")
        await expect(page.locator("#dl-tv-id option")).to_have_count(2, timeout=WAIT)  # 1, 123
        await page.fill("#f-tv-id", "123")
        await page.click("#resource-form button.primary")
        await expect(page.locator("#reads .card").first).to_contain_text("Data for ID: 123", timeout=WAIT)
        await shot(page, "resources")

        # Prompts: arguments with completions, the rendered messages.
        await page.click("[data-view=prompts]")
        await page.get_by_role("button", name=re.compile("^test_prompt_with_arguments")).click()
        await page.fill("#f-pa-arg1", "pa")
        await expect(page.locator("#dl-pa-arg1 option")).to_have_count(3, timeout=WAIT)
        await page.fill("#f-pa-arg1", "paris")
        await page.fill("#f-pa-arg2", "x")
        await page.click("#prompt-form button.primary")
        await expect(page.locator("#prompt-results .card").first).to_contain_text(
            "Prompt with arguments: arg1='paris', arg2='x'", timeout=WAIT
        )
        await page.get_by_role("button", name=re.compile("^test_prompt_with_image")).click()
        await page.click("#prompt-form button.primary")
        await expect(page.locator("#prompt-results .card").first.locator("img")).to_be_visible(timeout=WAIT)
        await shot(page, "prompts")
        assert page.errors == []


async def test_skills_view_shows_each_skill_and_reads_its_files(tmp_path: Path) -> None:
    from playwright.async_api import expect

    skills = Path(__file__).resolve().parents[2] / "examples" / "skills"
    async with playground(tmp_path, TOOLS, "--skills", str(skills)) as (_, url, _file), browser() as chromium:
        page = await open_page(chromium, url)
        await page.click("[data-view=skills]")
        await page.click("#skill-list [data-skill=adding-a-tool]", timeout=WAIT)
        detail = page.locator("#skill-detail")
        await expect(detail).to_contain_text("skill://adding-a-tool/references/CHECKLIST.md")
        await expect(detail.locator(".tree")).to_contain_text('"MIT"')  # the front matter, verbatim
        await detail.locator("tr", has_text="CHECKLIST.md").get_by_role("button", name="Read").click()
        await expect(page.locator("#skill-reads .card").first).to_contain_text(
            "Checklist for a new tool", timeout=WAIT
        )
        await shot(page, "skills")
        assert page.errors == []


# -- reloads, load errors, crashes --------------------------------------------------------------


async def test_reload_diff_load_error_and_crash(tmp_path: Path) -> None:
    from playwright.async_api import expect

    async with playground(tmp_path) as (host, url, file), browser() as chromium:
        page = await open_page(chromium, url)
        await expect(page.locator("#tool-list [data-tool=add]")).to_be_visible(timeout=WAIT)

        # A new tool and a changed description: the list follows, the event shows the diff.
        changed = TOOLS.replace('"""Add two numbers."""', '"""Add two whole numbers."""')
        fresh = '\n@tool\ndef fresh(word: str) -> str:\n    """Echo."""\n    return word\n'
        write_atomic(file, changed + fresh)  # (described: else a warning would be an event too)
        await expect(page.locator("#tool-list [data-tool=fresh]")).to_be_visible(timeout=WAIT)
        await expect(page.locator("#event-count")).to_have_text("1")
        await page.click("[data-view=events]")
        reload = page.locator(".event.loaded").first
        await expect(reload).to_contain_text("added: fresh")
        await expect(reload).to_contain_text("changed: add")
        await expect(reload.locator("[data-changed=add] .diff .del")).to_contain_text("Add two numbers.")
        await expect(reload.locator("[data-changed=add] .diff .add")).to_contain_text(
            "Add two whole numbers."
        )
        await shot(page, "reload")

        # A file that fails to load: the traceback, and the old tools keep serving.
        write_atomic(file, TOOLS + "\nraise RuntimeError('broken on purpose')\n")
        problem = page.locator(".event.problem").first
        await expect(problem).to_contain_text("broken on purpose", timeout=WAIT)
        await expect(problem).to_contain_text("Traceback")
        await expect(problem).to_contain_text("keeps serving")
        await shot(page, "load-error")

        # A crash: the exit status and the last lines the process wrote on stderr.
        await page.click("[data-view=tools]")
        await page.click("#tool-list [data-tool=crash]")
        await page.click("#call")
        await expect(page.locator("#calls .call").first.locator(".status")).to_contain_text(
            "error", timeout=WAIT
        )
        await page.click("[data-view=events]")
        crash = page.locator(".event.problem", has_text="exited with status 3").first
        await expect(crash).to_contain_text("last words before the crash", timeout=WAIT)
        await shot(page, "crash")
        assert page.errors == []
    assert "broken on purpose" in host.stderr_text()


# -- the AI client's session, read-only ---------------------------------------------------------


async def test_wire_view_shows_the_ai_clients_session(tmp_path: Path) -> None:
    """The official SDK client talks to `protomcp dev --ui` over stdio; the page shows its
    messages, grouped by request, and the page's own session stays separate."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from playwright.async_api import expect

    _playwright()
    file = tmp_path / "tools.py"
    write_atomic(file, TOOLS)
    read_fd, write_fd = os.pipe()
    found = threading.Event()
    lines: list[str] = []

    def read_stderr() -> None:
        with open(read_fd, encoding="utf-8", errors="replace") as stream:
            for line in stream:
                lines.append(line)
                if URL.search(line):
                    found.set()
        found.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    params = StdioServerParameters(
        command=HOST[0], args=[*HOST[1:], "dev", str(file), "--ui", "--ui-port", "0"], env=dict(os.environ)
    )
    with open(write_fd, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("add", {"a": 1, "b": 41})
            assert result.structured_content == {"result": 42}
            assert await anyio.to_thread.run_sync(found.wait, 20)
            match = URL.search("".join(lines))
            assert match is not None, "".join(lines)
            async with browser() as chromium:
                page = await open_page(chromium, match.group(1))
                await page.click("[data-view=wire]")
                await page.check("input[name=wire-session][value=client]")
                call = page.locator(".wire-group[data-session=client]", has_text="tools/call add")
                await expect(call).to_contain_text("2 messages", timeout=WAIT)
                await call.locator("summary").first.click()
                await expect(call).to_contain_text("result")
                await shot(page, "wire-client")
                await expect(page.locator(".wire-group[data-method=initialize]")).to_have_count(1)
                # The client's calls are not the page's: its Tools view has none of them.
                await page.click("[data-view=tools]")
                await expect(page.locator("#tool-list [data-tool=add]")).to_be_visible(timeout=WAIT)
                await expect(page.locator("#calls .call")).to_have_count(0)
    reader.join(10)


# -- the sans-IO parts ----------------------------------------------------------------------------


async def test_journal_numbers_bounds_and_wakes() -> None:
    journal = Journal(max_records=3)
    for n in range(5):
        journal.add("output", line=str(n))
    assert [n for n, _ in journal.records] == [3, 4, 5]
    assert [orjson.loads(r)["line"] for _, r in journal.since(3)] == ["3", "4"]
    assert journal.since(5) == []
    assert [n for n, _ in journal.since(0)] == [3, 4, 5]  # what was dropped is skipped

    woke = anyio.Event()

    async def waiter() -> None:
        await journal.wait(5)
        woke.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        assert not woke.is_set()
        journal.add("problem", message="x")
    assert woke.is_set()
    journal.close()
    with anyio.fail_after(1):
        await journal.wait(100)  # closed: returns at once

    small = Journal(max_bytes=200)
    for _ in range(10):
        small.add("output", line="x" * 50)
    assert small.size <= 200 and len(small.records) >= 1


def test_messages_are_recorded_faithfully() -> None:
    assert orjson.loads(orjson.dumps({"m": message(b'{"id":1}')})) == {"m": {"id": 1}}
    assert message(b"\xff not json") == "\ufffd not json"
    cut = message(b'"' + b"x" * 100 + b'"', limit=10)
    assert cut["truncated"] == 102


def test_tool_diff() -> None:
    before = {"a": ({"name": "a"}, False), "b": ({"name": "b", "description": "old"}, False)}
    after = {"b": ({"name": "b", "description": "new"}, False), "c": ({"name": "c"}, False)}
    diff = tool_diff(before, after)
    assert (diff["added"], diff["changed"], diff["removed"]) == (["c"], ["b"], ["a"])
    assert diff["before"] == {"b": {"name": "b", "description": "old"}}
    assert diff["tools"]["b"]["description"] == "new"


def test_ui_port_needs_ui() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "protomcp_host", "dev", "x.py", "--ui-port", "1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2 and "--ui-port: only with --ui" in done.stderr
