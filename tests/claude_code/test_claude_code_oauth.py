"""The real Claude Code (pinned in tests/claude_code) signs in to a protomcp server with OAuth and
calls its tools: `claude mcp add --transport http`, then `claude mcp login`, whose browser sign-in
(protomcp's consent page, then the identity provider's login and consent pages) a headless
Chromium driven by Playwright completes, as a person would; then `claude -p` calls the tools with
the token it got.

Claude Code identifies itself with a client ID metadata document (CIMD) at
https://claude.ai/oauth/claude-code-client-metadata. The tests have no network, so a copy is
served on a loopback https server and Claude Code is pointed at it with its own
MCP_OAUTH_CLIENT_METADATA_URL; the host trusts that server's certificate (SSL_CERT_FILE) and may
fetch from it (--oauth-cimd-allow localhost). `claude mcp login` opens the browser through
$BROWSER (here a script that hands the URL to the test) and refuses to run without a terminal,
so it gets a pseudo-terminal. Its callback listener on a loopback port receives the code.
"""

from __future__ import annotations

import json
import os
import pty
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.claude_code.fake_messages_api import FakeMessagesAPI, tool_use
from tests.claude_code.test_claude_code import SERVER, claude, claude_env, claude_print
from tests.oauth.conftest import Beds
from tests.oauth.documents import DocumentServer
from tests.support.installed import missing

__all__ = ["claude"]  # the module fixture, shared with test_claude_code.py

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DOCUMENT_PATH = "/oauth/claude-code-client-metadata"
LOGIN_TIMEOUT = 60.0


def claude_code_document(url: str) -> dict[str, Any]:
    """What Claude Code says of itself when it registers (its clientMetadata), as a document: a
    loopback /callback on any port (RFC 8252), a public client."""
    return {
        "client_id": url,
        "client_name": "Claude Code",
        "redirect_uris": ["http://localhost/callback", "http://127.0.0.1/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


class Terminal:
    """A command on a pseudo-terminal (Claude Code's login wants one): what it wrote, its exit."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            argv, env=env, cwd=cwd, stdin=slave, stdout=slave, stderr=slave, start_new_session=True
        )
        os.close(slave)
        self.master = master
        self.output = bytearray()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: every process on the terminal has closed it
                return
            if not chunk:
                return
            self.output += chunk

    def text(self) -> str:
        return self.output.decode(errors="replace")

    def wait(self, timeout: float) -> int:
        code = self.proc.wait(timeout)
        self.reader.join(10)
        return code

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.reader.join(10)
        os.close(self.master)


def wait_for_file(path: Path, what: str, terminal: Terminal, timeout: float = LOGIN_TIMEOUT) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists() or not path.read_text().strip():
        assert terminal.proc.poll() is None, f"claude ended before {what}: {terminal.text()[-2000:]}"
        assert time.monotonic() < deadline, f"no {what} within {timeout}s: {terminal.text()[-2000:]}"
        time.sleep(0.05)
    return path.read_text().strip().splitlines()[0]


async def sign_in_with_chromium(authorize_url: str, account: str) -> str:
    """Open `authorize_url` in Chromium and go through the pages a person would: protomcp's
    consent ("Allow"), the provider's login form, its consent. The URL the browser ends at."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            page = await browser.new_page()
            await page.goto(authorize_url)
            assert await page.title() == "Allow Claude Code?"
            await page.click("button[value=allow]")
            await page.fill("input[name=login]", account)  # the provider's login page
            await page.fill("input[name=password]", "any")
            await page.click("button[type=submit]")
            await page.wait_for_selector("input[name=prompt][value=consent]", state="attached")
            await page.click("button[type=submit]")  # the provider's consent page
            await page.wait_for_url("http://localhost:*/callback?*")  # Claude Code's listener
            return str(page.url)
        finally:
            await browser.close()


@pytest.fixture
def beds() -> Any:
    made = Beds()
    yield made
    made.close()


async def test_claude_code_signs_in_with_a_browser_and_calls_the_tools(
    claude: Path, tmp_path: Path, beds: Beds
) -> None:
    try:
        import playwright  # noqa: F401
    except ImportError:
        missing("playwright is not installed (pip install -e '.[test]')")
    if CHROMIUM is None:
        missing("no chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)")
    opened = tmp_path / "opened-url"
    browser = tmp_path / "browser.sh"  # $BROWSER: hands the URL Claude Code opens to the test
    browser.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> "{opened}"\n')
    browser.chmod(0o755)
    with DocumentServer(tmp_path) as documents:
        document = documents.url(DOCUMENT_PATH)
        documents.routes[DOCUMENT_PATH] = claude_code_document(document)
        bed = beds("--oauth-cimd-allow", "localhost", env={"SSL_CERT_FILE": str(documents.cert)})
        env = claude_env(tmp_path) | {"BROWSER": str(browser), "MCP_OAUTH_CLIENT_METADATA_URL": document}
        added = subprocess.run(
            [str(claude), "mcp", "add", "--transport", "http", SERVER, bed.mcp_url],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert added.returncode == 0, added.stdout + added.stderr
        login = Terminal([str(claude), "mcp", "login", SERVER], env, tmp_path)
        try:
            authorize_url = wait_for_file(opened, "browser opened", login)
            assert authorize_url.startswith(bed.public_url + "/oauth/authorize?")
            landed = await sign_in_with_chromium(authorize_url, "alice")
            assert "code=" in landed  # the browser reached Claude Code's listener with a code
            assert login.wait(LOGIN_TIMEOUT) == 0, login.text()[-2000:]
        finally:
            login.stop()
        assert f'Authenticated with "{SERVER}"' in login.text()
        assert DOCUMENT_PATH in documents.requests  # protomcp read Claude Code's document
    # A later `claude -p` uses the token it keeps: the tools answer as alice.
    calls = [[tool_use(f"mcp__{SERVER}__add", {"a": 2, "b": 3})], [tool_use(f"mcp__{SERVER}__whoami")]]
    with FakeMessagesAPI(calls) as api:
        claude_print(claude, tmp_path, api)
    added_result, whoami = api.tool_results()
    assert json.loads(added_result["content"]) == {"result": 5} and not added_result.get("is_error")
    claims = json.loads(whoami["content"])  # the claims of the token protomcp issued to Claude Code
    assert claims["sub"] == "alice" and claims["aud"] == bed.mcp_url and claims["client_id"] == document
