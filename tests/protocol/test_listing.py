"""The one paged, owner-keyed list of the protocol core (protocol/listing.py), the JSON type
predicates (protocol/jsontypes.py), and the protocol folder's imports."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from protomcp_host.protocol import jsontypes
from protomcp_host.protocol.listing import InvalidCursor, Listing, NameClash, decode_cursor, encode_cursor

pytestmark = pytest.mark.fast  # starts no process

PROTOCOL = Path(__file__).resolve().parents[2] / "protomcp_host" / "protocol"


@dataclass
class Item:
    key: str
    owner: str = "a.py"
    mcp: dict[str, Any] = field(default_factory=dict)


def items(*keys: str, owner: str = "a.py", version: int = 0) -> list[Item]:
    return [Item(key, owner, {"name": key, "v": version}) for key in keys]


def render(item: Item) -> dict[str, Any]:
    return item.mcp


def test_replace_keeps_the_order_and_reports_changes_per_owner() -> None:
    listing: Listing[Item] = Listing("thing", 10)
    assert listing.replace("a.py", items("x", "y")) is True
    assert listing.replace("b.py", items("z", owner="b.py")) is True
    assert listing.replace("a.py", items("y", "x")) is False  # same entries, same place
    assert listing.replace("a.py", items("x", "w", version=1)) is True
    assert [item.key for item in listing.ordered()] == ["x", "z", "w"]  # survivors stay put
    assert [item.key for item in listing.of("b.py")] == ["z"]
    assert "z" in listing and "y" not in listing and len(listing) == 3


def test_clashes_name_both_owners_and_change_nothing() -> None:
    listing: Listing[Item] = Listing("thing", 10)
    listing.replace("a.py", items("x"))
    with pytest.raises(NameClash, match=r"^thing clash: 'x' is defined in both a\.py and /b\.py$"):
        listing.replace("b.py", items("v", "x", owner="b.py"), owner_label="/b.py")
    with pytest.raises(NameClash, match=r"^thing clash: 'y' is defined twice in a\.py$"):
        listing.replace("a.py", items("y", "y"))
    assert list(listing.entries) == ["x"]
    assert listing.replace("b.py", items("x", owner="b.py"), check=False) is True  # checked earlier
    assert listing.entries["x"].owner == "b.py"


def test_pages_cursors_and_the_cache() -> None:
    listing: Listing[Item] = Listing("thing", 2)
    listing.replace("a.py", items("a", "b", "c", "d", "e"))
    first = orjson.loads(listing.page(None, "things", render, cache="all"))
    assert [t["name"] for t in first["things"]] == ["a", "b"]
    third = orjson.loads(listing.page(encode_cursor(4), "things", render, cache="all"))
    assert [t["name"] for t in third["things"]] == ["e"] and "nextCursor" not in third
    assert decode_cursor(first["nextCursor"], 5) == 2
    assert listing.page(None, "things", render, cache="all") is listing.page(
        None, "things", render, cache="all"
    )
    listing.replace("a.py", items("a", "b", "c", "d", "e", version=2))  # a change empties the cache
    assert orjson.loads(listing.page(None, "things", render, cache="all"))["things"][0]["v"] == 2
    chosen = [listing.entries["e"], listing.entries["a"]]
    only = orjson.loads(listing.page(None, "things", render, items=chosen))
    assert [t["name"] for t in only["things"]] == ["e", "a"] and "nextCursor" not in only


@pytest.mark.parametrize("cursor", ["nope", encode_cursor(6), "b2Zmc2V0Oi0x", 5, "dGFzazox"])
def test_bad_cursors(cursor: Any) -> None:
    listing: Listing[Item] = Listing("thing", 2)
    listing.replace("a.py", items("a", "b", "c", "d", "e"))
    with pytest.raises(InvalidCursor, match="Invalid cursor"):
        listing.page(cursor, "things", render)


def test_page_size_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Listing("thing", 0)


@pytest.mark.parametrize(
    ("value", "types"),
    [
        ("s", {"string"}),
        (1, {"integer", "number"}),
        (1.0, {"integer", "number"}),
        (1.5, {"number"}),
        (True, {"boolean"}),
        (None, {"null"}),
        ({}, {"object"}),
        ([], {"array"}),
    ],
)
def test_json_type_predicates(value: Any, types: set[str]) -> None:
    assert {name for name, test in jsontypes.JSON_TYPES.items() if test(value)} == types


@pytest.mark.parametrize(
    ("value", "is_id"), [("a", True), (3, True), (True, False), (1.0, False), (None, False)]
)
def test_is_id(value: Any, is_id: bool) -> None:
    assert jsontypes.is_id(value) is is_id


def _imports(path: Path) -> set[str]:
    """The protomcp modules a file imports (type-only and function-level imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("protomcp"):
            if node.module == "protomcp_host.protocol":
                found |= {f"protomcp_host.protocol.{alias.name}" for alias in node.names}
            else:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("protomcp")}
    return found


def test_the_protocol_core_imports_one_way() -> None:
    """No circle between its modules, nothing of the host outside it, only the SDK's wire
    contract (and, until it moves into wire, the URI templates)."""
    modules = {f"protomcp_host.protocol.{p.stem}": _imports(p) for p in PROTOCOL.glob("*.py")}
    allowed_sdk = ("protomcp_sdk.wire", "protomcp_sdk.uritemplate")
    for module, imported in modules.items():
        for name in imported:
            assert name in modules or name.startswith(allowed_sdk), f"{module} imports {name}"

    def visit(module: str, path: tuple[str, ...]) -> None:
        for name in modules.get(module, ()):
            assert name not in path, f"import circle: {' -> '.join((*path, name))}"
            visit(name, (*path, name))

    for module in modules:
        visit(module, (module,))
