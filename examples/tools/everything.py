"""The server side of the official MCP conformance suite: the tools, resources and prompts its
server scenarios call by name (see docs/conformance.md). Also the most complete tour of the SDK:
content blocks, logging, progress, sampling, elicitation, resources, templates, prompts and
completions.

Serve it:  protomcp run examples/tools/everything.py --transport http
Test it:   see docs/conformance.md
"""

import asyncio
import base64
import struct
from typing import Annotated, Literal

import orjson
from pydantic import BaseModel, Field

from protomcp_sdk import (
    Audio,
    Context,
    EmbeddedResource,
    Image,
    Message,
    Text,
    ToolError,
    ToolResult,
    completion,
    prompt,
    resource,
    tool,
)

# A 1x1 red pixel.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def _silent_wav(samples: int = 8) -> bytes:
    """A valid, very short 8 kHz mono 16-bit WAV file of silence."""
    data = b"\x00\x00" * samples
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    return (
        b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
        + b"fmt " + struct.pack("<I", len(fmt)) + fmt
        + b"data" + struct.pack("<I", len(data)) + data
    )  # fmt: skip


# -- tools ------------------------------------------------------------------------------


@tool
def test_simple_text() -> str:
    """Return a simple text response."""
    return "This is a simple text response for testing."


@tool
def test_image_content() -> Image:
    """Return a small PNG image."""
    return Image(PNG, "image/png")


@tool
def test_audio_content() -> Audio:
    """Return a short WAV clip."""
    return Audio(_silent_wav(), "audio/wav")


@tool
def test_embedded_resource() -> EmbeddedResource:
    """Return an embedded text resource."""
    return EmbeddedResource(
        "test://embedded-resource", text="This is an embedded resource content.", mime_type="text/plain"
    )


@tool
def test_multiple_content_types() -> ToolResult:
    """Return text, an image and an embedded resource together."""
    return ToolResult(
        [
            Text("Multiple content types test:"),
            Image(PNG, "image/png"),
            EmbeddedResource(
                "test://mixed-content-resource",
                text='{"test":"data","value":123}',
                mime_type="application/json",
            ),
        ]
    )


@tool
async def test_tool_with_logging(ctx: Context) -> str:
    """Send three log messages while running."""
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Logging test completed"


@tool
async def test_tool_with_progress(ctx: Context) -> str:
    """Report progress 0, 50 and 100 out of 100."""
    await ctx.report_progress(0, 100)
    await asyncio.sleep(0.05)
    await ctx.report_progress(50, 100)
    await asyncio.sleep(0.05)
    await ctx.report_progress(100, 100)
    return "Progress test completed"


@tool
def test_error_handling() -> str:
    """Always fail."""
    raise ToolError("This tool intentionally returns an error for testing")


# -- tools that ask the client ---------------------------------------------------------------


@tool
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Ask the client's model to answer a prompt."""
    result = await ctx.sample(prompt, max_tokens=100)
    return f"LLM response: {result.text}"


@tool
async def test_elicitation(message: str, ctx: Context) -> str:
    """Ask the user for a username and an email address."""
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    answer = await ctx.elicit(message, schema=schema)
    return f"User response: action={answer.action}, content={_json(answer.content)}"


class Defaults(BaseModel):
    """A form whose every field has a default (SEP-1034)."""

    name: str = "John Doe"
    age: int = 30
    score: float = 95.5
    status: Literal["active", "inactive", "pending"] = "active"
    verified: bool = True


@tool
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Ask for a form whose fields have default values."""
    answer = await ctx.elicit("Please review your profile", schema=Defaults)
    return f"Elicitation completed: action={answer.action}, content={_json(answer.content)}"


ENUM_FORM = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


@tool
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Ask for a form with every kind of enum (SEP-1330). A JSON Schema dict is sent as is."""
    answer = await ctx.elicit("Please pick your options", schema=ENUM_FORM)
    return f"Elicitation completed: action={answer.action}, content={_json(answer.content)}"


JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@tool(input_schema=JSON_SCHEMA_2020_12)
def json_schema_2020_12_tool(name=None, address=None, contactMethod=None, phone=None, email=None) -> str:
    """A tool whose input schema uses JSON Schema 2020-12 keywords, kept as written."""
    return f"Contact for {name}: {phone or email}"


def _json(value: object) -> str:
    return orjson.dumps(value).decode()


# -- resources ---------------------------------------------------------------------------------


@resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a PNG image): bytes travel base64-encoded."""
    return PNG


@resource("test://template/{id}/data", name="template-data", mime_type="application/json")
def template_data(id: str) -> str:
    """Data for any id: {id} in the URI is the function's parameter."""
    return _json({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients can subscribe to (a tool calls ctx.resource_updated(uri) when it changes)."""
    return "Watched resource content"


@completion(resource="test://template/{id}/data", argument="id")
def complete_id(value: str, context: dict[str, str]) -> list[str]:
    return [i for i in ("1", "2", "3", "123") if i.startswith(value)]


# -- prompts ------------------------------------------------------------------------------------


@prompt
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@prompt
def test_prompt_with_arguments(
    arg1: Annotated[str, Field(description="First test argument")],
    arg2: Annotated[str, Field(description="Second test argument")],
) -> str:
    """A prompt with two required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@completion(prompt="test_prompt_with_arguments", argument="arg1")
def complete_arg1(value: str, context: dict[str, str]) -> list[str]:
    return [word for word in ("paris", "park", "party", "test", "testing") if word.startswith(value)]


@prompt
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, Field(description="URI of the resource to embed")],
) -> list[Message]:
    """A prompt that embeds a resource."""
    embedded = EmbeddedResource(
        resourceUri, text="Embedded resource content for testing.", mime_type="text/plain"
    )
    return [Message("user", embedded), Message("user", "Please process the embedded resource above.")]


@prompt
def test_prompt_with_image() -> list[Message]:
    """A prompt with an image."""
    return [Message("user", Image(PNG, "image/png")), Message("user", "Please analyze the image above.")]
