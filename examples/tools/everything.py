"""The server side of the official MCP conformance suite: the tools, resources and prompts its
server scenarios call by name (see docs/conformance.md), for the 2025-11-25 and the 2026-07-28
requirements. Also the most complete tour of the SDK: content blocks, logging, progress,
sampling, elicitation, roots, tasks, tool-list control, resources, templates, prompts and
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
        b"RIFF"
        + struct.pack("<I", 36 + len(data))
        + b"WAVE"
        + b"fmt "
        + struct.pack("<I", len(fmt))
        + fmt
        + b"data"
        + struct.pack("<I", len(data))
        + data
    )


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


# -- the 2026-07-28 revision: asking the client through the input-required round trip ------------
# In the 2026-07-28 era ctx.sample / ctx.elicit / ctx.list_roots do not send requests to the
# client: the host answers the call with an InputRequiredResult whose inputRequests are keyed by
# name, and the client retries with the answers. The suite names those keys ("user_name",
# "capital_question", "client_roots", ...), so the tools below pass key=.


class UserName(BaseModel):
    name: str


class Confirmation(BaseModel):
    ok: bool


class FavoriteColor(BaseModel):
    color: str


class Confirm(BaseModel):
    confirm: bool


class UserContext(BaseModel):
    context: str


async def _user_name(ctx: Context, key: str = "user_name", message: str = "What is your name?") -> str:
    answer = await ctx.elicit(message, schema=UserName, key=key)
    return answer.data.name if answer.action == "accept" else f"({answer.action})"


@tool
async def test_missing_capability(ctx: Context) -> str:
    """Ask the client's model a question, so the client must declare sampling: one that did not
    gets a MissingRequiredClientCapability error (-32021) in the 2026-07-28 era."""
    result = await ctx.sample("Say hello.", max_tokens=20, key="hello")
    return f"LLM response: {result.text}"


@tool
async def test_streaming_elicitation(ctx: Context) -> str:
    """Ask the user for their name. In the 2026-07-28 era the question travels in the call's
    result, never as a request on the response stream."""
    return f"Hello, {await _user_name(ctx)}!"


@tool
async def test_logging_tool(ctx: Context) -> str:
    """Send three log messages; they reach the client only if its request set a log level."""
    await ctx.info("Logging tool started")
    await ctx.info("Logging tool working")
    await ctx.info("Logging tool finished")
    return "Logging tool completed"


@tool(hidden=True)
def test_toggled_tool() -> str:
    """Listed only while test_trigger_tool_change has shown it."""
    return "The toggled tool is active."


@tool
async def test_trigger_tool_change(ctx: Context) -> str:
    """Change the tool list: show test_toggled_tool if it is hidden, hide it if it is shown.
    Clients listening for tool-list changes are told."""
    if "test_toggled_tool" in await ctx.active_tools():
        await ctx.disable_tools(["test_toggled_tool"])
        return "test_toggled_tool is now hidden"
    await ctx.enable_tools(["test_toggled_tool"])
    return "test_toggled_tool is now shown"


@tool
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Ask the user for their name (input request "user_name"), then greet them."""
    return f"Hello, {await _user_name(ctx)}!"


@tool
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Ask the client's model for the capital of France (input request "capital_question")."""
    result = await ctx.sample("What is the capital of France?", max_tokens=100, key="capital_question")
    return f"LLM response: {result.text}"


@tool
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """List the client's roots (input request "client_roots")."""
    roots = await ctx.list_roots(key="client_roots")
    return "Client roots: " + ", ".join(f"{root.name or root.uri} ({root.uri})" for root in roots)


@tool
async def test_input_required_result_request_state(ctx: Context) -> str:
    """Ask the user to confirm (input request "confirm"); the answer comes back with the
    round trip's requestState, which the host verifies."""
    answer = await ctx.elicit("Please confirm", schema=Confirmation, key="confirm")
    confirmed = answer.action == "accept" and answer.data.ok
    return f"state-ok: confirmed={confirmed}"


@tool
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Ask for three things at once: the user's name ("user_name"), a greeting from the client's
    model ("greeting") and the client's roots ("client_roots")."""
    name, greeting, roots = await asyncio.gather(
        _user_name(ctx),
        ctx.sample("Generate a greeting", max_tokens=50, key="greeting"),
        ctx.list_roots(key="client_roots"),
    )
    return f"{greeting.text} {name}! Roots: {', '.join(root.uri for root in roots)}"


@tool
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Ask two questions one after the other: the name ("step1"), then a color ("step2")."""
    name = await _user_name(ctx, key="step1", message="Step 1: What is your name?")
    answer = await ctx.elicit("Step 2: What is your favorite color?", schema=FavoriteColor, key="step2")
    color = answer.data.color if answer.action == "accept" else f"({answer.action})"
    return f"{name} likes {color}."


@tool
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Ask the user for their name ("user_name"); a retry whose requestState was altered is
    refused with an error."""
    return f"Hello, {await _user_name(ctx)}!"


@tool
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Ask only for what the client declared: the model's answer ("capital_question") always,
    the user's name ("user_name") only if the client declared elicitation."""
    asks = [ctx.sample("What is the capital of France?", max_tokens=100, key="capital_question")]
    if "elicitation" in ctx.client_capabilities:
        asks.append(_user_name(ctx))
    answers = await asyncio.gather(*asks)
    return f"LLM response: {answers[0].text}" + (f"; name: {answers[1]}" if len(answers) > 1 else "")


@tool(
    input_schema={
        "type": "object",
        "properties": {
            "region": {
                "type": "string",
                "description": "Region to report on (also sent as the Mcp-Param-Region header)",
                "x-mcp-header": "Region",
            }
        },
        "required": ["region"],
    }
)
def test_custom_header(region: str) -> str:
    """Echo a region; over Streamable HTTP the client mirrors it into the Mcp-Param-Region
    header (x-mcp-header), which the host checks against the body."""
    return f"Region: {region}"


# -- tools for the tasks extension (io.modelcontextprotocol/tasks) ---------------------------------


@tool
def greet(name: str) -> str:
    """Greet someone, synchronously (never a task)."""
    return f"Hello, {name}!"


@tool(task="optional")
async def slow_compute(seconds: float, label: str = "") -> str:
    """Wait `seconds` seconds, then report; a client may run it as a task and cancel it."""
    await asyncio.sleep(seconds)
    return f"Computed {label or 'result'} after {seconds:g}s"


@tool(task="required")
async def failing_job() -> str:
    """A job that runs only as a task and fails (a tool error) after about a second."""
    await asyncio.sleep(1)
    raise ToolError("failing_job failed on purpose")


@tool(task="optional", timeout=0.5)
async def protocol_error_job() -> str:
    """A job that cannot complete: it outlives its 0.5 s timeout, so the call ends with a
    JSON-RPC error rather than a result (its task: failed, not completed with isError)."""
    await asyncio.sleep(30)
    return "never"


@tool(task="optional")
async def confirm_delete(filename: str, ctx: Context) -> str:
    """Ask the user to confirm before (pretending to) delete a file."""
    answer = await ctx.elicit(f"Delete {filename}?", schema=Confirm, key="confirm_delete")
    if answer.action == "accept" and answer.data.confirm:
        return f"Deleted {filename}"
    return f"Kept {filename}"


@tool(task="optional")
async def multi_input(ctx: Context) -> str:
    """Ask the user two questions at once: their name, and whether to go ahead."""
    name, go = await asyncio.gather(_user_name(ctx), ctx.elicit("Go ahead?", schema=Confirm, key="confirm"))
    return f"{name}: {'go' if go.action == 'accept' and go.data.confirm else 'stop'}."


@tool(task="required", input_before_task=True)
async def test_tool_with_task(ctx: Context) -> str:
    """Ask the user for their name ("user_name") first, through the input round trip of
    tools/call; the call then becomes a task, which greets them."""
    return f"Hello, {await _user_name(ctx)}!"


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


@prompt
async def test_input_required_result_prompt(ctx: Context) -> str:
    """A prompt that asks the user for context ("user_context") before it is written."""
    answer = await ctx.elicit("What context should the prompt use?", schema=UserContext, key="user_context")
    context = answer.data.context if answer.action == "accept" else "none given"
    return f"Answer with this context in mind: {context}"
