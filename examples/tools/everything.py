"""The server side of the official MCP conformance suite: one tool per scenario, named as the
suite expects (see docs/conformance.md). Also a tour of what a tool can return.

Serve it:  protomcp run examples/tools/everything.py --transport http
Test it:   see docs/conformance.md
"""

import asyncio
import base64
import struct

from protomcp_sdk import Audio, Context, EmbeddedResource, Image, Text, ToolError, ToolResult, tool

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
