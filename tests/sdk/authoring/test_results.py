"""Return values and exceptions mapped to CallToolResponse."""

import datetime
import decimal
import enum
import uuid
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel
from typing_extensions import TypedDict

from protomcp_sdk import Audio, EmbeddedResource, Image, ResourceLink, Text, ToolError, ToolResult
from protomcp_sdk.authoring.arguments import ArgumentError
from protomcp_sdk.authoring.encoding import error_response, to_response
from protomcp_sdk.authoring.tools import ToolSpec
from protomcp_sdk.wire import envelope_pb2 as pb

pytestmark = pytest.mark.fast  # starts no process


class Color(enum.Enum):
    RED = "red"


@dataclass
class Point:
    x: int
    y: int


class Pet(BaseModel):
    name: str
    born: datetime.date


@dataclass
class Owner:
    pet: Pet


class Row(TypedDict):
    id: int


def spec_returning(annotation: Any = None, name: str = "t") -> ToolSpec:
    """A spec for a tool whose return annotation is ``annotation`` (None = no annotation)."""

    def fn() -> None: ...

    fn.__annotations__ = {} if annotation is None else {"return": annotation}
    return ToolSpec.from_function(fn, name=name)


def content(response: pb.CallToolResponse) -> list[dict[str, Any]]:
    return orjson.loads(response.result_json)


def structured(response: pb.CallToolResponse) -> Any:
    return orjson.loads(response.structured_content_json) if response.structured_content_json else None


# ---- content blocks ---------------------------------------------------------


def test_text_block() -> None:
    assert Text("hi").to_mcp() == {"type": "text", "text": "hi"}


def test_image_block() -> None:
    assert Image(b"\x89PNG", "image/png").to_mcp() == {
        "type": "image",
        "data": "iVBORw==",
        "mimeType": "image/png",
    }


def test_audio_block() -> None:
    assert Audio(b"RIFF", "audio/wav").to_mcp() == {
        "type": "audio",
        "data": "UklGRg==",
        "mimeType": "audio/wav",
    }


def test_resource_link_minimal_and_full() -> None:
    assert ResourceLink("file:///a.txt", "a.txt").to_mcp() == {
        "type": "resource_link",
        "uri": "file:///a.txt",
        "name": "a.txt",
    }
    full = ResourceLink(
        "file:///a.txt", "a.txt", title="A", description="The A file", mime_type="text/plain", size=0
    )
    assert full.to_mcp() == {
        "type": "resource_link",
        "uri": "file:///a.txt",
        "name": "a.txt",
        "title": "A",
        "description": "The A file",
        "mimeType": "text/plain",
        "size": 0,
    }


def test_embedded_text_resource() -> None:
    assert EmbeddedResource("mem://n/1", text="hello").to_mcp() == {
        "type": "resource",
        "resource": {"uri": "mem://n/1", "text": "hello"},
    }
    assert EmbeddedResource("mem://n/1", text="", mime_type="text/markdown").to_mcp() == {
        "type": "resource",
        "resource": {"uri": "mem://n/1", "mimeType": "text/markdown", "text": ""},
    }


def test_embedded_blob_resource() -> None:
    assert EmbeddedResource("mem://b", blob=b"\x00\xff", mime_type="application/octet-stream").to_mcp() == {
        "type": "resource",
        "resource": {"uri": "mem://b", "mimeType": "application/octet-stream", "blob": "AP8="},
    }


def test_embedded_resource_needs_exactly_one_payload() -> None:
    with pytest.raises(ValueError, match="exactly one of text= or blob="):
        EmbeddedResource("mem://x")
    with pytest.raises(ValueError, match="exactly one of text= or blob="):
        EmbeddedResource("mem://x", text="a", blob=b"a")


def test_blocks_are_frozen() -> None:
    block = Text("a")
    with pytest.raises(AttributeError):
        block.text = "b"  # type: ignore[misc]


def test_from_file_guesses_mime_type(tmp_path: Path) -> None:
    png = tmp_path / "dot.png"
    png.write_bytes(b"\x89PNG")
    assert Image.from_file(png) == Image(b"\x89PNG", "image/png")
    assert Image.from_file(str(png), mime_type="image/x-custom") == Image(b"\x89PNG", "image/x-custom")
    wav = tmp_path / "beep.wav"
    wav.write_bytes(b"RIFF")
    assert Audio.from_file(wav).mime_type in ("audio/x-wav", "audio/wav")
    unknown = tmp_path / "blob.unknownext"
    unknown.write_bytes(b"")
    with pytest.raises(
        ValueError, match=r"cannot guess the MIME type of .*blob\.unknownext.*; pass mime_type="
    ):
        Image.from_file(unknown)


# ---- to_response: plain values ----------------------------------------------


def test_str_is_one_text_block() -> None:
    response = to_response("hello", spec_returning(str))
    assert content(response) == [{"type": "text", "text": "hello"}]
    assert response.structured_content_json == ""
    assert response.is_error is False
    assert not response.HasField("error")


def test_none_is_empty_content() -> None:
    response = to_response(None, spec_returning(None))
    assert response.result_json == "[]"
    assert response.structured_content_json == ""


def test_none_with_wrapped_schema_gives_null_result() -> None:
    response = to_response(None, spec_returning(int | None))
    assert response.result_json == "[]"
    assert structured(response) == {"result": None}


@pytest.mark.parametrize(
    ("value", "text"),
    [(5, "5"), (1.5, "1.5"), (True, "true"), ([1, "a", None], '[1,"a",null]'), ((1, 2), "[1,2]")],
)
def test_scalars_and_lists_are_json_text_plus_wrapped_structured(value: Any, text: str) -> None:
    response = to_response(value, spec_returning(type(value)))
    assert content(response) == [{"type": "text", "text": text}]
    assert structured(response) == {"result": orjson.loads(text)}
    assert response.structured_content_json == '{"result":' + text + "}"


def test_no_structured_content_without_output_schema() -> None:
    response = to_response(5, spec_returning(None))
    assert content(response) == [{"type": "text", "text": "5"}]
    assert response.structured_content_json == ""


def test_dict_is_json_not_repr() -> None:
    value = {"a": None, "b": True, "c": [1.5], 3: "int key"}
    response = to_response(value, spec_returning(dict))
    expected = '{"a":null,"b":true,"c":[1.5],"3":"int key"}'
    assert content(response) == [{"type": "text", "text": expected}]
    assert response.structured_content_json == expected


def test_dict_without_annotation_is_text_only() -> None:
    response = to_response({"a": 1}, spec_returning(None))
    assert content(response) == [{"type": "text", "text": '{"a":1}'}]
    assert response.structured_content_json == ""


def test_dataclass_return() -> None:
    response = to_response(Point(1, 2), spec_returning(Point))
    assert content(response) == [{"type": "text", "text": '{"x":1,"y":2}'}]
    assert structured(response) == {"x": 1, "y": 2}


def test_basemodel_return() -> None:
    response = to_response(Pet(name="Rex", born=datetime.date(2020, 1, 2)), spec_returning(Pet))
    assert content(response) == [{"type": "text", "text": '{"name":"Rex","born":"2020-01-02"}'}]
    assert structured(response) == {"name": "Rex", "born": "2020-01-02"}


def test_model_nested_in_dataclass() -> None:
    response = to_response(Owner(Pet(name="Rex", born=datetime.date(2020, 1, 2))), spec_returning(Owner))
    assert structured(response) == {"pet": {"name": "Rex", "born": "2020-01-02"}}


def test_typeddict_return() -> None:
    response = to_response(Row(id=7), spec_returning(Row))
    assert response.structured_content_json == '{"id":7}'


def test_list_of_models_is_wrapped() -> None:
    response = to_response([Point(1, 2)], spec_returning(list[Point]))
    assert content(response) == [{"type": "text", "text": '[{"x":1,"y":2}]'}]
    assert structured(response) == {"result": [{"x": 1, "y": 2}]}


def test_object_schema_but_non_object_value_is_an_error_naming_it() -> None:
    response = to_response([1], spec_returning(dict))
    assert response.is_error and response.structured_content_json == ""
    assert "declares an output schema but returned list" in content(response)[0]["text"]
    assert response.error.error_code == "invalid_result"


@dataclass
class Named:
    name: str
    size: int


def test_value_that_does_not_match_the_output_schema_is_an_error_naming_the_field() -> None:
    spec = spec_returning(Named)
    assert structured(to_response(Named("a", 1), spec)) == {"name": "a", "size": 1}
    response = to_response({"name": "a", "size": "big"}, spec)  # a dict that is not a Named
    assert response.is_error and response.structured_content_json == ""
    text = content(response)[0]["text"]
    assert "does not match its output schema" in text and "size: 'big' is not of type 'integer'" in text
    missing = content(to_response({"name": "a"}, spec))[0]["text"]
    assert "'size' is a required property" in missing


@pytest.mark.parametrize(("annotation", "value"), [(int, "7"), (int | None, 1.5), (bool, 1)])
def test_plain_value_of_the_wrong_type_is_an_error(annotation: Any, value: Any) -> None:
    response = to_response(value, spec_returning(annotation))
    assert response.is_error and "result: " in content(response)[0]["text"]


@pytest.mark.parametrize(("annotation", "value"), [(int, 7), (int, 7.0), (float, 2), (int | None, None)])
def test_plain_value_of_the_right_type_passes(annotation: Any, value: Any) -> None:
    assert not to_response(value, spec_returning(annotation)).is_error


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC), '"2024-01-02T03:04:05+00:00"'),
        (datetime.timedelta(hours=1, seconds=5), '"PT1H5S"'),
        (Color.RED, '"red"'),
        ({3}, "[3]"),
        (decimal.Decimal("1.10"), '"1.10"'),
        (PurePosixPath("/tmp/x"), '"/tmp/x"'),
        (Path("/tmp/y"), '"/tmp/y"'),
        (b"raw", '"raw"'),
        (uuid.UUID(int=1), '"00000000-0000-0000-0000-000000000001"'),
    ],
)
def test_other_json_values(value: Any, text: str) -> None:
    response = to_response(value, spec_returning(None))
    assert content(response) == [{"type": "text", "text": text}]


def test_unserialisable_value_is_an_error_response() -> None:
    response = to_response(object(), spec_returning(None, name="bad"))
    assert response.is_error is True
    [block] = content(response)
    assert block["text"].startswith("Error in tool 'bad': its return value cannot be converted to JSON (")
    assert response.error.error_code == "invalid_result"


@pytest.mark.parametrize(
    ("annotation", "value"),
    [
        (int, 3),
        (int | None, None),
        (Point, Point(1, 2)),
        (list[Point], [Point(1, 2)]),
        (Pet, Pet(name="Rex", born=datetime.date(2020, 1, 2))),
        (Owner, Owner(Pet(name="Rex", born=datetime.date(2020, 1, 2)))),
        (dict[str, Color], {"a": Color.RED}),
        (tuple[datetime.datetime, float], (datetime.datetime(2024, 1, 1), 0.5)),
    ],
)
def test_structured_content_matches_output_schema(annotation: Any, value: Any) -> None:
    spec = spec_returning(annotation)
    assert spec.output_schema is not None
    Draft202012Validator(spec.output_schema).validate(structured(to_response(value, spec)))


# ---- to_response: content blocks and ToolResult -----------------------------


def test_single_block() -> None:
    response = to_response(Image(b"\x01", "image/gif"), spec_returning(Image))
    assert content(response) == [{"type": "image", "data": "AQ==", "mimeType": "image/gif"}]
    assert response.structured_content_json == ""


def test_list_of_blocks() -> None:
    response = to_response([Text("a"), ResourceLink("mem://x", "x")], spec_returning(None))
    assert content(response) == [
        {"type": "text", "text": "a"},
        {"type": "resource_link", "uri": "mem://x", "name": "x"},
    ]


def test_tool_result_full() -> None:
    result = ToolResult(
        content=["plain", Text("block"), EmbeddedResource("mem://r", text="r")],
        structured={"n": 1},
        is_error=True,
        enable_tools=["next"],
        disable_tools=["prev", "other"],
    )
    response = to_response(result, spec_returning(ToolResult))
    assert content(response) == [
        {"type": "text", "text": "plain"},
        {"type": "text", "text": "block"},
        {"type": "resource", "resource": {"uri": "mem://r", "text": "r"}},
    ]
    assert structured(response) == {"n": 1}
    assert response.is_error is True
    assert list(response.enable_tools) == ["next"]
    assert list(response.disable_tools) == ["prev", "other"]


def test_tool_result_defaults() -> None:
    response = to_response(ToolResult(), spec_returning(None))
    assert response.result_json == "[]"
    assert response.structured_content_json == ""
    assert response.is_error is False
    assert list(response.enable_tools) == []


def test_tool_result_of_one_string_is_one_block_with_its_meta() -> None:
    """`ToolResult("sent", meta=...)` as DESIGN writes it: once one text block per character."""
    response = to_response(ToolResult("sent", meta={"claude/endTurn": True}), spec_returning(ToolResult))
    assert content(response) == [{"type": "text", "text": "sent"}]
    assert orjson.loads(response.meta_json) == {"claude/endTurn": True}
    assert to_response(ToolResult(Text("t")), spec_returning(ToolResult)).result_json == (
        '[{"type":"text","text":"t"}]'
    )
    with pytest.raises(TypeError, match=r"meta=\.\.\.\) must be a dict"):
        ToolResult("x", meta=["no"])  # type: ignore[arg-type]


def test_tool_result_structured_only_gets_a_text_copy() -> None:
    response = to_response(ToolResult(structured=Point(3, 4)), spec_returning(None))
    assert content(response) == [{"type": "text", "text": '{"x":3,"y":4}'}]
    assert response.structured_content_json == '{"x":3,"y":4}'


def test_tool_result_structured_must_be_an_object() -> None:
    response = to_response(ToolResult(structured=[1]), spec_returning(None, name="t"))
    assert response.is_error is True
    assert content(response) == [
        {
            "type": "text",
            "text": "Error in tool 't': ToolResult.structured must be a JSON object (a dict or model)",
        }
    ]


def test_tool_result_bad_content_item() -> None:
    response = to_response(ToolResult(content=[42]), spec_returning(None, name="t"))  # type: ignore[list-item]
    assert response.is_error is True
    assert content(response) == [
        {
            "type": "text",
            "text": "Error in tool 't': ToolResult.content holds a int; use str or content blocks",
        }
    ]


# ---- error_response ---------------------------------------------------------


def test_tool_error_with_suggestion_and_retryable() -> None:
    exc = ToolError(
        "Note 7 not found", code="not_found", suggestion="Call list_notes to see ids", retryable=True
    )
    response = error_response(exc, "get_note")
    assert response.is_error is True
    assert content(response) == [
        {
            "type": "text",
            "text": "Note 7 not found (retryable)\nSuggestion: Call list_notes to see ids",
        }
    ]
    assert response.error == pb.ToolError(
        error_code="not_found",
        message="Note 7 not found",
        suggestion="Call list_notes to see ids",
        retryable=True,
    )
    assert response.structured_content_json == ""


def test_plain_tool_error() -> None:
    exc = ToolError("Disk full")
    assert (exc.message, exc.code, exc.suggestion, exc.retryable) == ("Disk full", "", "", False)
    assert str(exc) == "Disk full"
    response = error_response(exc, "save")
    assert content(response) == [{"type": "text", "text": "Disk full"}]  # clients add "Error: " themselves
    assert response.error == pb.ToolError(error_code="tool_error", message="Disk full")


def test_argument_error() -> None:
    message = "Invalid arguments for tool 'add': b: Input should be a valid integer (got 'x')"
    response = error_response(ArgumentError(message), "add")
    assert response.is_error is True
    assert content(response) == [{"type": "text", "text": message}]
    assert response.error == pb.ToolError(error_code="invalid_arguments", message=message)


def test_plain_exception() -> None:
    response = error_response(ZeroDivisionError("division by zero"), "divide")
    assert response.is_error is True
    assert content(response) == [
        {"type": "text", "text": "Error in tool 'divide': ZeroDivisionError: division by zero"}
    ]
    assert response.error == pb.ToolError(error_code="ZeroDivisionError", message="division by zero")


def test_exception_without_message() -> None:
    response = error_response(RuntimeError(), "t")
    assert content(response) == [{"type": "text", "text": "Error in tool 't': RuntimeError"}]
    assert response.error.error_code == "RuntimeError"


def test_long_exception_message_is_cut() -> None:
    response = error_response(ValueError("z" * 5000), "t")
    [block] = content(response)
    assert block["text"] == "Error in tool 't': ValueError: " + "z" * 1000 + "..."


def test_a_results_meta_survives_middleware() -> None:
    """Middleware sees results as MCP JSON (as_seen): a ToolResult's meta stays with it."""
    from protomcp_sdk.runtime.middleware import as_seen

    seen = as_seen(ToolResult("sent", meta={"claude/endTurn": True}))
    assert seen.meta == {"claude/endTurn": True} and [getattr(b, "text", b) for b in seen.content] == ["sent"]
