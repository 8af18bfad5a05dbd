"""Every parameter shape the SDK turns into JSON Schema, for the protobuf converter's round trips
(tests/proto_mcp/test_protoschema.py) and the proto-mcp tests."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from protomcp_sdk import Context, ToolError, prompt, resource, tool


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int = 0


class Box(BaseModel):
    corner: Point
    points: list[Point] = []
    label: str | None = None
    colors: list[Color] = []


class Movie(TypedDict):
    title: str
    year: int


@dataclass
class Pet:
    name: str
    age: float = 1.5


class Tree(BaseModel):
    value: int
    children: list[Tree] = []


@tool
def scalars(s: str, i: int, f: float, b: bool, opt: int | None = None, d: int = 3) -> str:
    """Plain scalars, an optional one and a default."""
    return f"{s}|{i}|{f}|{b}|{opt}|{d}"


@tool
def collections(  # the schema shows the defaults, hence the literal [] and {}
    tags: list[str] = [],  # noqa: B006
    grid: list[list[int]] = [],  # noqa: B006
    m: dict[str, int] = {},  # noqa: B006
    raw: dict = {},  # noqa: B006
    anything: Any = None,
) -> dict:
    """Arrays, nested arrays, maps and free-form values."""
    return {"tags": tags, "grid": grid, "m": m, "raw": raw, "anything": anything}


@tool
def constrained(
    lit: Literal["a", "b-c"] = "a",
    color: Color = Color.RED,
    n: Annotated[int, Field(ge=1, le=100, description="How many")] = 5,
    name: Annotated[str, Field(min_length=1, max_length=10, pattern="^[a-z]+$")] = "x",
    mixed: int | str = 1,
) -> str:
    """Enums, literals, numeric and string constraints, a union."""
    return f"{lit}|{color.value}|{n}|{name}|{mixed}"


@tool
def models(box: Box, movie: Movie | None = None, pet: Pet | None = None, tree: Tree | None = None) -> Point:
    """Models, TypedDicts, dataclasses and a recursive model; a structured result."""
    return Point(x=box.corner.x + len(box.points), y=tree.value if tree else 0)


@tool
async def slow_sum(values: list[float], ctx: Context) -> float:
    """Add the values one at a time, reporting progress."""
    total = 0.0
    for i, value in enumerate(values):
        total += value
        await ctx.report_progress(i + 1, len(values), f"added {value}")
    return total


@tool
def refuse(reason: str) -> str:
    """Always fails with the reason."""
    raise ToolError(f"refused: {reason}")


@resource("notes://{id}", mime_type="text/markdown")
def note(id: str) -> str:
    """A note by id."""
    return f"# note {id}"


@resource("blobs://one")
def blob() -> bytes:
    """Some bytes."""
    return bytes(range(8))


@prompt(description="Review a file")
def review(path: str) -> str:
    return f"Please review {path}."


@tool
async def whoami(ctx: Context) -> str:
    """The caller's verified subject (HTTP with OAuth), or "nobody"."""
    return (ctx.auth or {}).get("sub", "nobody")
