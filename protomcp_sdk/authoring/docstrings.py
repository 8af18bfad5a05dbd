"""Parameter descriptions from Google, NumPy and Sphinx (reST) style docstrings.

``parse(doc)`` returns the description (the text before the first section: what the tool
does) and a description per parameter, so a tool's docstring documents its arguments once,
the way Python programmers already write it::

    Google                 NumPy                  Sphinx
    Args:                  Parameters             :param city: The city.
        city: The city.    ----------             :param days: How many days.
        days (int): How        city : str
            many days.             The city.
"""

from __future__ import annotations

import re

# Google: "Args:" and friends, at the docstring's own indentation.
_GOOGLE_PARAMS = {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments", "kwargs"}
_GOOGLE_OTHER = {
    "returns",
    "return",
    "yields",
    "yield",
    "raises",
    "raise",
    "examples",
    "example",
    "note",
    "notes",
    "attributes",
    "see also",
    "warning",
    "warnings",
    "todo",
    "references",
    "other parameters",
}
_GOOGLE_HEADER = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
_GOOGLE_ITEM = re.compile(r"^\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
# NumPy: a title underlined with dashes.
_NUMPY_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")
_NUMPY_PARAMS = {"parameters", "other parameters", "keyword arguments"}
_NUMPY_ITEM = re.compile(r"^\*{0,2}([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*(?::.*)?$")
# Sphinx: ":param name:" or ":param type name:", and the other field names that end a description.
_SPHINX_FIELD = re.compile(r"^:(\w+)([^:]*):\s*(.*)$")
_SPHINX_PARAMS = {"param", "parameter", "arg", "argument", "key", "keyword"}


def parse(doc: str) -> tuple[str, dict[str, str]]:
    """(description, {parameter: description}) from a cleaned docstring (inspect.cleandoc)."""
    lines = doc.splitlines()
    params: dict[str, str] = {}
    end = len(lines)
    for style in (_numpy, _google, _sphinx):
        start = style(lines, params)
        if start is not None:
            end = min(end, start)
    description = "\n".join(lines[:end]).strip()
    return description, params


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _items(block: list[str], item: re.Pattern[str], same_line: bool) -> dict[str, str]:
    """Entries of a parameter section: a name line, then more-indented continuation lines."""
    found: dict[str, list[str]] = {}
    base = min((_indent(line) for line in block if line.strip()), default=0)
    names: list[str] = []
    for line in block:
        if not line.strip():
            continue
        match = item.match(line.strip()) if _indent(line) == base else None
        if match:
            names = [n.strip() for n in match.group(1).split(",")]
            for name in names:
                found[name] = [match.group(2).strip()] if same_line and match.group(2).strip() else []
        else:
            for name in names:
                found[name].append(line.strip())
    return {name: " ".join(words) for name, words in found.items() if words}


def _google(lines: list[str], params: dict[str, str]) -> int | None:
    first: int | None = None
    i = 0
    while i < len(lines):
        match = _GOOGLE_HEADER.match(lines[i])
        title = match.group(1).strip().lower() if match and _indent(lines[i]) == 0 else ""
        if title in _GOOGLE_PARAMS or title in _GOOGLE_OTHER:
            first = i if first is None else first
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > 0):
                j += 1
            if title in _GOOGLE_PARAMS:
                params.update(_items(lines[i + 1 : j], _GOOGLE_ITEM, same_line=True))
            i = j
        else:
            i += 1
    return first


def _numpy(lines: list[str], params: dict[str, str]) -> int | None:
    first: int | None = None
    headers = [
        i
        for i in range(len(lines) - 1)
        if lines[i].strip()
        and _NUMPY_UNDERLINE.match(lines[i + 1])
        and len(lines[i + 1].strip()) >= len(lines[i].strip()) - 1
    ]
    for n, i in enumerate(headers):
        first = i if first is None else first
        end = headers[n + 1] if n + 1 < len(headers) else len(lines)
        if lines[i].strip().lower() in _NUMPY_PARAMS:
            params.update(_items(lines[i + 2 : end], _NUMPY_ITEM, same_line=False))
    return first


def _sphinx(lines: list[str], params: dict[str, str]) -> int | None:
    first: int | None = None
    name = ""  # the parameter whose description continues on indented lines
    for i, line in enumerate(lines):
        match = _SPHINX_FIELD.match(line) if _indent(line) == 0 else None
        if match:
            first = i if first is None else first
            kind, words, text = match.group(1), match.group(2).split(), match.group(3).strip()
            name = words[-1] if kind in _SPHINX_PARAMS and words else ""
            if name:
                params[name] = text
        elif name and line.strip():
            params[name] = f"{params[name]} {line.strip()}".strip()
    return first
