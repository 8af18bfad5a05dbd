"""The host's quick argument check must agree with jsonschema whenever it says "valid"."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from protomcp_host.protocol.catalog import quick_check

pytestmark = pytest.mark.fast  # starts no process

_types = st.sampled_from(["string", "integer", "number", "boolean", "null"])
_prop = st.one_of(
    _types.map(lambda t: {"type": t}),
    st.lists(_types, min_size=1, max_size=3).map(
        lambda ts: {"anyOf": [{"type": t} for t in ts], "default": None}
    ),
)
_schemas = st.dictionaries(st.sampled_from("abcd"), _prop, max_size=4).flatmap(
    lambda props: st.fixed_dictionaries(
        {"type": st.just("object"), "properties": st.just(props)},
        optional={
            "required": st.lists(st.sampled_from(sorted(props) or ["a"]), unique=True),
            "additionalProperties": st.booleans(),
        },
    )
)
_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=400)
@given(schema=_schemas, arguments=st.dictionaries(st.sampled_from("abcde"), _values, max_size=5))
def test_quick_valid_implies_jsonschema_valid(schema: dict[str, Any], arguments: dict[str, Any]) -> None:
    quick = quick_check(schema)(arguments)
    full = Draft202012Validator(schema).is_valid(arguments)
    assert quick == full  # flat primitive schemas are fully decided by the quick check


def test_quick_check_declines_what_it_does_not_understand() -> None:
    nested = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}
    assert quick_check(nested)({"a": [1]}) is False
    bounded = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 3}}}
    assert quick_check(bounded)({"a": 5}) is False
    other_properties = {"type": "object", "properties": {}, "additionalProperties": {"type": "integer"}}
    assert quick_check(other_properties)({"x": 1}) is False
    assert quick_check(None)({}) is False


def test_quick_check_rejects_unknown_arguments_of_closed_schemas() -> None:
    closed = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}
    assert quick_check(closed)({}) and quick_check(closed)({"a": 1})
    assert quick_check(closed)({"a": 1, "b": 2}) is False


def test_quick_check_integer_rules_match_json_schema() -> None:
    check = quick_check({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    assert check({"n": 3}) and check({"n": 3.0})
    assert not check({"n": True}) and not check({"n": 3.5}) and not check({})
