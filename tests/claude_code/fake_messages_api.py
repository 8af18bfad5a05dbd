"""A fake of the Anthropic Messages API for driving the real Claude Code CLI with no model.

It answers POST /v1/messages from a script (one list of content blocks per model turn, streamed
as server-sent events the way the real API streams them when the request says `"stream": true`)
and records every request, so a test can read the tools Claude Code offered the model and the
tool_result blocks it sent back. Requests that are not the agent's own turns (Claude Code also
asks the model small side questions, with no tools offered) are answered "ok" and recorded too.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

Block = dict[str, Any]


def text(words: str) -> Block:
    return {"type": "text", "text": words}


def tool_use(name: str, arguments: dict[str, Any] | None = None) -> Block:
    """A tool_use block; its id is given when it is sent."""
    return {"type": "tool_use", "name": name, "input": arguments or {}}


class FakeMessagesAPI:
    """Serves the Messages API on a free loopback port (use as a context manager; `url` is the
    base URL for ANTHROPIC_BASE_URL). `turns` are the model's answers to the agent's turns, in
    order; once they run out each turn is answered "done". `before_turn(n)`, if given, runs
    (in a worker thread) before the agent's turn n (from 0) is answered: a test's moment to act
    between two tool calls."""

    def __init__(self, turns: list[list[Block]], before_turn: Callable[[int], None] | None = None) -> None:
        self.turns = list(turns)
        self.before_turn = before_turn
        self.errors: list[Exception] = []  # what before_turn raised
        self.requests: list[dict[str, Any]] = []  # every POST /v1/messages body, in order
        self.agent_requests: list[dict[str, Any]] = []  # those that offered tools
        self._next_id = 0
        self._lock = threading.Lock()
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        app = Starlette(
            routes=[
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/{path:path}", self._other, methods=["GET", "POST", "HEAD"]),
            ]
        )
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    def __enter__(self) -> FakeMessagesAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()
        if self.errors and exc[0] is None:
            raise self.errors[0]

    # What Claude Code sent, for the test to read.

    def offered_tools(self, turn: int = 0) -> dict[str, dict[str, Any]]:
        """The tools offered the model on the agent's turn `turn`, by name."""
        return {tool["name"]: tool for tool in self.agent_requests[turn].get("tools", []) if "name" in tool}

    def tool_results(self) -> list[Block]:
        """Every tool_result block Claude Code sent back, in order (the last request holds them all)."""
        results: list[Block] = []
        for message in self.agent_requests[-1]["messages"] if self.agent_requests else []:
            if message["role"] == "user" and isinstance(message["content"], list):
                results += [block for block in message["content"] if block.get("type") == "tool_result"]
        return results

    # The endpoints.

    async def _messages(self, request: Request) -> Response:
        body = await request.json()
        if body.get("tools") and self.before_turn is not None:
            try:
                await anyio.to_thread.run_sync(self.before_turn, len(self.agent_requests))
            except Exception as exc:  # raised again by __exit__, in the test
                self.errors.append(exc)
                return JSONResponse(
                    {"type": "error", "error": {"type": "api_error", "message": "test hook failed"}}, 500
                )
        with self._lock:
            self.requests.append(body)
            if body.get("tools"):
                self.agent_requests.append(body)
                blocks = self.turns.pop(0) if self.turns else [text("done")]
            else:
                blocks = [text("ok")]
            blocks = [self._with_id(block) for block in blocks]
        stop = "tool_use" if any(block["type"] == "tool_use" for block in blocks) else "end_turn"
        message = {
            "id": f"msg_fake{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        }
        if not body.get("stream"):
            return JSONResponse(message)
        return StreamingResponse(_stream(message), media_type="text/event-stream")

    async def _count_tokens(self, request: Request) -> Response:
        return JSONResponse({"input_tokens": 10})

    async def _other(self, request: Request) -> Response:
        return JSONResponse({})

    def _with_id(self, block: Block) -> Block:
        if block["type"] != "tool_use":
            return block
        self._next_id += 1
        return {**block, "id": f"toolu_fake{self._next_id}"}


def _stream(message: dict[str, Any]) -> Iterator[str]:
    """The message as the Messages API streams it: message_start, each block as start/delta/stop,
    message_delta (the stop reason), message_stop."""

    def event(kind: str, data: dict[str, Any]) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"

    yield event("message_start", {"message": {**message, "content": [], "stop_reason": None}})
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            yield event("content_block_start", {"index": index, "content_block": {**block, "input": {}}})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            yield event(
                "content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}}
            )
            delta = {"type": "text_delta", "text": block["text"]}
        yield event("content_block_delta", {"index": index, "delta": delta})
        yield event("content_block_stop", {"index": index})
    yield event(
        "message_delta",
        {
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": 10},
        },
    )
    yield event("message_stop", {})
