"""docs/architecture.md lists every module of both packages, each in its own folder, and no
module that is gone (the layout map cannot drift from the tree)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # starts no process

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("protomcp_host", "protomcp_sdk")
GENERATED = re.compile(r"_pb2\.pyi?$")  # protoc's output, listed once as a family
ENTRY = re.compile(r"^( *)(\S.*?)(?:  |$)")
NAME = re.compile(r"^[\w.]+(?:\.py|/)$")


@dataclass
class Folder:
    """One folder of the map: the names its lines start with, and its text (for names a line
    mentions beside another, like `__main__.py` after `__init__.py`)."""

    entries: set[str] = field(default_factory=set)
    text: list[str] = field(default_factory=list)
    children: dict[str, Folder] = field(default_factory=dict)


def parse_map(markdown: str) -> dict[str, Folder]:
    """The maps in `markdown`'s code blocks (each starts with a package folder at the margin),
    as trees of Folders."""
    tops: dict[str, Folder] = {}
    stack: list[tuple[int, Folder]] = []
    for block in re.findall(r"^```\n(.*?)^```", markdown, re.MULTILINE | re.DOTALL):
        stack = []
        for line in block.splitlines():
            match = ENTRY.match(line)
            if not match or not line.strip():
                continue
            indent, head = len(match.group(1)), match.group(2)
            if indent == 0:
                package = head.rstrip("/")
                stack = [(-1, tops.setdefault(package, Folder()))] if package in PACKAGES else []
                continue
            if not stack:
                continue
            names = [name for name in re.split(r" / |, ", head) if NAME.match(name)]
            while names and stack[-1][0] >= indent:
                stack.pop()
            folder = stack[-1][1]
            folder.text.append(line)
            for name in names:
                folder.entries.add(name)
                if name.endswith("/"):
                    stack.append((indent, folder.children.setdefault(name.rstrip("/"), Folder())))
    return tops


def modules(folder: Path) -> set[str]:
    """What the map should list of `folder`: its modules (not __init__) and its sub-packages."""
    names = {path.name for path in folder.glob("*.py") if path.name != "__init__.py"}
    names |= {path.name + "/" for path in folder.iterdir() if (path / "__init__.py").exists()}
    return {name for name in names if not GENERATED.search(name)}


def compare(folder: Path, mapped: Folder, where: str) -> list[str]:
    text = "\n".join(mapped.text)
    wrong = [
        f"{where}{name} is not in the map"
        for name in sorted(modules(folder))
        if name not in mapped.entries and not re.search(rf"(?<![\w.]){re.escape(name)}", text)
    ]
    wrong += [
        f"{where}{name} is in the map but not in the tree"
        for name in sorted(mapped.entries)
        if not GENERATED.search(name) and not (folder / name).exists()
    ]
    for name, child in mapped.children.items():
        if (folder / name).is_dir():
            wrong += compare(folder / name, child, f"{where}{name}/")
    return wrong


def test_the_parser_reads_nested_folders_and_shared_lines() -> None:
    doc = "\n".join(
        [
            "```",
            "protomcp_host/",
            "  app.py  the host",
            "",
            "protomcp_sdk/    the SDK",
            "  __init__.py  names;  __main__.py → main",
            "  runtime/     the process",
            "    a.py / b.py   specs",
            "                 more words",
            "  c.py  last",
            "```",
            "",
        ]
    )
    tops = parse_map(doc)
    assert tops["protomcp_host"].entries == {"app.py"}
    top = tops["protomcp_sdk"]
    assert top.entries == {"__init__.py", "runtime/", "c.py"}
    assert "__main__.py" in "\n".join(top.text)
    assert top.children["runtime"].entries == {"a.py", "b.py"}


@pytest.mark.parametrize("package", PACKAGES)
def test_the_map_lists_every_module(package: str) -> None:
    tops = parse_map((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))
    assert package in tops, f"docs/architecture.md has no map of {package}/"
    wrong = compare(ROOT / package, tops[package], f"{package}/")
    assert not wrong, "docs/architecture.md and the tree differ:\n" + "\n".join(wrong)
