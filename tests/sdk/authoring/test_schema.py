"""Schemas generated from type hints. This file uses postponed annotations on purpose:
every hint below is a string that the SDK must resolve."""

from __future__ import annotations

import datetime
import enum
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Optional

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError as SchemaValidationError
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from protomcp_sdk.authoring.results import Image, Text, ToolResult
from protomcp_sdk.authoring.schema import analyze, is_context_type, output_schema_for
from protomcp_sdk.runtime.context import Context

pytestmark = pytest.mark.fast  # starts no process


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclass
class Point:
    x: float
    y: float = 0.0


class Address(TypedDict):
    street: str
    zip: int


class User(BaseModel):
    name: str
    tags: list[str] = []


class Node(BaseModel):
    value: int
    children: list[Node] = []


def schema_of(fn: Any) -> dict[str, Any]:
    return analyze(fn, fn.__name__).input_schema


def prop(fn: Any, name: str) -> dict[str, Any]:
    return schema_of(fn)["properties"][name]


def check(schema: dict[str, Any], valid: Any, invalid: Any = None) -> None:
    """The schema is valid Draft 2020-12, accepts ``valid`` and (if given) rejects ``invalid``."""
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    validator.validate(valid)
    if invalid is not None:
        with pytest.raises(SchemaValidationError):
            validator.validate(invalid)


# ---- input schema -----------------------------------------------------------


def test_scalars_required_and_defaults() -> None:
    def f(a: int, b: str, c: float = 1.5, d: bool = False) -> None: ...

    schema = schema_of(f)
    assert schema == {
        "additionalProperties": False,
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "string"},
            "c": {"type": "number", "default": 1.5},
            "d": {"type": "boolean", "default": False},
        },
        "required": ["a", "b"],
    }
    check(schema, {"a": 1, "b": "x"}, {"a": "1", "b": "x"})


def test_no_parameters_gives_empty_object() -> None:
    def f() -> None: ...

    schema = schema_of(f)
    assert schema == {"additionalProperties": False, "type": "object", "properties": {}}
    check(schema, {})


def test_field_description_and_constraints() -> None:
    def f(
        query: Annotated[str, Field(description="What to search for", min_length=1)],
        limit: Annotated[int, Field(description="Max hits", ge=1, le=50)] = 10,
    ) -> None: ...

    assert prop(f, "query") == {"type": "string", "description": "What to search for", "minLength": 1}
    assert prop(f, "limit") == {
        "type": "integer",
        "description": "Max hits",
        "minimum": 1,
        "maximum": 50,
        "default": 10,
    }
    assert schema_of(f)["required"] == ["query"]
    check(schema_of(f), {"query": "x", "limit": 5}, {"query": "x", "limit": 51})


def test_explicit_field_title_is_kept_auto_titles_dropped() -> None:
    def f(a: Annotated[int, Field(title="First")], b: int) -> None: ...

    assert prop(f, "a") == {"type": "integer", "title": "First"}
    assert prop(f, "b") == {"type": "integer"}
    assert "title" not in schema_of(f)


def test_optional_with_default() -> None:
    def f(a: Optional[int] = None, b: str | None = "x") -> None: ...  # noqa: UP045 (typing.Optional on purpose)

    assert prop(f, "a") == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    assert prop(f, "b") == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": "x"}
    assert "required" not in schema_of(f)
    check(schema_of(f), {"a": None, "b": None}, {"a": "x"})


def test_literal() -> None:
    def f(mode: Literal["fast", "slow"] = "fast") -> None: ...

    assert prop(f, "mode") == {"type": "string", "enum": ["fast", "slow"], "default": "fast"}
    check(schema_of(f), {"mode": "slow"}, {"mode": "medium"})


def test_enum_goes_to_defs() -> None:
    def f(color: Color = Color.RED) -> None: ...

    schema = schema_of(f)
    assert schema["properties"]["color"] == {"$ref": "#/$defs/Color", "default": "red"}
    assert schema["$defs"]["Color"] == {"type": "string", "enum": ["red", "green"], "title": "Color"}
    check(schema, {"color": "green"}, {"color": "blue"})


def test_dataclass_parameter() -> None:
    def f(p: Point) -> None: ...

    schema = schema_of(f)
    assert schema["properties"]["p"] == {"$ref": "#/$defs/Point"}
    point = dict(schema["$defs"]["Point"])
    assert point.pop("additionalProperties", False) is False  # pydantic >= 2.14 closes it too
    assert point == {
        "type": "object",
        "title": "Point",
        "properties": {"x": {"type": "number"}, "y": {"type": "number", "default": 0.0}},
        "required": ["x"],
    }
    check(schema, {"p": {"x": 1}}, {"p": {"y": 1}})


def test_typeddict_parameter() -> None:
    def f(address: Address) -> None: ...

    schema = schema_of(f)
    assert schema["$defs"]["Address"] == {
        "additionalProperties": False,
        "type": "object",
        "title": "Address",
        "properties": {"street": {"type": "string"}, "zip": {"type": "integer"}},
        "required": ["street", "zip"],
    }
    check(schema, {"address": {"street": "Main", "zip": 1}}, {"address": {"street": "Main"}})


def test_basemodel_parameter() -> None:
    def f(user: User) -> None: ...

    schema = schema_of(f)
    assert schema["$defs"]["User"] == {
        "type": "object",
        "title": "User",
        "properties": {
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}, "default": []},
        },
        "required": ["name"],
    }
    check(schema, {"user": {"name": "ann", "tags": ["a"]}}, {"user": {"tags": []}})


def test_recursive_model_parameter() -> None:
    def f(tree: Node) -> None: ...

    schema = schema_of(f)
    assert schema["$defs"]["Node"]["properties"]["children"] == {
        "type": "array",
        "items": {"$ref": "#/$defs/Node"},
        "default": [],
    }
    check(
        schema, {"tree": {"value": 1, "children": [{"value": 2}]}}, {"tree": {"value": 1, "children": [{}]}}
    )


def test_datetime_types() -> None:
    def f(when: datetime.datetime, day: datetime.date) -> None: ...

    assert prop(f, "when") == {"type": "string", "format": "date-time"}
    assert prop(f, "day") == {"type": "string", "format": "date"}
    check(schema_of(f), {"when": "2024-01-02T03:04:05Z", "day": "2024-01-02"})


def test_nested_containers() -> None:
    def f(
        grid: list[list[int]],
        scores: dict[str, float],
        pair: tuple[int, str],
        points: list[Point] | None = None,
    ) -> None: ...

    assert prop(f, "grid") == {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}
    assert prop(f, "scores") == {"type": "object", "additionalProperties": {"type": "number"}}
    assert prop(f, "pair") == {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "minItems": 2,
        "maxItems": 2,
    }
    assert prop(f, "points") == {
        "anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Point"}}, {"type": "null"}],
        "default": None,
    }
    sample = {"grid": [[1, 2], []], "scores": {"a": 1.5}, "pair": [1, "x"], "points": [{"x": 1}]}
    check(schema_of(f), sample, {**sample, "pair": [1, 2]})


def test_unannotated_parameter_is_any() -> None:
    def f(anything, other: int = 3) -> None:  # type: ignore[no-untyped-def]
        ...

    assert prop(f, "anything") == {}
    assert schema_of(f)["required"] == ["anything"]
    check(schema_of(f), {"anything": [1, {"x": None}]})


def test_parameter_names_that_clash_with_pydantic_internals() -> None:
    def f(model_config: int, _private: str, json: bool = True) -> None: ...

    schema = schema_of(f)
    assert list(schema["properties"]) == ["model_config", "_private", "json"]
    assert schema["required"] == ["model_config", "_private"]


def test_unserialisable_default_is_left_out() -> None:
    sentinel = object()

    def f(a: Any = sentinel) -> None: ...

    assert prop(f, "a") == {}
    assert "required" not in schema_of(f)


# ---- Context ----------------------------------------------------------------


def test_context_parameter_is_injected_not_in_schema() -> None:
    def f(a: int, ctx: Context) -> None: ...

    signature = analyze(f, "f")
    assert signature.context_param == "ctx"
    assert signature.input_schema["properties"] == {"a": {"type": "integer"}}
    assert signature.input_schema["required"] == ["a"]
    assert signature.params == ("a",)


def test_optional_context_parameter() -> None:
    def f(context: Context | None = None) -> None: ...

    signature = analyze(f, "f")
    assert signature.context_param == "context"
    assert signature.input_schema == {"additionalProperties": False, "type": "object", "properties": {}}


def test_no_context_parameter() -> None:
    def f(a: int) -> None: ...

    assert analyze(f, "f").context_param is None


def test_is_context_type() -> None:
    assert is_context_type(Context)
    assert is_context_type(Optional[Context])  # noqa: UP045 (typing.Optional on purpose)
    assert is_context_type(Annotated[Context, "x"])
    assert not is_context_type(int)
    assert not is_context_type(Context | int)


# ---- output schema ----------------------------------------------------------


@pytest.mark.parametrize(
    "annotation",
    [
        None,
        str,
        type(None),
        Any,
        ToolResult,
        Text,
        Image,
        list[Text],
        Text | Image,
        list[Text | Image],
        str | None,
    ],
)
def test_no_output_schema_for_text_like_returns(annotation: Any) -> None:
    assert output_schema_for(annotation) == (None, False)


def test_no_output_schema_without_annotation() -> None:
    def f(a): ...  # type: ignore[no-untyped-def]

    signature = analyze(f, "f")
    assert (signature.output_schema, signature.wraps_result) == (None, False)


def test_str_return_has_no_output_schema() -> None:
    def f() -> str: ...

    assert analyze(f, "f").output_schema is None


def test_none_return_has_no_output_schema() -> None:
    def f() -> None: ...

    assert analyze(f, "f").output_schema is None


@pytest.mark.parametrize(
    ("annotation", "inner", "sample"),
    [
        (int, {"type": "integer"}, 3),
        (float, {"type": "number"}, 1.5),
        (bool, {"type": "boolean"}, True),
        (list[int], {"type": "array", "items": {"type": "integer"}}, [1, 2]),
        (Optional[int], {"anyOf": [{"type": "integer"}, {"type": "null"}]}, None),  # noqa: UP045 (typing.Optional on purpose)
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}, "a"),
        (datetime.datetime, {"type": "string", "format": "date-time"}, "2024-01-01T00:00:00Z"),
    ],
)
def test_non_object_returns_are_wrapped(annotation: Any, inner: dict[str, Any], sample: Any) -> None:
    schema, wraps = output_schema_for(annotation)
    assert wraps is True
    assert schema == {"type": "object", "properties": {"result": inner}, "required": ["result"]}
    check(schema, {"result": sample}, {})


def test_wrapped_output_keeps_defs_at_the_root() -> None:
    schema, wraps = output_schema_for(list[Point])
    assert wraps is True
    assert schema is not None
    assert schema["properties"]["result"] == {"type": "array", "items": {"$ref": "#/$defs/Point"}}
    assert set(schema["$defs"]) == {"Point"}
    check(schema, {"result": [{"x": 1, "y": 2}]}, {"result": [{"y": 2}]})


def test_optional_dataclass_return_is_wrapped() -> None:
    schema, wraps = output_schema_for(Optional[Point])  # noqa: UP045 (typing.Optional on purpose)
    assert wraps is True
    assert schema is not None
    assert schema["properties"]["result"] == {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}]}
    check(schema, {"result": None})


@pytest.mark.parametrize(
    ("annotation", "sample", "invalid"),
    [
        (dict, {"any": ["thing"]}, [1]),
        (dict[str, int], {"a": 1}, {"a": "x"}),
        (Point, {"x": 1.0, "y": 2.0}, {"x": "1"}),
        (Address, {"street": "s", "zip": 1}, {"street": "s"}),
        (User, {"name": "ann", "tags": []}, {"tags": []}),
    ],
)
def test_object_returns_are_not_wrapped(annotation: Any, sample: Any, invalid: Any) -> None:
    schema, wraps = output_schema_for(annotation)
    assert wraps is False
    assert schema is not None
    assert schema["type"] == "object"
    check(schema, sample, invalid)


def test_object_return_schema_content() -> None:
    assert output_schema_for(dict[str, int]) == (
        {"type": "object", "additionalProperties": {"type": "integer"}},
        False,
    )
    assert output_schema_for(Point) == (
        {
            "type": "object",
            "title": "Point",
            "properties": {"x": {"type": "number"}, "y": {"type": "number", "default": 0.0}},
            "required": ["x"],
        },
        False,
    )


def test_recursive_model_return_is_inlined_at_root() -> None:
    schema, wraps = output_schema_for(Node)
    assert wraps is False
    assert schema is not None
    assert schema["type"] == "object"
    assert "$ref" not in schema
    assert schema["properties"]["value"] == {"type": "integer"}
    check(schema, {"value": 1, "children": [{"value": 2, "children": []}]}, {"value": 1, "children": [{}]})


def test_output_schema_from_postponed_annotation() -> None:
    def f() -> list[User]: ...

    signature = analyze(f, "f")
    assert signature.wraps_result is True
    assert signature.output_schema is not None
    assert signature.output_schema["properties"]["result"] == {
        "type": "array",
        "items": {"$ref": "#/$defs/User"},
    }


# ---- signatures that cannot be tools ---------------------------------------


def test_var_args_rejected() -> None:
    def f(*items: int) -> None: ...

    with pytest.raises(TypeError, match=r"tool 'f': parameter \*items is not supported"):
        analyze(f, "f")


def test_var_kwargs_rejected() -> None:
    def f(a: int, **options: Any) -> None: ...

    with pytest.raises(TypeError, match=r"tool 'f': parameter \*\*options is not supported"):
        analyze(f, "f")


def test_positional_only_rejected() -> None:
    def f(a: int, /) -> None: ...

    with pytest.raises(TypeError, match="parameter 'a' is positional-only"):
        analyze(f, "f")


class Opaque:
    pass


def test_unsupported_parameter_type_names_the_parameter() -> None:
    def f(a: int, thing: Opaque) -> None: ...

    with pytest.raises(TypeError, match="tool 'f': parameter 'thing' has type Opaque, which has no JSON"):
        analyze(f, "f")


def test_unsupported_return_type_is_reported() -> None:
    def f() -> Opaque: ...

    with pytest.raises(
        TypeError, match="tool 'f': cannot build an output schema from the return annotation Opaque"
    ):
        analyze(f, "f")


def test_unresolvable_hint_is_reported() -> None:
    def f(a: DoesNotExist) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(TypeError, match=r"tool 'f': cannot resolve the type hints of .*NameError"):
        analyze(f, "f")
