"""The merged tool list (protomcp_host.protocol.catalog): ownership, change detection, pages, validation."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from protomcp_host.calls.envelope import tool_from_definition
from protomcp_host.protocol.catalog import Catalog, InvalidCursor, NameClash, Tool
from protomcp_sdk.wire import envelope_pb2 as pb

pytestmark = pytest.mark.fast  # starts no process


def make_tool(
    name: str, owner: str = "a.py", description: str = "", schema: Any = None, **extra: Any
) -> Tool:
    return tool_from_definition(
        pb.ToolDefinition(
            name=name,
            description=description,
            input_schema_json=orjson.dumps(schema).decode() if schema is not None else "",
            **extra,
        ),
        owner=owner,
    )


def page(catalog: Catalog, cursor: str | None = None, version: str = "2025-11-25") -> Any:
    return orjson.loads(catalog.page(cursor, version))


def names(catalog: Catalog) -> list[str]:
    return [t["name"] for t in page(catalog)["tools"]]


# -- tool_from_definition ---------------------------------------------------------------------


def test_minimal_definition() -> None:
    tool = make_tool("t")
    assert tool.name == "t"
    assert tool.owner == "a.py"
    assert tool.mcp == {"name": "t", "description": "", "inputSchema": {"type": "object"}}


def test_full_definition() -> None:
    tool = make_tool(
        "t",
        description="Does t.",
        schema={"type": "object", "properties": {"x": {"type": "string"}}},
        output_schema_json='{"type":"object"}',
        title="Tee",
        annotations_json='{"readOnlyHint":true,"destructiveHint":false}',
    )
    assert tool.mcp == {
        "name": "t",
        "title": "Tee",
        "description": "Does t.",
        "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
        "outputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True, "destructiveHint": False},
    }


def test_bool_hints_without_annotations_json_report_only_true_ones() -> None:
    tool = make_tool("t", read_only_hint=True, open_world_hint=True, destructive_hint=False)
    assert tool.mcp["annotations"] == {"readOnlyHint": True, "openWorldHint": True}
    assert "annotations" not in make_tool("u").mcp


def test_annotations_json_wins_over_bool_hints() -> None:
    tool = make_tool("t", annotations_json='{"title":"x"}', read_only_hint=True)
    assert tool.mcp["annotations"] == {"title": "x"}


# -- replace / change detection ------------------------------------------------------------------


def test_replace_reports_only_real_changes() -> None:
    catalog = Catalog()
    assert catalog.replace("a.py", [make_tool("x", description="X"), make_tool("y")]) is True
    assert catalog.replace("a.py", [make_tool("x", description="X"), make_tool("y")]) is False
    assert catalog.replace("a.py", [make_tool("x", description="X changed"), make_tool("y")]) is True
    assert page(catalog)["tools"][0]["description"] == "X changed"
    assert catalog.replace("a.py", [make_tool("x", description="X changed")]) is True  # y removed
    assert catalog.names() == ["x"]
    assert (
        catalog.replace("a.py", [make_tool("x", description="X changed", schema={"type": "object"})]) is False
    )


def test_schema_change_is_a_change() -> None:
    catalog = Catalog()
    catalog.replace("a.py", [make_tool("x", schema={"type": "object"})])
    changed = make_tool("x", schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    assert catalog.replace("a.py", [changed]) is True


def test_empty_replace_on_empty_catalog_is_no_change() -> None:
    catalog = Catalog()
    assert catalog.replace("a.py", []) is False
    assert len(catalog) == 0


def test_owners_are_independent() -> None:
    catalog = Catalog()
    catalog.replace("a.py", [make_tool("x")])
    assert catalog.replace("b.py", [make_tool("y", owner="b.py")]) is True
    assert sorted(catalog.names()) == ["x", "y"]
    assert catalog.replace("b.py", [make_tool("y", owner="b.py")]) is False
    tool_x, tool_y = catalog.get("x"), catalog.get("y")
    assert tool_x is not None and tool_x.owner == "a.py"
    assert tool_y is not None and tool_y.owner == "b.py"
    assert catalog.get("z") is None


def test_name_clash_across_owners_names_both_and_changes_nothing() -> None:
    catalog = Catalog()
    catalog.replace("a.py", [make_tool("x")])
    with pytest.raises(NameClash) as info:
        catalog.replace("b.py", [make_tool("w", owner="b.py"), make_tool("x", owner="b.py")])
    assert str(info.value) == "tool name clash: 'x' is defined in both a.py and b.py"
    assert catalog.names() == ["x"]


def test_name_clash_uses_the_owner_label() -> None:
    catalog = Catalog()
    catalog.replace("a.py", [make_tool("x")])
    with pytest.raises(NameClash, match=r"^tool name clash: 'x' is defined in both a\.py and /abs/b\.py$"):
        catalog.replace(2, [make_tool("x", owner="2")], owner_label="/abs/b.py")


def test_duplicate_within_one_owner() -> None:
    catalog = Catalog()
    with pytest.raises(NameClash) as info:
        catalog.replace("a.py", [make_tool("x"), make_tool("y"), make_tool("x")])
    assert str(info.value) == "tool name clash: 'x' is defined twice in a.py"
    assert len(catalog) == 0


def test_name_clash_is_a_value_error() -> None:
    assert issubclass(NameClash, ValueError)


def test_remove_owner() -> None:
    catalog = Catalog()
    catalog.replace("a.py", [make_tool("x"), make_tool("y")])
    catalog.replace("b.py", [make_tool("z", owner="b.py")])
    assert catalog.remove_owner("a.py") is True
    assert catalog.names() == ["z"]
    assert catalog.remove_owner("a.py") is False
    assert catalog.remove_owner("nobody") is False
    # a.py's names are free again for another owner
    assert catalog.replace("c.py", [make_tool("x", owner="c.py")]) is True


def test_page_cache_is_invalidated_by_replace() -> None:
    catalog = Catalog()
    catalog.replace("a.py", [make_tool("x", description="one")])
    assert page(catalog)["tools"][0]["description"] == "one"
    catalog.replace("a.py", [make_tool("x", description="two")])
    assert page(catalog)["tools"][0]["description"] == "two"


# -- pages -----------------------------------------------------------------------------------------


def test_page_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="page size must be at least 1"):
        Catalog(page_size=0)


def test_pages_and_cursors() -> None:
    catalog = Catalog(page_size=2)
    catalog.replace("a.py", [make_tool(f"t{i}") for i in range(5)])
    first = page(catalog)
    assert [t["name"] for t in first["tools"]] == ["t0", "t1"]
    second = page(catalog, first["nextCursor"])
    assert [t["name"] for t in second["tools"]] == ["t2", "t3"]
    third = page(catalog, second["nextCursor"])
    assert third == {"tools": [{"name": "t4", "description": "", "inputSchema": {"type": "object"}}]}


def test_empty_catalog_page() -> None:
    assert page(Catalog()) == {"tools": []}


@pytest.mark.parametrize("cursor", ["", "!!!", "b2Zmc2V0Ong=", "b2Zmc2V0Oi0x", "Zm9vOjI=", "b2Zmc2V0Ojk="])
def test_invalid_cursors(cursor: str) -> None:
    # "offset:x", "offset:-1", "foo:2", "offset:9" (past the end of 5 tools)
    catalog = Catalog(page_size=2)
    catalog.replace("a.py", [make_tool(f"t{i}") for i in range(5)])
    with pytest.raises(InvalidCursor) as info:
        catalog.page(cursor, "2025-11-25")
    assert str(info.value) == f"Invalid cursor: {cursor!r}"


# -- validation --------------------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2},
        "count": {"type": "integer"},
        "when": {"type": "string", "format": "date"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"name": "Ada"}, None),
        ({"name": "Ada", "count": 3, "when": "2024-02-29", "tags": ["a"]}, None),
        ({}, "Invalid arguments for tool 'v': 'name' is a required property"),
        ({"name": "A"}, "Invalid arguments for tool 'v': name: 'A' is too short"),
        (
            {"name": "Ada", "count": "3"},
            "Invalid arguments for tool 'v': count: '3' is not of type 'integer'",
        ),
        (
            {"name": "Ada", "when": "yesterday"},
            "Invalid arguments for tool 'v': when: 'yesterday' is not a 'date'",
        ),
        (
            {"name": "Ada", "tags": ["a", 1]},
            "Invalid arguments for tool 'v': tags.1: 1 is not of type 'string'",
        ),
        (
            {"name": "Ada", "extra": 1},
            "Invalid arguments for tool 'v': Additional properties are not allowed ('extra' was unexpected)",
        ),
        (
            {"count": "x"},
            "Invalid arguments for tool 'v': 'name' is a required property; "
            "count: 'x' is not of type 'integer'",
        ),
    ],
)
def test_validator_messages(arguments: dict[str, Any], message: str | None) -> None:
    assert make_tool("v", schema=SCHEMA).validate(arguments) == message


def test_validator_reports_at_most_ten_problems() -> None:
    schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(15)}}
    problem = make_tool("v", schema=schema).validate({f"p{i}": "x" for i in range(15)})
    assert problem is not None
    assert problem.count("is not of type 'integer'") == 10


def test_tool_without_schema_accepts_any_object() -> None:
    assert make_tool("v").validate({"anything": [1, 2]}) is None


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"x": {"type": 12}}},
        {"type": "object", "properties": {"x": {"type": "string", "pattern": "("}}},
        {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}},
        {"type": "object", "properties": {"x": {"$ref": "https://example.invalid/schema.json"}}},
        "not a schema",
        [1, 2],
    ],
)
def test_broken_schema_from_a_tool_process_falls_back_to_any_object(schema: Any) -> None:
    # A tool process not written with this SDK may send any inputSchema: the host must
    # neither crash nor reject every call because of it.
    tool = make_tool("v", schema=schema)
    assert tool.validate({"x": "anything"}) is None
    assert tool.validate({"x": "again"}) is None


def test_validator_is_compiled_once() -> None:
    tool = make_tool("v", schema=SCHEMA)
    assert tool.validate({"name": "Ada"}) is None
    validator = tool._validator
    assert validator is not None
    assert tool.validate({}) is not None
    assert tool._validator is validator


def test_replace_keeps_order_of_surviving_tools() -> None:
    from protomcp_host.calls.envelope import tool_from_definition
    from protomcp_host.protocol.catalog import Catalog
    from protomcp_sdk.wire import envelope_pb2 as pb

    def tools(owner: str, *names: str) -> list:  # type: ignore[type-arg]
        return [tool_from_definition(pb.ToolDefinition(name=n), owner) for n in names]

    catalog = Catalog()
    catalog.replace("a", tools("a", "x"))
    catalog.replace("b", tools("b", "y"))
    assert catalog.replace("a", tools("a", "x")) is False
    assert catalog.names() == ["x", "y"]
    catalog.replace("a", tools("a", "x", "z"))
    assert catalog.names() == ["x", "y", "z"]
