"""The pydantic-free path for simple signatures: same schemas and same conversions as pydantic.

Every check builds a tool both ways (``analyze(fn, name)`` and ``analyze(fn, name,
fast=False)``) and compares. This file uses postponed annotations on purpose.
"""

from __future__ import annotations

import inspect
import math
from typing import Annotated, Any, Optional

import orjson
import pytest
from pydantic import Field

from protomcp_sdk.authoring.arguments import ArgumentError
from protomcp_sdk.authoring.schema import Signature, analyze
from protomcp_sdk.runtime.context import Context

pytestmark = pytest.mark.fast  # starts no process

EMPTY = inspect.Parameter.empty
SIMPLE = [str, int, float, bool, Any, EMPTY, Optional[int], str | None, float | None, bool | None]  # noqa: UP045
NOT_SIMPLE = [list[int], dict[str, int], int | str, None | int, Optional[Any], object, bytes, type(None)]  # noqa: UP045
DEFAULTS = [EMPTY, None, 0, 7, -1, 2.5, 1.0, True, False, "", "text", "5"]
RETURNS = [EMPTY, str, int, float, bool, None, Any, Optional[int], float | None, bool | None, str | None]  # noqa: UP045


def make(params: list[tuple[str, Any, Any]], returns: Any = EMPTY) -> Any:
    """A function with the given (name, annotation, default) keyword parameters."""

    def fn(**kwargs: Any) -> None: ...

    fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=a)
            for name, a, d in params
        ],
        return_annotation=returns,
    )
    fn.__annotations__ = {name: a for name, a, _ in params if a is not EMPTY}
    if returns is not EMPTY:
        fn.__annotations__["return"] = returns
    return fn


def both(fn: Any) -> tuple[Signature, Signature]:
    fast, slow = analyze(fn, "t"), analyze(fn, "t", fast=False)
    assert is_fast(fast)
    assert not is_fast(slow)
    return fast, slow


def is_fast(signature: Signature) -> bool:
    return signature.convert.__qualname__.startswith("_converter.")


def same_schemas(fast: Signature, slow: Signature) -> None:
    """Byte-for-byte: key order included, as the host sends them."""
    assert orjson.dumps(fast.input_schema) == orjson.dumps(slow.input_schema)
    assert orjson.dumps(fast.output_schema) == orjson.dumps(slow.output_schema)
    assert (fast.wraps_result, fast.params, fast.context_param) == (
        slow.wraps_result,
        slow.params,
        slow.context_param,
    )


def outcome(signature: Signature, arguments: dict[str, Any]) -> tuple[str, Any]:
    """What conversion gives, comparable across paths (NaN == NaN, types included)."""
    try:
        kwargs = signature.convert(arguments)
    except ArgumentError as exc:
        return "error", str(exc)
    return "ok", [(k, type(v).__name__, repr(v)) for k, v in kwargs.items()]


# ---- schemas ----------------------------------------------------------------


@pytest.mark.parametrize("annotation", SIMPLE, ids=repr)
@pytest.mark.parametrize("default", DEFAULTS, ids=repr)
def test_input_schema_matches_pydantic(annotation: Any, default: Any) -> None:
    same_schemas(*both(make([("v", annotation, default)])))


@pytest.mark.parametrize("returns", RETURNS, ids=repr)
def test_output_schema_matches_pydantic(returns: Any) -> None:
    same_schemas(*both(make([("a", int, EMPTY)], returns)))


def test_many_parameters_and_context() -> None:
    def f(
        query: str,
        ctx: Context,
        limit: int = 10,
        ratio: float | None = None,
        exact: bool = False,
        note=None,  # type: ignore[no-untyped-def]
        count: Optional[int] = 3,  # noqa: UP045
        raw=5,  # type: ignore[no-untyped-def]
    ) -> float: ...

    fast, slow = both(f)
    same_schemas(fast, slow)
    assert fast.context_param == "ctx"
    assert fast.input_schema["required"] == ["query"]


def test_no_parameters() -> None:
    def f() -> None: ...

    fast, slow = both(f)
    same_schemas(fast, slow)
    assert fast.input_schema == {"additionalProperties": False, "properties": {}, "type": "object"}


@pytest.mark.parametrize("annotation", NOT_SIMPLE, ids=repr)
def test_other_annotations_use_pydantic(annotation: Any) -> None:
    assert not is_fast(analyze(make([("v", annotation, EMPTY)]), "t"))


@pytest.mark.parametrize(
    "default",
    [float("nan"), float("inf"), b"x", [], (), {}, object()],
    # the same ids in every xdist worker: an object's repr holds its address
    ids=lambda default: "object()" if type(default) is object else repr(default),
)
def test_other_defaults_use_pydantic(default: Any) -> None:
    assert not is_fast(analyze(make([("v", Any, default)]), "t"))


def test_annotated_uses_pydantic() -> None:
    def f(a: Annotated[int, Field(description="A")]) -> None: ...

    assert not is_fast(analyze(f, "f"))


# ---- conversion -------------------------------------------------------------

STRINGS = [
    *["5", " 5 ", "\t7\n", "+5", "-5", "-0", "00012", "1_000", "0_0", "1__0", "_1", "1_000_"],
    *["5.0", "5.00", "12.000", "-0.0", "1_000.0", "5.", "5.5", ".5", "1e3", "1.5E3", "1e400", "0x10"],
    *["inf", "-inf", "Infinity", "nan", "NaN", "+nan", "", " ", "x", "5\x00", "\xa05", "\u30005", "\u0665"],
    *[
        "true",
        "True",
        "TRUE",
        "yes",
        "on",
        "off",
        "f",
        "n",
        "no",
        "0",
        "1",
        " true",
        "1" * 30,
        "1" * 30 + ".0",
    ],
]
NUMBERS = [0, 1, 2, -1, True, False, 0.0, -0.0, 1.0, 2.0, 2.5, 1e-300, 1e20, 9.2e18, 9.3e18]
NUMBERS += [
    2**63 - 1,
    -(2**63),
    2**63,
    -(2**63) - 1,
    2**64 - 1,
    10**30,
    2.0**63,
    -(2.0**63),
    float("inf"),
    float("-inf"),
    float("nan"),
]
OTHERS = [None, [], {}, [1], {"a": 1}]


@pytest.mark.parametrize("annotation", SIMPLE, ids=repr)
def test_conversion_matches_pydantic(annotation: Any) -> None:
    fast, slow = both(make([("v", annotation, EMPTY)]))
    for value in [*STRINGS, *NUMBERS, *OTHERS]:
        assert outcome(fast, {"v": value}) == outcome(slow, {"v": value}), value


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"a": 1},
        {"a": "x", "b": "y", "c": [], "d": 3},
        {"b": 2.5, "unknown": 1, "ctx": "no"},
        {"a": 1, "b": None, "c": None, "d": None, "e": None},
        {"a": 1.5, "e": "on", "f": {"any": ["thing"]}},
    ],
)
def test_missing_defaults_unknown_keys_and_every_error_match_pydantic(arguments: dict[str, Any]) -> None:
    def f(a: int, ctx: Context, b: float = 1, c: bool | None = None, d: str = "d", e: bool = True, f=None):  # type: ignore[no-untyped-def]
        ...

    fast, slow = both(f)
    assert outcome(fast, arguments) == outcome(slow, arguments)


def test_error_message_names_field_and_problem() -> None:
    def add(a: int, b: int) -> int: ...

    fast, _ = both(add)
    with pytest.raises(ArgumentError) as info:
        fast.convert({"b": "x"})
    assert str(info.value) == (
        "Invalid arguments for tool 't': a: required argument is missing; "
        "b: Input should be a valid integer, unable to parse string as an integer (got 'x')"
    )


def test_defaults_are_the_objects_given() -> None:
    def f(a: float = 1, b=None, c: str = "x") -> None: ...  # type: ignore[no-untyped-def]

    fast, _ = both(f)
    kwargs = fast.convert({})
    assert kwargs == {"a": 1, "b": None, "c": "x"}
    assert type(kwargs["a"]) is int  # like pydantic: defaults are not validated


@pytest.mark.parametrize(
    ("annotation", "value", "fast_outcome"),
    [
        # Strings pydantic's Rust parsers read differently from Python's int()/float():
        (int, "\x1c5", ("ok", 5)),  # pydantic: int_parsing (U+001C is whitespace to Python only)
        (float, "\x1c5", ("ok", 5.0)),  # pydantic: float_parsing
        (float, "-_1", ("error", "unable to parse string as a number")),  # pydantic: -1.0
        (float, "5._0", ("error", "unable to parse string as a number")),  # pydantic: 5.0
        (int, "0" * 5000 + "1", ("error", "unable to parse string as an integer")),  # pydantic: 1
        (int, "1" * 4301, ("error", "unable to parse string as an integer")),  # pydantic: int_parsing_size
    ],
)
def test_known_differences_from_pydantic(annotation: Any, value: Any, fast_outcome: tuple[str, Any]) -> None:
    """Inputs no JSON Schema validator lets through (the host validates first); documented here."""
    fast = analyze(make([("v", annotation, EMPTY)]), "t")
    kind, expected = fast_outcome
    if kind == "ok":
        result = fast.convert({"v": value})["v"]
        assert (result, type(result)) == (expected, type(expected))
    else:
        with pytest.raises(ArgumentError, match=expected):
            fast.convert({"v": value})


def test_float_from_huge_int_and_nan_passthrough() -> None:
    fast = analyze(make([("v", float, EMPTY)]), "t")
    assert math.isnan(fast.convert({"v": float("nan")})["v"])
    with pytest.raises(ArgumentError, match="v: Input should be a valid number"):
        fast.convert({"v": 10**400})
