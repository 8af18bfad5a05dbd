"""The import graph of protomcp_sdk and protomcp_host, built from the source with ``ast``.

Every import counts: module level, inside functions, and under ``if TYPE_CHECKING`` (a
type-only circle is still a circle a reader has to untangle). The one exception is a package
``__init__``'s ``__getattr__``: the lazy re-export of its public names, which exists so that
importing the package costs nothing.

Rules (docs/architecture.md): no circle between modules, none between folders (sub-packages),
the SDK's layers run one way (runtime -> authoring -> wire), the host imports only
``protomcp_sdk.wire*`` and the SDK never imports the host.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # starts no process

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("protomcp_sdk", "protomcp_host")

Graph = dict[str, set[str]]


def module_files(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted module name -> file, for every module of `packages` under `root`."""
    found: dict[str, Path] = {}
    for package in packages:
        for file in sorted((root / package).rglob("*.py")):
            parts = list(file.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = file
    return found


def _is_package(file: Path) -> bool:
    return file.name == "__init__.py"


def _lazy_getattr(tree: ast.Module) -> set[ast.AST]:
    """The nodes inside a module-level ``def __getattr__`` (a package's lazy re-exports)."""
    skipped: set[ast.AST] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            skipped.update(ast.walk(node))
    return skipped


def _target(name: str, modules: dict[str, Path]) -> str | None:
    """The known module `name` refers to: itself, or its longest known parent."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def build_graph(root: Path, packages: Iterable[str] = PACKAGES) -> Graph:
    modules = module_files(root, packages)
    graph: Graph = {name: set() for name in modules}
    for name, file in modules.items():
        tree = ast.parse(file.read_text(), str(file))
        skipped = _lazy_getattr(tree) if _is_package(file) else set()
        package = name if _is_package(file) else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if node in skipped:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.append(full if full in modules else base)
            for target in targets:
                known = _target(target, modules)
                if known is not None and known != name:
                    graph[name].add(known)
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def folder_of(module: str, modules: dict[str, Path]) -> str:
    """The sub-package a module belongs to (a package's __init__ belongs to the package)."""
    return module if _is_package(modules[module]) else module.rpartition(".")[0]


def folder_graph(graph: Graph, modules: dict[str, Path]) -> Graph:
    """Imports between folders. A package's `__main__` is left out: it is the interpreter's
    entry point (`python -m`), which nothing imports, not a layer of the package."""
    folders: Graph = {}
    for source, targets in graph.items():
        if source.endswith(".__main__"):
            continue
        mine = folder_of(source, modules)
        folders.setdefault(mine, set())
        for target in targets:
            theirs = folder_of(target, modules)
            if theirs != mine:
                folders[mine].add(theirs)
    return folders


def _restricted(graph: Graph, prefix: str) -> Graph:
    inside = {n for n in graph if n == prefix or n.startswith(prefix + ".")}
    return {n: {t for t in graph[n] if t in inside} for n in inside}


def _edges(graph: Graph, source_prefix: str, target_prefix: str) -> list[tuple[str, str]]:
    def under(name: str, prefix: str) -> bool:
        return name == prefix or name.startswith(prefix + ".")

    return sorted(
        (source, target)
        for source, targets in graph.items()
        if under(source, source_prefix)
        for target in targets
        if under(target, target_prefix)
    )


@pytest.fixture(scope="module")
def modules() -> dict[str, Path]:
    return module_files(ROOT, PACKAGES)


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build_graph(ROOT)


# -- the SDK ---------------------------------------------------------------------------------


def test_sdk_has_no_circle_between_modules(graph: Graph) -> None:
    assert cycles(_restricted(graph, "protomcp_sdk")) == []


def test_sdk_has_no_circle_between_folders(graph: Graph, modules: dict[str, Path]) -> None:
    assert cycles(folder_graph(_restricted(graph, "protomcp_sdk"), modules)) == []


def test_sdk_layers_run_one_way(graph: Graph) -> None:
    """runtime -> authoring -> wire; nothing below imports the layers above or the package's
    own __init__ / testing (which may import everything)."""
    sdk = _restricted(graph, "protomcp_sdk")
    wrong = []
    for layer, allowed in (
        ("protomcp_sdk.wire", ("protomcp_sdk.wire",)),
        ("protomcp_sdk.authoring", ("protomcp_sdk.authoring", "protomcp_sdk.wire")),
        ("protomcp_sdk.runtime", ("protomcp_sdk.runtime", "protomcp_sdk.authoring", "protomcp_sdk.wire")),
    ):
        for source, target in _edges(sdk, layer, "protomcp_sdk"):
            if not any(target == a or target.startswith(a + ".") for a in allowed):
                wrong.append(f"{source} -> {target}")
    assert wrong == []


def test_sdk_never_imports_the_host(graph: Graph) -> None:
    assert _edges(graph, "protomcp_sdk", "protomcp_host") == []


# -- the host --------------------------------------------------------------------------------


def test_host_imports_only_the_sdk_wire(graph: Graph) -> None:
    outside = [
        (source, target)
        for source, target in _edges(graph, "protomcp_host", "protomcp_sdk")
        if not (target == "protomcp_sdk.wire" or target.startswith("protomcp_sdk.wire."))
    ]
    assert outside == []


def test_host_has_no_circle_between_modules(graph: Graph) -> None:
    assert cycles(_restricted(graph, "protomcp_host")) == []


def test_host_has_no_circle_between_folders(graph: Graph, modules: dict[str, Path]) -> None:
    assert cycles(folder_graph(_restricted(graph, "protomcp_host"), modules)) == []


# -- the checker itself ----------------------------------------------------------------------


def test_the_checker_sees_type_only_and_function_level_imports_but_not_lazy_reexports(
    tmp_path: Path,
) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "import importlib\n\ndef __getattr__(name):\n    from pkg import a\n    return a\n"
    )
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n"
    )
    (pkg / "b.py").write_text("def f():\n    from . import c\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "d.py").write_text("from ..a import x\n")
    (pkg / "e.py").write_text("from pkg.sub import d\n")
    built = build_graph(tmp_path, ["pkg"])
    assert built["pkg"] == set()  # the lazy re-export is not an edge
    assert built["pkg.a"] == {"pkg.b"}  # type-only
    assert built["pkg.b"] == {"pkg.c"}  # function-level, relative
    assert built["pkg.sub.d"] == {"pkg.a"}
    assert built["pkg.e"] == {"pkg.sub.d"}
    assert cycles(built) == [["pkg.a", "pkg.b", "pkg.c"]]
    found = module_files(tmp_path, ["pkg"])
    folders = folder_graph(built, found)
    assert folders["pkg.sub"] == {"pkg"} and "pkg.sub" in folders["pkg"]
    assert cycles(folders) == [["pkg", "pkg.sub"]]


# What each host folder may import (docs/architecture.md states the same rule): the protocol core
# and the processes import no other folder; the calls layer joins them; the records hosts share sit
# on the store (and the calls layer and protocol core whose state they carry); the proto-mcp codec sits
# on the protocol core; transports reach sessions through `transports.ports`, and use only the pipe
# and launch helpers of `processes`. The dev playground sits on top beside cli: it may use app (the
# host), the calls layer's Router and the HTTP transport's socket helper, and only cli imports it.
HOST_LAYERS = {
    "protomcp_host.playground": {
        "protomcp_host",
        "protomcp_host.calls",
        "protomcp_host.transports.http",
    },
    "protomcp_host.protocol": set(),
    "protomcp_host.processes": set(),
    "protomcp_host.store": set(),  # the shared store (memory or Redis): imports no other host folder
    # what hosts share through the store (task, tool-list and requestState records)
    "protomcp_host.shared": {"protomcp_host.store", "protomcp_host.calls", "protomcp_host.protocol"},
    # metrics and the audit log: every layer may record there, it imports no other host folder
    "protomcp_host.telemetry": set(),
    "protomcp_host.calls": {"protomcp_host.protocol", "protomcp_host.processes", "protomcp_host.telemetry"},
    "protomcp_host.proto_mcp": {"protomcp_host.protocol"},
    "protomcp_host.transports": {
        "protomcp_host.protocol",
        "protomcp_host.proto_mcp",
        "protomcp_host.processes",
    },
    # the authorization server (--oauth-provider): its records in the store, its endpoints beside MCP's
    "protomcp_host.oauth": {"protomcp_host.store", "protomcp_host.transports.http"},
    "protomcp_host.transports.http": {
        "protomcp_host.protocol",
        "protomcp_host.proto_mcp",
        "protomcp_host.processes",
        "protomcp_host.transports",
        "protomcp_host.telemetry",  # GET /metrics; sessions and streams counted
    },
}


def test_host_folders_import_only_the_layers_below(graph: Graph, modules: dict[str, Path]) -> None:
    folders = folder_graph(_restricted(graph, "protomcp_host"), modules)
    wrong = {
        folder: sorted(folders.get(folder, set()) - allowed)
        for folder, allowed in HOST_LAYERS.items()
        if folders.get(folder, set()) - allowed
    }
    assert wrong == {}
    assert "protomcp_host.cli" not in set().union(*(folders[f] for f in folders if f != "protomcp_host.cli"))
    importers = {f for f in folders if "protomcp_host.playground" in folders[f]}
    assert importers == {"protomcp_host.cli"}


# The modules beside app.py that Host is a façade over, and what each may import (a folder, or a
# module beside it): run.py serves a Host; connections.py and tool_events.py know the host only
# through a protocol of their own, so neither imports app.
HOST_PARTS = {
    "protomcp_host.connections": {
        "protomcp_host.calls",
        "protomcp_host.protocol",
        "protomcp_host.shared",  # (type only: SharedToolLists)
        "protomcp_host.transports",  # (type only: transports.ports.Connection)
        "protomcp_host.telemetry",  # sessions counted
    },
    "protomcp_host.tool_events": {
        "protomcp_host.calls",
        "protomcp_host.processes",
        "protomcp_host.protocol",
        "protomcp_host.settings",
        "protomcp_host.store",
    },
    "protomcp_host.run": {
        "protomcp_host.app",
        "protomcp_host.errout",
        "protomcp_host.oauth",
        "protomcp_host.peers",
        "protomcp_host.processes",
        "protomcp_host.protocol",
        "protomcp_host.settings",
        "protomcp_host.store",
        "protomcp_host.telemetry",  # metrics and the audit log switched on
        "protomcp_host.transports",
        "protomcp_host.transports.http",
    },
}


def test_the_host_facade_parts_import_only_their_layers(graph: Graph, modules: dict[str, Path]) -> None:
    def layer(target: str) -> str:
        folder = folder_of(target, modules)
        return target if folder == "protomcp_host" else folder

    wrong = {
        module: sorted(extra)
        for module, allowed in HOST_PARTS.items()
        if (extra := {layer(t) for t in graph[module] if t.startswith("protomcp_host")} - allowed)
    }
    assert wrong == {}


def test_the_protocol_core_imports_no_protobuf_and_no_io() -> None:
    """protocol/ is sans-IO: no protobuf, no files, sockets or processes."""
    banned = (
        "google.protobuf",
        "protomcp_sdk.wire.envelope_pb2",
        "protomcp_sdk.wire.envelope_pb2",
        "protomcp_sdk.wire.proto_mcp_pb2",
        "socket",
        "subprocess",
        "pathlib",
        "anyio",
        "asyncio",
    )
    found = []
    for file in sorted((ROOT / "protomcp_host" / "protocol").glob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(), str(file))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            found += [f"{file.name}: {n}" for n in names if n.startswith(banned)]
    assert found == []
