"""Load-time help: warnings, docstring parameter sections, unknown arguments, output checks,
ToolError codes in _meta."""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import Field

from protomcp_sdk.authoring.docstrings import parse
from protomcp_sdk.authoring.tools import ToolSpec
from protomcp_sdk.testing import Client
from tests.support.hosts import mcp_session

GOOGLE = """Forecast the weather.

    Uses the public forecast service.

    Args:
        city: The city, e.g. "Paris".
        days (int): How many days
            ahead to look.

    Returns:
        The forecast text.
    """
NUMPY = """Forecast the weather.

    Uses the public forecast service.

    Parameters
    ----------
    city : str
        The city, e.g. "Paris".
    days : int, optional
        How many days
        ahead to look.

    Returns
    -------
    str
        The forecast text.
    """
SPHINX = """Forecast the weather.

    Uses the public forecast service.

    :param city: The city, e.g. "Paris".
    :param int days: How many days
        ahead to look.
    :returns: The forecast text.
    :rtype: str
    """


@pytest.mark.parametrize("doc", [GOOGLE, NUMPY, SPHINX], ids=["google", "numpy", "sphinx"])
def test_docstring_sections_become_parameter_descriptions(doc: str) -> None:
    description, params = parse(inspect.cleandoc(doc))
    assert description == "Forecast the weather.\n\nUses the public forecast service."
    assert params == {"city": 'The city, e.g. "Paris".', "days": "How many days ahead to look."}

    def forecast(city: str, days: int = 1) -> str:
        return ""

    forecast.__doc__ = doc
    spec = ToolSpec.from_function(forecast)
    assert spec.description == "Forecast the weather.\n\nUses the public forecast service."
    assert spec.input_schema["properties"]["days"]["description"] == "How many days ahead to look."


def test_field_descriptions_win_over_the_docstring() -> None:
    def f(city: Annotated[str, Field(description="From Field")]) -> str:
        """Do it.

        Args:
            city: From the docstring.
        """
        return city

    assert ToolSpec.from_function(f).input_schema["properties"]["city"]["description"] == "From Field"


def test_plain_docstring_is_kept_whole() -> None:
    def f() -> str:
        """First line.

        A second paragraph, with words: and colons.
        """
        return ""

    assert (
        ToolSpec.from_function(f).description == "First line.\n\nA second paragraph, with words: and colons."
    )


def test_likely_mistakes_are_warned_about() -> None:
    def f(ctx, x, y: int) -> bytes:  # type: ignore[no-untyped-def]
        return b""

    warnings = ToolSpec.from_function(f).warnings
    assert len(warnings) == 3
    assert "'ctx' is not annotated Context" in warnings[0]
    assert "'x' has no type annotation" in warnings[1]
    assert "returns bytes" in warnings[2] and "Image(" in warnings[2]


TOOLS = """
from dataclasses import dataclass
from protomcp_sdk import ToolError, tool

@dataclass
class Named:
    name: str
    size: int

@tool
def add(a: int, b: int) -> int:
    return a + b

@tool
def named(good: bool) -> Named:
    return Named("a", 1) if good else {"name": "a", "size": "big"}

@tool
def refuse() -> str:
    raise ToolError("not now", code="busy", retryable=True)

@tool
def loose(context, value):
    return "ok"
"""


def write(tmp_path: Path, name: str, source: str) -> Path:
    file = tmp_path / name
    file.write_text(textwrap.dedent(source))
    return file


async def test_through_the_official_client(tmp_path: Path) -> None:
    file = write(tmp_path, "tools.py", TOOLS)
    async with mcp_session("run", str(file)) as session:
        unknown = await session.call_tool("add", {"a": 1, "b": 2, "c": 3})
        assert unknown.is_error and "'c' was unexpected" in unknown.content[0].text
        ok = await session.call_tool("named", {"good": True})
        assert not ok.is_error and ok.structured_content == {"name": "a", "size": 1}
        # The official client raises on a structuredContent that does not match the outputSchema;
        # protomcp sends an error result naming the field instead.
        bad = await session.call_tool("named", {"good": False})
        assert bad.is_error and "size: 'big' is not of type 'integer'" in bad.content[0].text
        refused = await session.call_tool("refuse", {})
        assert refused.is_error and refused.meta == {"protomcp/error": {"code": "busy", "retryable": True}}


async def test_warnings_reach_stderr_and_logs(tmp_path: Path) -> None:
    file = write(tmp_path, "tools.py", TOOLS)
    async with Client(file) as c:
        await c.list_tools()
    warnings = [line for line in c.stderr if "warning:" in line]
    assert any("'context' is not annotated Context" in line for line in warnings)
    assert any("'value' has no type annotation" in line for line in warnings)
    empty = write(tmp_path, "empty.py", "VALUE = 1\n")
    async with Client(empty) as c:
        assert await c.list_tools() == []
    assert any("empty.py defines no tools" in line for line in c.stderr)


def test_pydantic_frames_are_trimmed_from_schema_errors(tmp_path: Path) -> None:
    import subprocess

    from tests.support.hosts import HOST

    file = write(
        tmp_path,
        "bad.py",
        "from protomcp_sdk import tool\n\nclass Thing:\n    pass\n\n"
        "@tool\ndef f(t: Thing) -> str:\n    return ''\n",
    )
    done = subprocess.run(
        [*HOST, "list", str(file)], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 1
    assert "parameter 't' has type Thing, which has no JSON Schema" in done.stderr
    assert "site-packages" not in done.stderr  # no frames of pydantic (or of anything installed)
    assert "errors.pydantic.dev" not in done.stderr
