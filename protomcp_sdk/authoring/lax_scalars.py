"""JSON scalars converted as pydantic's lax mode converts them (its error types and messages
too), for signatures converted without pydantic."""

from __future__ import annotations

import math
from collections.abc import Callable

from protomcp_sdk.wire.jsontypes import JSON

Coerce = Callable[[JSON], object]  # one JSON argument -> the value the function gets


class Invalid(Exception):
    def __init__(self, type: str, msg: str) -> None:
        self.type = type
        self.msg = msg


_I64 = 2.0**63
_INT_TYPE = ("int_type", "Input should be a valid integer")
_INT_PARSING = ("int_parsing", "Input should be a valid integer, unable to parse string as an integer")
_INT_FRACTION = ("int_from_float", "Input should be a valid integer, got a number with a fractional part")
_INT_SIZE = ("int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size")
_FINITE = ("finite_number", "Input should be a finite number")
_FLOAT_TYPE = ("float_type", "Input should be a valid number")
_FLOAT_PARSING = ("float_parsing", "Input should be a valid number, unable to parse string as a number")
_BOOL_TYPE = ("bool_type", "Input should be a valid boolean")
_BOOL_PARSING = ("bool_parsing", "Input should be a valid boolean, unable to interpret input")
_STR_TYPE = ("string_type", "Input should be a valid string")
_BOOL_WORDS = dict.fromkeys(("0", "off", "f", "false", "n", "no"), False) | dict.fromkeys(
    ("1", "on", "t", "true", "y", "yes"), True
)


def _to_int(value: JSON) -> int:
    kind = type(value)
    if kind is int or kind is bool:
        return int(value)
    if kind is float:
        if not math.isfinite(value):
            raise Invalid(*_FINITE)
        if not value.is_integer():
            raise Invalid(*_INT_FRACTION)
        if not -_I64 < value < _I64:
            raise Invalid(*_INT_SIZE)
        return int(value)
    if kind is str:
        text = value.strip()
        whole, dot, decimals = text.partition(".")
        if dot and decimals and not decimals.strip("0"):  # "5.00" is 5
            text = whole
        if text.isascii():
            try:
                return int(text)
            except ValueError:
                pass
        raise Invalid(*_INT_PARSING)
    raise Invalid(*_INT_TYPE)


def _to_float(value: JSON) -> float:
    if type(value) is float:
        return value
    kind = type(value)
    if kind is int or kind is bool:
        try:
            return float(value)
        except OverflowError:
            raise Invalid(*_FLOAT_TYPE) from None
    if kind is str:
        text = value.strip()
        if text.isascii():
            try:
                return float(text)
            except ValueError:
                pass
        raise Invalid(*_FLOAT_PARSING)
    raise Invalid(*_FLOAT_TYPE)


def _to_bool(value: JSON) -> bool:
    if type(value) is bool:
        return value
    kind = type(value)
    if kind is str:
        word = _BOOL_WORDS.get(value.lower())
        if word is None:
            raise Invalid(*_BOOL_PARSING)
        return word
    if kind is int or kind is float:
        if value == 0 or value == 1:
            return bool(value == 1)
        # pydantic reads a number as a 64-bit integer first, and words its error by whether it could
        whole = -_I64 <= value < _I64 if kind is int else value.is_integer() and -_I64 < value < _I64
        raise Invalid(*(_BOOL_PARSING if whole else _BOOL_TYPE))
    raise Invalid(*_BOOL_TYPE)


def _to_str(value: JSON) -> str:
    if type(value) is str:
        return value
    raise Invalid(*_STR_TYPE)


def _as_is(value: JSON) -> JSON:
    return value


def or_none(coerce: Coerce) -> Coerce:
    def nullable(value: JSON) -> object:
        return None if value is None else coerce(value)

    return nullable


COERCE: dict[type | None, Coerce] = {
    int: _to_int,
    float: _to_float,
    bool: _to_bool,
    str: _to_str,
    None: _as_is,
}
