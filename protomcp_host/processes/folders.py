"""Which files of a served folder are tool files and which are helper modules.

A module that another file of the folder imports (``import helpers``, ``from helpers import
x``, ``from . import helpers``) is a helper: it is not started as a tool process of its own.
Whatever it defines is served through the files that import it (its decorators register in
their processes), so a helper with tools does not clash with itself, and a helper with none is
not warned about. Files in an import cycle that no other file imports stay tool files.
"""

from __future__ import annotations

import ast
from pathlib import Path


def imported_names(file: Path) -> set[str]:
    """The top-level module names `file` imports, absolutely or relative to its folder."""
    try:
        tree = ast.parse(file.read_bytes(), str(file))
    except (OSError, SyntaxError, ValueError):
        return set()  # the tool process reports a file that does not load
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level <= 1:
            if node.module:
                names.add(node.module.split(".")[0])
            elif node.level == 1:  # from . import helpers
                names.update(alias.name for alias in node.names)
    return names


def without_helpers(files: list[Path]) -> list[Path]:
    """`files` (one folder's *.py) minus the helper modules among them, order kept."""
    by_name = {file.stem: file for file in files}
    imports = {
        file: {by_name[n] for n in imported_names(file) if n in by_name and n != file.stem} for file in files
    }
    importers: dict[Path, set[Path]] = {file: set() for file in files}
    for file, used in imports.items():
        for helper in used:
            importers[helper].add(file)
    roots = [file for file in files if not importers[file]]
    reached: set[Path] = set()
    stack = list(roots)
    while stack:  # everything the served files import, directly or not
        for helper in imports[stack.pop()]:
            if helper not in reached and helper not in roots:
                reached.add(helper)
                stack.append(helper)
    return [file for file in files if file not in reached]
