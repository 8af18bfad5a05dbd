"""The @tool decorator, the registry, argument conversion and ToolDefinition."""

import datetime
import enum
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import orjson
import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from protomcp_sdk import Context, tool
from protomcp_sdk.authoring.arguments import ArgumentError
from protomcp_sdk.authoring.registry import REGISTRY, DuplicateToolError, Registry
from protomcp_sdk.authoring.tools import ToolSpec

pytestmark = [pytest.mark.fast, pytest.mark.usefixtures("clean_registry")]  # starts no process


class Priority(enum.Enum):
    LOW = "low"
    HIGH = "high"


@dataclass
class Item:
    name: str
    qty: int = 1


class Address(TypedDict):
    city: str


class Person(BaseModel):
    name: str
    age: int


# ---- decorator --------------------------------------------------------------


def test_bare_decorator_registers_and_returns_the_function() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    decorated = tool(add)
    assert decorated is add
    assert add(2, 3) == 5
    spec = REGISTRY.tools["add"]
    assert spec.name == "add"
    assert spec.fn is add
    assert spec.description == "Add two numbers."
    assert spec.title is None
    assert spec.annotations is None
    assert spec.is_async is False
    assert spec.context_param is None


def test_bare_decorator_syntax() -> None:
    @tool
    def ping() -> str:
        return "pong"

    assert ping() == "pong"
    assert list(REGISTRY.tools) == ["ping"]
    assert REGISTRY.tools["ping"].description == ""


def test_decorator_with_arguments() -> None:
    @tool(name="math.mul", title="Multiply", description="Multiply a by b.", read_only=True)
    def mul(a: int, b: int) -> int:
        """Ignored docstring."""
        return a * b

    assert mul(2, 4) == 8
    spec = REGISTRY.tools["math.mul"]
    assert spec.title == "Multiply"
    assert spec.description == "Multiply a by b."
    assert spec.annotations == {"readOnlyHint": True}


def test_explicit_false_hints_are_kept_unset_hints_absent() -> None:
    @tool(read_only=False, destructive=True, idempotent=False)
    def wipe() -> None: ...

    assert REGISTRY.tools["wipe"].annotations == {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
    }


def test_all_hints() -> None:
    @tool(read_only=True, destructive=False, idempotent=True, open_world=True)
    def fetch() -> None: ...

    assert REGISTRY.tools["fetch"].annotations == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": True,
    }


def test_docstring_is_cleaned() -> None:
    @tool
    def f() -> None:
        """First line.

            Indented detail.
        Last line.
        """

    assert REGISTRY.tools["f"].description == "First line.\n\n    Indented detail.\nLast line."


def test_explicit_empty_description_wins_over_docstring() -> None:
    @tool(description="")
    def f() -> None:
        """Docstring."""

    assert REGISTRY.tools["f"].description == ""


def test_async_tool_with_context() -> None:
    @tool
    async def slow(n: int, ctx: Context) -> str:
        return str(n)

    spec = REGISTRY.tools["slow"]
    assert spec.is_async is True
    assert spec.context_param == "ctx"
    assert spec.input_schema == {
        "additionalProperties": False,
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }


def test_duplicate_name_is_rejected() -> None:
    @tool
    def twice() -> None: ...

    def other() -> None: ...

    with pytest.raises(DuplicateToolError, match="tool name 'twice' is registered twice"):
        tool(name="twice")(other)
    assert REGISTRY.tools["twice"].fn is twice
    assert issubclass(DuplicateToolError, ValueError)


@pytest.mark.parametrize("name", ["", "has space", "a/b", "x" * 129, "naïve", "tab\t", "a,b"])
def test_bad_names_are_rejected(name: str) -> None:
    def f() -> None: ...

    with pytest.raises(ValueError, match="invalid tool name"):
        tool(name=name)(f)
    assert REGISTRY.tools == {}


@pytest.mark.parametrize("name", ["a", "get_user", "ns.tool-v2", "A.B_c-9", "x" * 128])
def test_good_names_are_accepted(name: str) -> None:
    def f() -> None: ...

    tool(name=name)(f)
    assert list(REGISTRY.tools) == [name]


def test_lambda_needs_a_name() -> None:
    with pytest.raises(ValueError, match=r"invalid tool name '<lambda>'.*@tool\(name=\.\.\.\)"):
        tool(lambda: None)
    tool(name="anon")(lambda: None)
    assert "anon" in REGISTRY.tools


def test_positional_name_as_the_user_wrote_it() -> None:
    """`@tool("named")` once failed with "invalid tool name ''"."""

    @tool("named")
    def f() -> str:
        return "x"

    assert list(REGISTRY.tools) == ["named"] and REGISTRY.tools["named"].fn is f
    with pytest.raises(TypeError, match="give the name once"):
        tool("a", name="b")


def test_meta_and_icons_are_listed_and_pinned_sets_always_load() -> None:
    icon = {"src": "https://example.com/i.png", "sizes": ["48x48"]}

    @tool(meta={"anthropic/searchHint": "sms"}, icons=[icon], pinned=True)
    def sms() -> str:
        return "x"

    definition = REGISTRY.tools["sms"].definition()
    assert orjson.loads(definition.meta_json) == {"anthropic/alwaysLoad": True, "anthropic/searchHint": "sms"}
    assert orjson.loads(definition.icons_json) == [icon]

    @tool(pinned=True, meta={"anthropic/alwaysLoad": False})  # the author's own value wins
    def quiet() -> str:
        return "x"

    assert orjson.loads(REGISTRY.tools["quiet"].definition().meta_json) == {"anthropic/alwaysLoad": False}


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"meta": ["x"]}, "meta must be a dict"),
        ({"meta": {1: "x"}}, "meta must be a dict"),
        ({"meta": {"k": object()}}, "meta must hold JSON values"),
        ({"icons": {"src": "x"}}, "icons must be a list"),
        ({"icons": [{"href": "x"}]}, "each icon must be a dict with a 'src'"),
    ],
)
def test_bad_meta_or_icons_are_refused_when_decorated(options: dict[str, Any], problem: str) -> None:
    def f() -> None: ...

    with pytest.raises(TypeError, match=problem):
        tool(**options)(f)


def test_var_args_rejected_by_decorator() -> None:
    with pytest.raises(TypeError, match=r"\*args is not supported"):

        @tool
        def f(*args: int) -> None: ...


def test_generator_rejected() -> None:
    with pytest.raises(TypeError, match="tool 'gen' is a generator"):

        @tool
        def gen() -> Iterator[int]:
            yield 1


def test_registry_add_and_clear() -> None:
    registry = Registry()

    def f() -> None: ...

    spec = ToolSpec.from_function(f)
    registry.add(spec)
    assert registry.tools == {"f": spec}
    registry.clear()
    assert registry.tools == {}
    assert REGISTRY.tools == {}  # from_function does not register


# ---- convert ----------------------------------------------------------------


def test_convert_applies_defaults_and_converts_types() -> None:
    def f(
        when: datetime.datetime,
        priority: Priority = Priority.LOW,
        item: Item | None = None,
        address: Address | None = None,
        person: Person | None = None,
        mode: Literal["a", "b"] = "a",
        tags: list[str] | None = None,
    ) -> None: ...

    spec = ToolSpec.from_function(f)
    kwargs = spec.convert(
        {
            "when": "2024-05-06T07:08:09Z",
            "priority": "high",
            "item": {"name": "pen"},
            "address": {"city": "Oslo"},
            "person": {"name": "Ann", "age": 30},
        }
    )
    assert kwargs == {
        "when": datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.UTC),
        "priority": Priority.HIGH,
        "item": Item(name="pen", qty=1),
        "address": {"city": "Oslo"},
        "person": Person(name="Ann", age=30),
        "mode": "a",
        "tags": None,
    }
    assert kwargs["priority"] is Priority.HIGH
    assert type(kwargs["item"]) is Item
    assert type(kwargs["person"]) is Person


def test_convert_result_calls_the_function() -> None:
    def add(a: int, b: int = 10) -> int:
        return a + b

    spec = ToolSpec.from_function(add)
    assert spec.fn(**spec.convert({"a": 1})) == 11
    assert spec.convert({"a": "5", "b": 2.0}) == {"a": 5, "b": 2}


def test_convert_leaves_out_context_and_rejects_unknown_keys() -> None:
    def f(a: int, ctx: Context) -> None: ...

    spec = ToolSpec.from_function(f)
    assert spec.convert({"a": 1}) == {"a": 1}
    with pytest.raises(ArgumentError) as info:
        spec.convert({"a": 1, "ctx": "nope", "extra": True})
    assert str(info.value) == (
        "Invalid arguments for tool 'f': ctx: unknown argument (not a parameter of this tool); "
        "extra: unknown argument (not a parameter of this tool)"
    )


def test_convert_none_arguments_means_empty() -> None:
    def f(a: int = 3) -> None: ...

    assert ToolSpec.from_function(f).convert(None) == {"a": 3}


def test_convert_odd_parameter_names() -> None:
    def f(model_config: int, _private: str = "p", json: bool = False) -> None: ...

    assert ToolSpec.from_function(f).convert({"model_config": 1, "json": True}) == {
        "model_config": 1,
        "_private": "p",
        "json": True,
    }


def test_convert_failure_message_for_one_field() -> None:
    def add(a: int, b: int) -> int: ...

    with pytest.raises(ArgumentError) as info:
        ToolSpec.from_function(add).convert({"a": 1, "b": "x"})
    assert str(info.value) == (
        "Invalid arguments for tool 'add': "
        "b: Input should be a valid integer, unable to parse string as an integer (got 'x')"
    )
    assert isinstance(info.value, ValueError)


def test_convert_failure_names_every_bad_field() -> None:
    def f(a: int, priority: Priority, items: list[Item], flag: bool = False) -> None: ...

    with pytest.raises(ArgumentError) as info:
        ToolSpec.from_function(f).convert({"priority": "urgent", "items": [{"name": "ok"}, {"qty": "many"}]})
    assert str(info.value) == (
        "Invalid arguments for tool 'f': "
        "a: required argument is missing; "
        "priority: Input should be 'low' or 'high' (got 'urgent'); "
        "items[1].name: required argument is missing; "
        "items[1].qty: Input should be a valid integer, unable to parse string as an integer (got 'many')"
    )


def test_convert_failure_truncates_long_input() -> None:
    def f(n: int) -> None: ...

    with pytest.raises(ArgumentError) as info:
        ToolSpec.from_function(f).convert({"n": "y" * 500})
    message = str(info.value)
    assert message.endswith("(got '" + "y" * 56 + "...)")
    assert len(message) < 200


def test_convert_rejects_non_object_arguments() -> None:
    def f(n: int) -> None: ...

    with pytest.raises(
        ArgumentError, match="Invalid arguments for tool 'f': expected a JSON object, got list"
    ):
        ToolSpec.from_function(f).convert([1])  # type: ignore[arg-type]


def test_convert_field_constraints() -> None:
    def f(limit: Annotated[int, Field(ge=1, le=5)] = 2) -> None: ...

    with pytest.raises(ArgumentError) as info:
        ToolSpec.from_function(f).convert({"limit": 9})
    assert (
        str(info.value)
        == "Invalid arguments for tool 'f': limit: Input should be less than or equal to 5 (got 9)"
    )


# ---- definition -------------------------------------------------------------


def test_definition_fields() -> None:
    @tool(title="Lookup", read_only=True, open_world=False)
    def lookup(key: Annotated[str, Field(description="The key")]) -> int:
        """Look a key up."""
        return 1

    definition = REGISTRY.tools["lookup"].definition()
    assert definition.name == "lookup"
    assert definition.title == "Lookup"
    assert definition.description == "Look a key up."
    assert orjson.loads(definition.input_schema_json) == {
        "additionalProperties": False,
        "type": "object",
        "properties": {"key": {"type": "string", "description": "The key"}},
        "required": ["key"],
    }
    assert orjson.loads(definition.output_schema_json) == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert orjson.loads(definition.annotations_json) == {"readOnlyHint": True, "openWorldHint": False}
    assert definition.read_only_hint is True
    assert definition.destructive_hint is False
    assert definition.idempotent_hint is False
    assert definition.open_world_hint is False
    assert definition.task_support is False


def test_definition_without_optional_parts() -> None:
    @tool
    def plain(text: str) -> str:
        return text

    definition = REGISTRY.tools["plain"].definition()
    assert definition.title == ""
    assert definition.description == ""
    assert definition.output_schema_json == ""
    assert definition.annotations_json == ""
    assert not (definition.read_only_hint or definition.destructive_hint)
    assert not (definition.idempotent_hint or definition.open_world_hint)


def test_definition_of_object_return() -> None:
    @tool(destructive=True)
    def get_item() -> Item:
        return Item("x")

    definition = REGISTRY.tools["get_item"].definition()
    assert orjson.loads(definition.output_schema_json) == {
        "type": "object",
        "title": "Item",
        "properties": {"name": {"type": "string"}, "qty": {"type": "integer", "default": 1}},
        "required": ["name"],
    }
    assert definition.destructive_hint is True
    assert orjson.loads(definition.annotations_json) == {"destructiveHint": True}
    assert REGISTRY.tools["get_item"].wraps_result is False


def test_spec_keeps_schema_as_dict() -> None:
    def f(a: Any = None) -> dict[str, int]: ...

    spec = ToolSpec.from_function(
        f, name="renamed", title="T", description="D", annotations={"readOnlyHint": True}
    )
    assert (spec.name, spec.title, spec.description) == ("renamed", "T", "D")
    assert spec.input_schema == {
        "additionalProperties": False,
        "type": "object",
        "properties": {"a": {"default": None}},
    }
    assert spec.output_schema == {"type": "object", "additionalProperties": {"type": "integer"}}
