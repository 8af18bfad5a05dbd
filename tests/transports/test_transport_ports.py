"""Transports see the rest of the host only through transports.ports (issue 14): no import of
app, the bridge or the CLI, not even a type-only one; and Host / Router have what the ports name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from protomcp_host.transports import ports
from tests.support.hosts import ROOT

pytestmark = pytest.mark.fast  # starts no process

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


def test_transports_never_import_the_app_the_bridge_or_the_cli() -> None:
    offending = {
        str(path.relative_to(ROOT)): sorted(m for m in imported_modules(path) if m.startswith(FORBIDDEN))
        for path in sorted(TRANSPORTS.rglob("*.py"))
    }
    assert {path: found for path, found in offending.items() if found} == {}


def members(protocol: type) -> set[str]:
    names: set[str] = set()
    for klass in protocol.__mro__:
        if klass is object or klass.__module__ != ports.__name__:
            continue
        names.update(getattr(klass, "__annotations__", {}))
        names.update(
            name for name, value in vars(klass).items() if callable(value) and not name.startswith("_")
        )
    return names


async def test_host_and_router_have_what_the_ports_name() -> None:
    from protomcp_host.app import Host

    host = Host([], stderr=lambda _: None)
    connection = host.connect(lambda data, related=None: None)
    for protocol, thing in ((ports.StartStop, host), (ports.Connection, connection)):
        missing = sorted(name for name in members(protocol) if not hasattr(thing, name))
        assert missing == [], f"{type(thing).__name__} lacks {missing} of {protocol.__name__}"
    host.disconnect(connection)
