"""The official MCP TypeScript SDK's client OAuth support (pinned in tests/oauth/ts_client; `npm ci`
there, as .ci/run does) signs in through protomcp's authorization server in front of a real
identity provider and calls tools with the token it got: once registering dynamically (RFC
7591), once with a client ID metadata document as its client_id. The SDK does discovery,
registration, PKCE, the code exchange and the bearer header itself; the test is only its
browser (protomcp's consent page and the provider's sign-in, as tests/oauth/conftest.py does)."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.oauth.conftest import Beds
from tests.oauth.documents import DocumentServer
from tests.support.hosts import ROOT
from tests.support.installed import missing

TS_CLIENT = ROOT / "tests" / "oauth" / "ts_client"
REDIRECT = "http://127.0.0.1:9/ts-callback"  # loopback (RFC 8252); never fetched, the test reads it
TIMEOUT = 60.0


class NodeClient:
    """client.mjs: its JSON lines, and answers to it."""

    def __init__(self, *args: str) -> None:
        node = shutil.which("node")
        if node is None or not (TS_CLIENT / "node_modules" / "@modelcontextprotocol" / "sdk").exists():
            missing("needs the MCP TypeScript SDK from npm: run `npm ci` in tests/oauth/ts_client")
        self.proc = subprocess.Popen(
            [node, str(TS_CLIENT / "client.mjs"), *args],
            cwd=TS_CLIENT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []  # every message read so far
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        self.stderr.extend(self.proc.stderr)

    def next(self, key: str) -> Any:
        """The value of the next message that has `key`."""
        while True:
            line = self.lines.get(timeout=TIMEOUT)
            if line is None:
                self.proc.wait(10)
                raise AssertionError(f"client.mjs ended ({self.proc.returncode}): {''.join(self.stderr)}")
            message = json.loads(line)
            self.seen.append(message)
            if key in message:
                return message[key]

    def answer(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def node_clients() -> Iterator[list[NodeClient]]:
    started: list[NodeClient] = []
    yield started
    for each in started:
        each.stop()


def sign_in_and_call(
    beds: Beds,
    clients: list[NodeClient],
    *args: str,
    host_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> NodeClient:
    """A host (with `host_args`) in front of a provider; client.mjs `args` signs in as alice
    through it and calls add and whoami."""
    bed = beds(*host_args, env=env)
    client = NodeClient(bed.mcp_url, REDIRECT, *args)
    clients.append(client)
    authorize = client.next("authorize")
    assert authorize.startswith(bed.public_url + "/oauth/authorize?")
    location = bed.browser().sign_in(authorize, "alice")
    assert location.startswith(REDIRECT + "?")
    client.answer({"callback": location})
    result = client.next("result")
    assert result["add"] == "5"
    assert result["whoami"]["aud"] == bed.mcp_url and result["whoami"]["sub"]
    assert client.proc.wait(TIMEOUT) == 0, "".join(client.stderr)
    return client


def test_the_typescript_sdk_registers_dynamically_signs_in_and_calls_tools(
    bed_factory: Beds, node_clients: list[NodeClient]
) -> None:
    client = sign_in_and_call(bed_factory, node_clients)
    [registered] = [m["registered"] for m in client.seen if "registered" in m]
    assert not registered.startswith("https://")  # a client_id protomcp gave it (RFC 7591)
    [tokens] = [m["tokens"] for m in client.seen if "tokens" in m]
    assert tokens["token_type"].lower() == "bearer" and tokens["refresh"] is True


def test_the_typescript_sdk_signs_in_with_a_client_id_metadata_document(
    bed_factory: Beds, node_clients: list[NodeClient], tmp_path: Path
) -> None:
    with DocumentServer(tmp_path) as documents:
        document = documents.document(
            "/clients/ts.json",
            [REDIRECT],
            client_name="TypeScript SDK test client",
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        )
        client = sign_in_and_call(
            bed_factory,
            node_clients,
            document,
            host_args=("--oauth-cimd-allow", "localhost"),
            env={"SSL_CERT_FILE": str(documents.cert)},  # trusted as a public CA's would be
        )
        assert "/clients/ts.json" in documents.requests  # protomcp fetched it
    assert all(m.get("registered", document) == document for m in client.seen)  # no registration
