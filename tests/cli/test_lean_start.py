"""What `protomcp run FILE` (the form clients' configs hold) imports to serve plain calls.

Resident memory is mostly imported code: modules a plain stdio session of plain tools never
uses are imported when first needed (the CLI and click, the modern era's requestState
machinery, the pure-Python protobuf modules...). The host and its tool process serve
initialize, tools/list and a call; then each writes the modules it holds at exit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.unmeasured import unmeasured

ROOT = Path(__file__).resolve().parents[2]

TOOLS = ROOT / "benchmarks" / "tools_protomcp.py"  # two plain sync tools

DUMP = """
import atexit, os, sys

def _dump():
    with open(os.path.join(os.environ["MODULES_DUMP"], f"{os.getpid()}.txt"), "w") as out:
        out.write("\\n".join([" ".join(sys.argv), *sorted(sys.modules)]))

atexit.register(_dump)
"""

HOST_NEVER = (
    "click",
    "protomcp_host.cli.main",
    "hashlib",  # calls.rounds: the modern era's requestState
    "protomcp_host.protocol.discovery",  # --discovery search
    "protomcp_host.protocol.ranking",
    "protomcp_host.shared.tasks",  # --store redis://
    "pickle",
    "google.protobuf.internal.builder",
    "google.protobuf.internal.python_message",
    "google.protobuf.descriptor_pool",
    "google.protobuf.text_format",
)
TOOL_NEVER = (
    "protomcp_sdk.wire.uritemplate",  # @resource templates
    "pickle",
    "google.protobuf.internal.builder",
    "google.protobuf.internal.python_message",
    "google.protobuf.text_format",
)


def serve_plain_calls(tmp_path: Path) -> dict[str, set[str]]:
    """Modules of the host ("host") and of its tool process ("tool") after a plain session."""
    (site := tmp_path / "site").mkdir()
    (site / "sitecustomize.py").write_text(DUMP)
    (dump := tmp_path / "dump").mkdir()
    env = {**unmeasured(), "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "MODULES_DUMP": str(dump)}
    host = subprocess.Popen(
        [sys.executable, "-m", "protomcp_host", "run", str(TOOLS)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path,
    )
    assert host.stdin is not None and host.stdout is not None
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    requests: list[dict[str, Any]] = [
        {"id": 0, "method": "initialize", "params": hello},
        {"method": "notifications/initialized"},
        {"id": 1, "method": "tools/list"},
        {"id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}},
    ]
    try:
        for request in requests:
            host.stdin.write(orjson.dumps({"jsonrpc": "2.0", **request}) + b"\n")
        host.stdin.flush()
        while (answer := orjson.loads(host.stdout.readline())).get("id") != 2:
            pass
        assert answer["result"]["content"] == [{"type": "text", "text": "hi"}]
        host.stdin.close()
        assert host.wait(30) == 0
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
    found: dict[str, set[str]] = {}
    for file in dump.iterdir():
        argv, *modules = file.read_text().splitlines()
        found["tool" if "protomcp_sdk" in argv else "host"] = set(modules)
    return found


def test_a_plain_run_imports_only_what_plain_calls_need(tmp_path: Path) -> None:
    found = serve_plain_calls(tmp_path)
    assert "protomcp_host.cli.serving" in found["host"]  # (the dump is the host's)
    assert sorted(found["host"] & set(HOST_NEVER)) == []
    assert "protomcp_sdk.runtime.process" in found["tool"]
    assert sorted(found["tool"] & set(TOOL_NEVER)) == []


def test_with_pure_python_envelopes_a_tool_process_loads_no_protobuf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROTOMCP_ENVELOPE", "python")
    found = serve_plain_calls(tmp_path)
    assert "protomcp_sdk.wire.purepb" in found["tool"]
    assert sorted(name for name in found["tool"] if name.startswith("google")) == []
    assert "google.protobuf" in found["host"]  # the host keeps upb
