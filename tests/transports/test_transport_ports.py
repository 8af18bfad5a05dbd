"""Transports see the rest of the host only through transports.ports: no import of app, the
calls layer or the CLI, not even a type-only one; and Host / Router are what the ports name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import mypy.api
import pytest

from tests.support.hosts import ROOT

TRANSPORTS = ROOT / "protomcp_host" / "transports"
FORBIDDEN = ("protomcp_host.app", "protomcp_host.calls", "protomcp_host.cli")


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, wherever the import is (top level, TYPE_CHECKING, functions)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_transports_never_import_the_app_the_calls_layer_or_the_cli() -> None:
    offending = {
        str(path.relative_to(ROOT)): sorted(m for m in imported_modules(path) if m.startswith(FORBIDDEN))
        for path in sorted(TRANSPORTS.rglob("*.py"))
    }
    assert {path: found for path, found in offending.items() if found} == {}


# Host and Router satisfy the ports structurally (no base class), so only a type checker can tell
# whether they still do: mypy checks this program against the tree. `unmatched` is the control: a
# Router is no StartStop, so a check that cannot see the ports fails the test instead of passing.
PORTS_CHECK = """
from protomcp_host.app import Host
from protomcp_host.calls.router import Router
from protomcp_host.transports.ports import Connection, StartStop


def matched(host: Host, router: Router) -> tuple[StartStop, Connection]:
    return host, router


def unmatched(router: Router) -> StartStop:
    return router  # UNMATCHED
"""


def test_host_and_router_match_the_ports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    program = tmp_path / "ports_check.py"
    program.write_text(PORTS_CHECK)
    monkeypatch.chdir(ROOT)  # the tree's packages and mypy cache, and its pyproject.toml settings
    report, _, _ = mypy.api.run([str(program)])  # (the settings of `mypy` in CI: its cache serves)
    # (by file name: mypy's cache may replay the errors of an unchanged program under its old path)
    errors = re.findall(r"ports_check\.py:(\d+): error:", report)
    unmatched = PORTS_CHECK.splitlines().index("    return router  # UNMATCHED") + 1
    assert errors == [str(unmatched)], report
