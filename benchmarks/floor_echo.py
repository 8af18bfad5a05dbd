"""Floor, part 2: a do-nothing MCP echo server (asyncio + orjson, no validation, no framework).

Answers initialize, tools/list and tools/call echo; anything else gets an empty result.
With an argument N > 2 it lists N tools shaped like gen_tools.py's (the 1,000-tool floor).
"""

from __future__ import annotations

import asyncio
import os
import sys

import orjson

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 2
TOOLS = {
    "tools": [
        {"name": "echo", "inputSchema": {"type": "object"}},
        {"name": "blob", "inputSchema": {"type": "object"}},
    ]
    if COUNT <= 2
    else [
        {
            "name": f"tool_{i:04d}",
            "description": f"Tool number {i}.",
            "inputSchema": {
                "type": "object",
                "properties": {"x": {"type": "integer", "title": "X"}},
                "required": ["x"],
            },
        }
        for i in range(COUNT)
    ]
}


def answer(message: dict) -> dict:  # type: ignore[type-arg]
    method = message.get("method")
    if method == "initialize":
        return {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "floor", "version": "1"},
        }
    if method == "tools/list":
        return TOOLS
    if method == "tools/call":
        arguments = message["params"].get("arguments", {})
        text = arguments["text"] if "text" in arguments else "x" * arguments.get("n", 0)
        return {"content": [{"type": "text", "text": text}], "isError": False}
    return {}


async def main() -> None:
    loop = asyncio.get_running_loop()
    out, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(1, "wb", buffering=0))
    done = loop.create_future()
    pending = bytearray()

    class Lines(asyncio.Protocol):
        def data_received(self, data: bytes) -> None:
            pending.extend(data)
            *lines, rest = pending.split(b"\n")
            pending[:] = rest
            for line in lines:
                message = orjson.loads(line)
                if "id" in message:
                    out.write(
                        orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": answer(message)})
                        + b"\n"
                    )

        def connection_lost(self, exc: Exception | None) -> None:
            done.set_result(None)

    await loop.connect_read_pipe(Lines, os.fdopen(0, "rb", buffering=0))
    await done


if __name__ == "__main__":
    asyncio.run(main())
