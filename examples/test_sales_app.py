"""Testing an MCP App: the tool file in the real host (its tools' `_meta`, the app's HTML, the
result a client without apps shows) and the app itself in a headless Chromium, hosted by a
small page that speaks the host's side of the spec (ui/initialize, the tool's input and result,
tools/call passed on to the real host). Needs playwright and Debian's `chromium`."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from protomcp_sdk.testing import Client

APP = Path(__file__).parent / "apps" / "sales_chart.py"
UI = "io.modelcontextprotocol/ui"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# The host's side, reduced to what this app uses: the app in a sandboxed iframe (scripts only,
# an opaque origin), answered over postMessage; nothing is sent before it says it is initialized.
HOST_PAGE = """<!doctype html><html><body>
<iframe id="app" sandbox="allow-scripts" style="width:480px;height:260px"></iframe>
<script>
const frame = document.getElementById("app");
window.received = [];
function post(message) { frame.contentWindow.postMessage({ jsonrpc: "2.0", ...message }, "*"); }
window.addEventListener("message", async (event) => {
  if (event.source !== frame.contentWindow) return;
  const m = event.data;
  window.received.push(m.method || "answer");
  if (m.method === "ui/initialize") {
    post({ id: m.id, result: { protocolVersion: "2026-01-26", hostInfo: { name: "test-host", version: "1" },
                               hostCapabilities: { serverTools: {} }, hostContext: { theme: "light" } } });
  } else if (m.method === "ui/notifications/initialized") {
    post({ method: "ui/notifications/tool-input", params: { arguments: window.toolInput } });
    post({ method: "ui/notifications/tool-result", params: window.toolResult });
  } else if (m.method === "tools/call") {
    try { post({ id: m.id, result: await window.callTool(m.params.name, m.params.arguments) }); }
    catch (error) { post({ id: m.id, error: { code: -32000, message: String(error) } }); }
  }
});
window.start = ([html, input, result]) => {
  window.toolInput = input; window.toolResult = result; frame.srcdoc = html;
};
</script></body></html>"""


async def test_the_tool_file_serves_its_app_and_a_useful_result() -> None:
    async with Client(APP) as client:
        tools = {tool["name"]: tool for tool in await client.list_tools()}
        assert tools["quarterly_sales"]["_meta"]["ui"] == {"resourceUri": "ui://sales/chart"}
        assert tools["region_sales"]["_meta"]["ui"]["visibility"] == ["app"]  # the chart's own tool
        [chart] = await client.read_resource("ui://sales/chart")
        assert chart["mimeType"] == "text/html;profile=mcp-app"
        assert chart["text"] == (APP.parent / "chart.html").read_text(encoding="utf-8")
        assert chart["_meta"] == {"ui": {"prefersBorder": True}}
        result = await client.call("quarterly_sales", highlight="Q3")
        # a client without apps gets the same data, as structured content and as text
        assert result.structured["quarters"][0] == {"quarter": "Q1", "sales": 215}
        assert '"quarter":"Q3"' in result.text.replace(" ", "")


async def test_the_app_draws_the_result_and_calls_its_tool_through_the_host() -> None:
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[test]')")
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium)")
    async with Client(APP, extensions=[UI]) as client, async_playwright() as playwright:
        [chart] = await client.read_resource("ui://sales/chart")
        asked = {"name": "quarterly_sales", "arguments": {"highlight": "Q3"}}
        result = await client.request("tools/call", asked)
        browser = await playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            page = await browser.new_page()

            async def call_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
                return await client.request("tools/call", {"name": name, "arguments": arguments})

            await page.expose_function("callTool", call_tool)
            await page.set_content(HOST_PAGE)
            await page.evaluate("start", [chart["text"], {"highlight": "Q3"}, result])
            app = page.frame_locator("#app")
            await app.locator("#total").filter(has_text="total 1005").wait_for(timeout=15_000)
            assert await app.locator(".bar.highlight").get_attribute("data-quarter") == "Q3"
            await app.locator("button[data-region=north]").click()
            await app.locator("#title").filter(has_text="Sales by quarter: north").wait_for(timeout=15_000)
            assert await app.locator("#total").text_content() == "total 520"
            received = await page.evaluate("window.received")
            assert received[:2] == ["ui/initialize", "ui/notifications/initialized"]
            assert "tools/call" in received
        finally:
            await browser.close()
