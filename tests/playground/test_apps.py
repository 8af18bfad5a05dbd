"""The playground as an MCP Apps host (extension `io.modelcontextprotocol/ui`, 2026-01-26), in
Debian's Chromium through Playwright: a tool's app is read through the host at each call,
framed through the sandbox proxy on another origin with its declared CSP, told the tool's
input and result (and nothing before it says it is initialized), and served: tool calls
(refused when the tool's visibility leaves "app" out), resource reads, links, messages. The
app reaches neither the page nor its token. An app built on the official app-side SDK
(`@modelcontextprotocol/ext-apps`, pinned in tests/apps) works the same way.

Every wait is on a page condition (Playwright's expect), never a fixed sleep."""

from __future__ import annotations

import http.server
import json
import re
import shutil
import subprocess
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from protomcp_host.playground.sandbox import content_security_policy
from tests.playground.test_playground import WAIT, browser, open_page, playground, shot, status
from tests.support.hosts import write_atomic
from tests.support.installed import missing

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]
APPS_SDK = ROOT / "tests" / "apps"
APP_MIME = "text/html;profile=mcp-app"

TOOLS = """
import asyncio
from pathlib import Path
from protomcp_sdk import UI, resource, tool

HERE = Path(__file__).parent
VERSION = "one"

@resource("ui://demo/app", ui=UI(connect_domains=[__CONNECT__]))
def app() -> str:
    return (HERE / "app.html").read_text().replace("{{VERSION}}", VERSION)

@tool(ui="ui://demo/app")
def show(word: str) -> dict:
    \"\"\"Show a word in the app.\"\"\"
    return {"word": word}

@tool(ui="ui://demo/app")
async def wait(word: str) -> str:
    \"\"\"Take a minute (to be cancelled).\"\"\"
    await asyncio.sleep(60)
    return word

@tool(visibility=["app"])
def shout(word: str) -> str:
    \"\"\"Only the app calls this.\"\"\"
    return word.upper() + "!"

@tool(visibility=["model"])
def secret() -> str:
    \"\"\"Only the model calls this.\"\"\"
    return "for the model only"
"""

# An app without any SDK (raw_app.html): it records every message it gets, says initialized only
# when told (its #ready button), and has a button per thing it asks of the host.
RAW_APP = (Path(__file__).parent / "raw_app.html").read_text()


class _Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def cors_server() -> Iterator[int]:
    """A local server any origin may fetch from (CORS *): only the CSP stands in the way."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def raw_app(port: int) -> str:
    """The raw app with its URLs: 127.0.0.1:port is declared in connectDomains, localhost:port
    (the same server, another origin) is not."""
    return (
        RAW_APP.replace("__DECLARED__", json.dumps(f"http://127.0.0.1:{port}/data"))
        .replace("__UNDECLARED__", json.dumps(f"http://localhost:{port}/data"))
        .replace("__LINK__", json.dumps(f"http://127.0.0.1:{port}/opened"))
    )


def tools(port: int) -> str:
    return TOOLS.replace("__CONNECT__", repr(f"http://127.0.0.1:{port}"))


async def call_show(page: Any, word: str, tool: str = "show") -> Any:
    """Call `show` (or `tool`) from the page; the card of that call (by its id: calls the app
    makes come on top of it)."""
    from playwright.async_api import expect

    await page.click(f"#tool-list [data-tool={tool}]")
    await page.fill("#f-word", word)
    # (the page's own calls: an app may call a tool the moment it has the result, and that
    # call's card can land before this count is read)
    cards = page.locator("#calls .call").filter(has_not=page.locator(".from-app"))
    before = await cards.count()
    await page.click("#call")
    await expect(cards).to_have_count(before + 1, timeout=WAIT)
    call = await cards.first.get_attribute("data-call")
    return page.locator(f'#calls .call[data-call="{call}"]')


def app_frame(card: Any) -> Any:
    """The app inside the proxy inside the card."""
    return card.frame_locator(".app iframe").frame_locator("iframe")


async def test_the_page_hosts_an_app(tmp_path: Path) -> None:
    from playwright.async_api import expect

    with cors_server() as port:
        write_atomic(tmp_path / "app.html", raw_app(port))
        async with playground(tmp_path, tools(port)) as (_, url, file), browser() as chromium:
            token = url.split("?token=")[1]
            page = await open_page(chromium, url)
            await expect(page.locator("#tool-list [data-tool=show]")).to_be_visible(timeout=WAIT)
            card = await call_show(page, "hello")
            await expect(card.locator(".status")).to_contain_text("done", timeout=WAIT)
            app = app_frame(card)
            await expect(app.locator("#host")).to_have_text("protomcp-playground for show", timeout=WAIT)

            # Nothing but answers before the app says it is initialized: the call is done, yet a
            # ping round trip (posted after anything the page would have sent) shows only answers.
            await app.locator("#ping").click()
            await expect(app.locator("#answer")).to_have_text("pong", timeout=WAIT)
            await expect(app.locator("#received")).to_have_text("response 1\nresponse 2")
            await app.locator("#ready").click()
            await expect(app.locator("#received")).to_have_text(
                "response 1\nresponse 2\nui/notifications/tool-input\nui/notifications/tool-result",
                timeout=WAIT,
            )

            # The messages between the page and the app, in order, the HTML summed up.
            wire = card.locator(".app-wire")
            await wire.locator("summary").first.click()
            summaries = await wire.locator(".wire-msg summary").all_text_contents()
            assert summaries[:5] == [
                "→ ui/notifications/sandbox-proxy-ready",
                "← ui/notifications/sandbox-resource-ready",
                "→ ui/initialize #1",
                "← result #1",
                "→ ping #2",
            ], summaries
            assert summaries[-2:] == ["← ui/notifications/tool-input", "← ui/notifications/tool-result"]
            html = raw_app(port).replace("{{VERSION}}", "one")
            await expect(wire).to_contain_text(f'"html": "({len(html)} characters)"')

            # A tool the app may call, through the host (a call of the page's session, marked
            # as the app's); one whose visibility is ["model"] is refused to it; a message
            # posted past the proxy is not heard.
            await app.locator("#sneak").click()
            await app.locator("#shout").click()
            await expect(app.locator("#answer")).to_have_text("HELLO!", timeout=WAIT)
            from_app = page.locator("#calls .call", has=page.locator(".from-app"))
            await expect(from_app).to_have_count(1)
            await expect(from_app).to_contain_text('"word":"hello"')
            await app.locator("#secret").click()
            await expect(app.locator("#answer")).to_contain_text("error: The app may not call secret")
            await expect(card.locator(".app-event[data-kind=refused]")).to_contain_text("secret")
            await expect(from_app).to_have_count(1)

            # The CSP: the declared origin answers, the same server under another name is blocked.
            await app.locator("#fetch-declared").click()
            await expect(app.locator("#fetched")).to_have_text(
                f"fetched http://127.0.0.1:{port}/data", timeout=WAIT
            )
            await app.locator("#fetch-undeclared").click()
            await expect(app.locator("#fetched")).to_have_text(
                f"failed http://localhost:{port}/data", timeout=WAIT
            )
            await expect(app.locator("#violations")).to_contain_text(
                f"connect-src http://localhost:{port}/data"
            )

            # A resource read through the host.
            await app.locator("#read").click()
            await expect(app.locator("#answer")).to_have_text(f"read {APP_MIME}", timeout=WAIT)

            # A message goes to the page's journal of the app; a link is the person's to open.
            await app.locator("#message").click()
            await expect(app.locator("#answer")).to_have_text("sent", timeout=WAIT)
            await expect(card.locator(".app-event[data-kind=message]")).to_contain_text("hello from the app")
            await app.locator("#link").click()
            ask = card.locator(".app-ask")
            await expect(ask).to_contain_text(f"http://127.0.0.1:{port}/opened", timeout=WAIT)
            await shot(page, "app")
            await ask.get_by_role("button", name="Deny").click()
            await expect(app.locator("#answer")).to_have_text(
                "error: Link opening denied by user", timeout=WAIT
            )
            await app.locator("#link").click()
            async with page.context.expect_page() as opened:
                await card.locator(".app-ask").last.get_by_role("button", name="Open").click()
            popup = await opened.value
            await popup.wait_for_load_state()
            assert popup.url == f"http://127.0.0.1:{port}/opened"
            await expect(app.locator("#answer")).to_have_text("opened", timeout=WAIT)

            # The sandbox: the page, its storage and its token are out of the app's reach.
            await app.locator("#probe").click()
            await expect(app.locator("#probed")).not_to_be_empty(timeout=WAIT)
            probed = json.loads(await app.locator("#probed").text_content())
            for key in ("top_document", "top_storage", "top_href", "top_token"):
                assert probed[key] == "blocked: SecurityError", (key, probed)
            assert probed["own_storage"] == "null"
            assert await page.evaluate("localStorage.getItem('protomcp-playground')") is not None
            assert token not in json.dumps(probed), probed

            # Teardown: the app is asked (it answers), then removed.
            await card.locator(".app-close").click()
            await expect(card.locator(".app")).to_contain_text("app closed", timeout=WAIT)
            await expect(card.locator(".app iframe")).to_have_count(0)
            await expect(card.locator(".app-event[data-kind=teardown]")).to_have_text(
                "teardown: the app answered"
            )

            # A call cancelled: the app is told.
            card = await call_show(page, "later", tool="wait")
            await app_frame(card).locator("#ready").click()
            await expect(app_frame(card).locator("#received")).to_contain_text(
                "ui/notifications/tool-input", timeout=WAIT
            )
            await card.locator("button.cancel").click()
            await expect(app_frame(card).locator("#received")).to_have_text(
                "response 1\nui/notifications/tool-input\nui/notifications/tool-cancelled", timeout=WAIT
            )

            # A save shows at the next call: the HTML file (read at each resources/read)...
            write_atomic(tmp_path / "app.html", raw_app(port).replace("raw app", "edited app"))
            card = await call_show(page, "again")
            await expect(app_frame(card).locator("#title")).to_have_text("edited app one", timeout=WAIT)
            # ...and the tool file (protomcp dev reloads it).
            write_atomic(file, tools(port).replace('VERSION = "one"', 'VERSION = "two"'))
            await expect(page.locator("#event-count")).to_have_text("1", timeout=WAIT)
            card = await call_show(page, "third")
            await expect(app_frame(card).locator("#title")).to_have_text("edited app two", timeout=WAIT)
            assert page.errors == []


TASK_TOOL = """

@tool(ui="ui://demo/app", task="optional")
async def later(word: str) -> str:
    \"\"\"Answer later (as a task, if asked).\"\"\"
    return word + " later"
"""


async def test_a_task_and_a_reloaded_page_give_the_app_its_result(tmp_path: Path) -> None:
    """A call run as a task: its app gets the task's result (tasks/result), not the
    CreateTaskResult. After a page reload the journal's calls show their apps again, the
    resource read afresh, with the same input and result."""
    from playwright.async_api import expect

    write_atomic(tmp_path / "app.html", raw_app(1))
    async with playground(tmp_path, tools(1) + TASK_TOOL) as (_, url, _file), browser() as chromium:
        page = await open_page(chromium, url)
        await expect(page.locator("#tool-list [data-tool=later]")).to_be_visible(timeout=WAIT)
        await page.click("#tool-list [data-tool=later]")
        await page.check("#as-task")
        task_card = await call_show(page, "soon", tool="later")
        await expect(task_card.locator(".status")).to_contain_text("task created", timeout=WAIT)
        await app_frame(task_card).locator("#ready").click()
        await expect(app_frame(task_card).locator("#result")).to_have_text("soon later", timeout=WAIT)
        await expect(app_frame(task_card).locator("#received")).to_contain_text(
            "ui/notifications/tool-input\nui/notifications/tool-result", timeout=WAIT
        )
        show_card = await call_show(page, "plain")
        await expect(show_card.locator(".status")).to_contain_text("done", timeout=WAIT)
        await app_frame(show_card).locator("#ready").click()
        await expect(app_frame(show_card).locator("#result")).to_contain_text("plain", timeout=WAIT)

        # The HTML changed meanwhile: the replayed apps read their resource again.
        write_atomic(tmp_path / "app.html", raw_app(1).replace("raw app", "reread app"))
        await page.reload()
        for card, result in ((task_card, "soon later"), (show_card, "plain")):
            app = app_frame(card)
            await expect(app.locator("#title")).to_have_text("reread app one", timeout=WAIT)
            await app.locator("#ready").click()
            await expect(app.locator("#result")).to_contain_text(result, timeout=WAIT)
            await expect(app.locator("#received")).to_contain_text(
                "ui/notifications/tool-input\nui/notifications/tool-result", timeout=WAIT
            )
        await expect(page.locator("#calls .call .app")).to_have_count(2)
        assert page.errors == []


IMPORT_TIME_APP = """
from pathlib import Path
from protomcp_sdk import resource, tool

HTML = (Path(__file__).parent / "app.html").read_text().replace("{{VERSION}}", "read at import")

@resource("ui://demo/app", files=["app.html"])
def app() -> str:
    return HTML

@tool(ui="ui://demo/app")
def show(word: str) -> dict:
    \"\"\"Show a word in the app.\"\"\"
    return {"word": word}
"""


async def test_a_save_of_html_read_at_import_shows_at_the_next_call(tmp_path: Path) -> None:
    """The app's HTML is read once, when the tool file loads; it is declared (files=), so
    dev reloads the tool file when it is saved and the next call shows the new app."""
    from playwright.async_api import expect

    write_atomic(tmp_path / "app.html", raw_app(1))
    async with playground(tmp_path, IMPORT_TIME_APP) as (_, url, _file), browser() as chromium:
        page = await open_page(chromium, url)
        await expect(page.locator("#tool-list [data-tool=show]")).to_be_visible(timeout=WAIT)
        card = await call_show(page, "one")
        await expect(app_frame(card).locator("#title")).to_have_text("raw app read at import", timeout=WAIT)
        write_atomic(tmp_path / "app.html", raw_app(1).replace("raw app", "saved app"))
        await expect(page.locator("#event-count")).to_have_text("1", timeout=WAIT)  # the reload
        card = await call_show(page, "two")
        await expect(app_frame(card).locator("#title")).to_have_text("saved app read at import", timeout=WAIT)
        assert page.errors == []


async def test_the_example_app_in_the_playground(tmp_path: Path) -> None:
    """examples/apps (the sales chart) as `protomcp dev --ui` serves it: the chart draws the
    call's result and its region buttons call its app-only tool through the page."""
    from playwright.async_api import expect

    example = ROOT / "examples" / "apps"
    shutil.copy(example / "chart.html", tmp_path / "chart.html")
    source = (example / "sales_chart.py").read_text(encoding="utf-8")
    async with playground(tmp_path, source) as (_, url, _file), browser() as chromium:
        page = await open_page(chromium, url)
        await expect(page.locator("#tool-list [data-tool=region_sales]")).to_contain_text(
            "app only", timeout=WAIT
        )
        await page.click("#tool-list [data-tool=quarterly_sales]")
        await page.select_option("#f-highlight", label="Q3")
        await page.click("#call")
        await expect(page.locator("#calls .call")).to_have_count(1, timeout=WAIT)
        call = await page.locator("#calls .call").get_attribute("data-call")
        card = page.locator(f'#calls .call[data-call="{call}"]')  # the app's calls come on top
        await expect(card.locator(".status")).to_contain_text("done", timeout=WAIT)
        app = app_frame(card)
        await expect(app.locator("#bars .bar")).to_have_count(4, timeout=WAIT)
        await expect(app.locator(".bar.highlight")).to_have_attribute("data-quarter", "Q3")
        await expect(app.locator("#total")).to_have_text("total 1005")
        await app.get_by_role("button", name="North").click()
        await expect(app.locator("#title")).to_have_text("Sales by quarter: north", timeout=WAIT)
        await expect(app.locator("#total")).to_have_text("total 520")
        from_app = page.locator("#calls .call", has=page.locator(".from-app"))
        await expect(from_app).to_contain_text("region_sales", timeout=WAIT)
        await expect(from_app).to_contain_text('"region":"north"')
        assert page.errors == []


def _sdk_bundle() -> str:
    """The SDK app (tests/apps/app.mjs) bundled by esbuild (both pinned in tests/apps) into one IIFE."""
    esbuild = APPS_SDK / "node_modules" / ".bin" / "esbuild"
    if not esbuild.exists() or shutil.which("node") is None:
        missing("needs the MCP Apps SDK from npm: run `npm ci` in tests/apps")
    out = subprocess.run(
        [str(esbuild), "app.mjs", "--bundle", "--format=iife", "--log-level=error"],
        cwd=APPS_SDK,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return out.stdout


async def test_an_app_on_the_official_sdk(tmp_path: Path) -> None:
    from playwright.async_api import expect

    script = _sdk_bundle().replace("</script", "<\\/script")
    html = (
        '<!doctype html><html><head><meta charset="utf-8"></head><body>'
        '<div id="host"></div><pre id="input"></pre><pre id="result"></pre><pre id="answer"></pre>'
        f"<script>{script}</script></body></html>"
    )
    (tmp_path / "app.html").write_text(html)
    async with playground(tmp_path, tools(1)) as (_, url, _file), browser() as chromium:
        page = await open_page(chromium, url)
        await expect(page.locator("#tool-list [data-tool=show]")).to_be_visible(timeout=WAIT)
        card = await call_show(page, "sdk")
        app = app_frame(card)
        await expect(app.locator("#host")).to_have_text("connected to protomcp-playground", timeout=WAIT)
        await expect(app.locator("#input")).to_have_text('{"word":"sdk"}', timeout=WAIT)
        await expect(app.locator("#result")).to_have_text('{"word":"sdk"}', timeout=WAIT)
        await expect(app.locator("#answer")).to_have_text("SDK!", timeout=WAIT)
        await expect(page.locator("#calls .call", has=page.locator(".from-app"))).to_contain_text("shout")
        await shot(page, "app-sdk")
        # The page told the host it is an apps host (ctx.client_supports in a tool sees it).
        declared = await page.evaluate(
            "state.wire.page.find((r) => r.msg.method === 'initialize').msg.params.capabilities"
        )
        assert declared["extensions"]["io.modelcontextprotocol/ui"] == {"mimeTypes": [APP_MIME]}
        assert page.errors == []


async def test_the_sandbox_origin_serves_the_proxy_only(tmp_path: Path) -> None:
    """The proxy's port: its page (with the CSP asked for as its header) and script, no token
    needed and none given; none of the playground's routes; loopback Host names only. The
    playground's port does not serve the proxy."""
    async with playground(tmp_path, tools(1)) as (_, url, _file):
        base = url.split("/?token=")[0]

        def check() -> None:
            with urllib.request.urlopen(url, timeout=10) as response:
                page = response.read().decode()
            found = re.search(r'PLAYGROUND_SANDBOX = "(http://127\.0\.0\.1:\d+)"', page)
            assert found is not None, page
            sandbox = found.group(1)
            assert sandbox != base
            csp = json.dumps({"connectDomains": ["https://api.example.com"]})
            query = urllib.parse.urlencode({"csp": csp})
            with urllib.request.urlopen(f"{sandbox}/proxy?{query}", timeout=10) as response:
                header = response.headers["Content-Security-Policy"]
                proxy = response.read().decode()
            assert "connect-src https://api.example.com;" in header
            assert "default-src 'none'" in header
            assert header.endswith(f"; frame-ancestors {base} {base.replace('127.0.0.1', 'localhost')}")
            assert f'data-hosts="{base} ' in proxy and "token" not in proxy
            assert status(f"{sandbox}/proxy.js") == 200
            token = url.split("?token=")[1]
            for path in ("/", "/rpc", "/events", f"/?token={token}", f"/static/app.js?token={token}"):
                assert status(sandbox + path) == 404, path
            assert status(f"{sandbox}/proxy", host="evil.example:80") == 403
            assert status(f"{base}/proxy?token={token}") == 404

        await anyio.to_thread.run_sync(check)


def test_the_csp_is_built_from_the_declared_origins_only() -> None:
    default = content_security_policy(None)
    assert "default-src 'none'" in default
    assert "connect-src 'none'" in default and "frame-src 'none'" in default
    assert "base-uri 'self'" in default and "object-src 'none'" in default
    declared = content_security_policy(
        {
            "connectDomains": ["https://api.example.com", "wss://live.example.com:8443"],
            "resourceDomains": ["https://*.cdn.example.com"],
            "frameDomains": ["https://www.youtube.com"],
            "baseUriDomains": ["https://base.example.com"],
        }
    )
    assert "connect-src https://api.example.com wss://live.example.com:8443;" in declared
    assert "script-src 'self' 'unsafe-inline' https://*.cdn.example.com;" in declared
    assert "img-src 'self' data: https://*.cdn.example.com;" in declared
    assert "frame-src https://www.youtube.com;" in declared
    assert declared.endswith("base-uri https://base.example.com")
    # An entry that would add a keyword or a directive is dropped, not passed through.
    sneaky = content_security_policy(
        {
            "connectDomains": [
                "'unsafe-eval'",
                "https://a.example; script-src *",
                "https://b.example\nX-Header: 1",
                "*",
                42,
                "https://ok.example",
            ]
        }
    )
    assert "connect-src https://ok.example;" in sneaky
    assert "unsafe-eval" not in sneaky and "script-src *" not in sneaky and "\n" not in sneaky
    assert content_security_policy({"connectDomains": "https://not-a-list.example"}) == default
