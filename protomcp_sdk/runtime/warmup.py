"""What a standby process imports while it waits: the installed packages its tool file uses.

A standby process (``protomcp dev``) is started ahead of the next save so a reload does not
pay for a fresh interpreter; left at that, it still pays for the file's own imports, and for
a file with pydantic models that is most of a reload (pydantic alone is ~90 ms). So while it
waits, it imports every module the file imports at top level that comes from the standard
library or an installed distribution (site-packages), as the file stands now: a save rarely
changes the imports.

Never the user's own modules: those live in the project, may be edited between now and the
next save, and must be imported fresh when the file loads. A module that fails to import here
is left alone; loading the file reports it as it would have.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
from pathlib import Path
from types import ModuleType


def _installed_roots() -> tuple[str, ...]:
    import sysconfig  # (here: every tool process imports this module, only a standby calls warm)

    paths = sysconfig.get_paths()
    return tuple(
        str(Path(paths[key]).resolve())
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if key in paths
    )


def top_level_imports(source: str) -> list[str]:
    """Absolute modules imported by the file's top-level statements (not inside functions)."""
    names: list[str] = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return names


def _installed(name: str, roots: tuple[str, ...]) -> bool:
    try:
        spec = importlib.util.find_spec(name.partition(".")[0])
    except (ImportError, ValueError):
        return False
    if spec is None or not spec.origin or spec.origin in ("built-in", "frozen"):
        return spec is not None and spec.origin in ("built-in", "frozen")
    origin = str(Path(spec.origin).resolve())
    return origin.startswith(roots)


def warm(tool_file: str) -> None:
    """Import what loading `tool_file` will need, from installed code only; never raises."""
    names: list[str] = []
    with contextlib.suppress(Exception):
        names.extend(top_level_imports(Path(tool_file).read_text(encoding="utf-8")))
    roots = _installed_roots()
    for name in dict.fromkeys(names):
        if name.startswith("protomcp_") or not _installed(name, roots):
            continue
        with contextlib.suppress(Exception):
            module = importlib.import_module(name)
            if name == "pydantic":
                _warm_pydantic(module)


def _warm_pydantic(pydantic: ModuleType) -> None:
    """pydantic loads its names lazily, and scans the installed distributions for plugins
    (importlib.metadata, ~50 ms) at its first validator: do both now."""
    _ = pydantic.BaseModel, pydantic.Field
    pydantic.TypeAdapter(list[int]).json_schema()
