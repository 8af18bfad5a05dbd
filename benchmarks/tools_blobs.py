"""The same 10 MiB of binary data as a resource and as a tool result (benchmarks/resources.py)."""

from protomcp_sdk import Image, resource, tool

DATA = bytes(range(256)) * (10 * 1024 * 1024 // 256)


@resource("bench://blob", mime_type="application/octet-stream")
def blob() -> bytes:
    return DATA


@tool
def blob_result() -> Image:
    return Image(DATA, "image/png")
