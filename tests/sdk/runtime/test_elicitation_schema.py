"""The form schemas ctx.elicit sends, built from pydantic models and dataclasses (no processes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from protomcp_sdk.runtime.client import requested_schema

pytestmark = pytest.mark.fast  # starts no process


class Size(Enum):
    SMALL = "s"
    LARGE = "l"


class Order(BaseModel):
    name: Annotated[str, Field(description="Who orders")]
    count: int = 1
    price: float | None = None
    size: Size = Size.SMALL
    toppings: list[Literal["cheese", "ham"]] = []
    express: bool = False


def test_model_becomes_a_flat_form() -> None:
    schema = requested_schema(Order)
    assert schema["type"] == "object" and schema["required"] == ["name"]
    props = schema["properties"]
    assert props["name"] == {"description": "Who orders", "title": "Name", "type": "string"}
    assert props["count"]["default"] == 1 and props["count"]["type"] == "integer"
    assert props["price"]["type"] == "number" and "default" not in props["price"]  # None dropped
    assert props["size"]["enum"] == ["s", "l"] and props["size"]["type"] == "string"
    assert props["size"]["default"] == "s"
    assert props["toppings"]["type"] == "array"
    assert props["toppings"]["items"] == {"enum": ["cheese", "ham"], "type": "string"}
    assert props["express"] == {"default": False, "title": "Express", "type": "boolean"}
    assert "$defs" not in schema


@dataclass
class Login:
    user: str
    remember: bool = True
    tags: list[str] = field(default_factory=list)


def test_dataclass_and_unsupported_fields() -> None:
    with pytest.raises(TypeError, match="'tags' of Login is not a plain"):
        requested_schema(Login)  # a list of free strings is not allowed in a form

    @dataclass
    class Simple:
        user: str
        remember: bool = True

    assert requested_schema(Simple)["properties"]["remember"]["default"] is True


def test_a_dict_schema_is_sent_as_is() -> None:
    schema = {
        "type": "object",
        "properties": {"x": {"type": "string", "oneOf": [{"const": "a", "title": "A"}]}},
    }
    assert requested_schema(schema) is schema


def test_titled_enums_from_field_extras() -> None:
    titled = [{"const": "v1", "title": "One"}, {"const": "v2", "title": "Two"}]

    class Pick(BaseModel):
        single: Annotated[str, Field(json_schema_extra={"oneOf": titled})] = "v1"
        multi: Annotated[list[str], Field(json_schema_extra={"items": {"anyOf": titled}})] = []

    props = requested_schema(Pick)["properties"]
    assert props["single"]["oneOf"] == titled and props["single"]["default"] == "v1"
    assert props["multi"]["items"] == {"anyOf": titled} and props["multi"]["type"] == "array"
