"""A tool's arguments as both ways of converting them (without pydantic and with it) share
them: the Converter they build, ArgumentError, and how bad arguments are worded for the model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from protomcp_sdk.wire.jsontypes import JSONObject

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

Converter = Callable[[JSONObject], dict[str, object]]
"""JSON arguments -> the function's keyword arguments (converted: any Python values)."""

_MAX_SHOWN_INPUT = 60  # characters of a rejected value quoted back in an error


class ArgumentError(ValueError):
    """Arguments that do not fit the tool's parameters; the message is meant for the model."""


def describe(errors: Sequence[ErrorDetails]) -> str:
    """Every bad field and what is wrong with it, e.g. ``b: Input should be a valid integer (got 'x')``.

    ``errors`` are pydantic's error dicts (``loc``, ``type``, ``msg``, ``input``); the fast
    path produces the same shape.
    """
    problems = []
    for error in errors:
        where = _location(error["loc"])
        if error["type"] == "missing":
            problems.append(f"{where}: required argument is missing")
            continue
        if error["type"] == "extra_forbidden":
            problems.append(f"{where}: unknown argument (not a parameter of this tool)")
            continue
        problems.append(f"{where}: {error['msg']} (got {_shown(error.get('input'))})")
    return "; ".join(problems)


def argument_error(tool_name: str, errors: Sequence[ErrorDetails]) -> ArgumentError:
    return ArgumentError(f"Invalid arguments for tool '{tool_name}': {describe(errors)}")


def _location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "arguments"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN_INPUT else text[: _MAX_SHOWN_INPUT - 3] + "..."
