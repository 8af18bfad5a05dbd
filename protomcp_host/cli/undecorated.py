"""Why a tool name is unknown when the file defines a function of that name: it was left
without ``@tool`` (read from the source, so even a file that fails to load is checked)."""

from __future__ import annotations

import ast
from pathlib import Path

DECORATORS = {"tool", "resource", "prompt"}


def undecorated_hint(files: list[Path], name: str) -> str:
    """ "" or one sentence: which file defines `name` at top level without @tool."""
    for file in files:
        try:
            tree = ast.parse(file.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
                if any(_decorator_name(d) in DECORATORS for d in node.decorator_list):
                    return ""  # registered under another name, or a resource or prompt
                return (
                    f"{file.name} defines {name}() but it is not a tool: put @tool on the line above its def"
                )
    return ""


def _decorator_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""
