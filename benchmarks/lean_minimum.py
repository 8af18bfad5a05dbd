"""The least CPU a call can cost in protomcp's shape, measured in one process without I/O.

    python benchmarks/lean_minimum.py

protomcp's guarantees need, per `tools/call`, at least: in the host, parse the client's line,
check the arguments against the tool's schema, build and frame an Envelope for the tool
process, then parse the answer's Envelope and splice its JSON into the response line; in the
tool process, parse the Envelope, parse and convert the arguments, call the function, encode
its result and build and frame the answering Envelope. This script times exactly those steps,
each done the cheapest way the libraries allow (orjson, protobuf's upb classes, a
precompiled check of one string argument, the function called directly), and nothing else:
no sessions, routing, timeouts, ownership, supervision or threads. Beside it, the floor's own
per-call work (`floor_echo.py`: one orjson parse and one orjson encode; its relay only copies
bytes). Pipe writes, reads and wake-ups are left out of both sides: every design pays those.

The ratio of the two is what a two-process design with validation and Envelope framing at both
ends costs above the floor before writing a single line of bookkeeping.
"""

from __future__ import annotations

import struct
import timeit

import orjson

from protomcp_sdk.wire import envelope_pb2 as pb

CALL = {"name": "echo", "arguments": {"text": "hello"}}
LINE = orjson.dumps({"jsonrpc": "2.0", "id": 17, "method": "tools/call", "params": CALL})
HEADER = struct.Struct(">I")


def echo(text: str) -> str:
    return text


def host_request() -> bytes:
    message = orjson.loads(LINE)
    params = message["params"]
    arguments = params["arguments"]
    if not (isinstance(arguments, dict) and isinstance(arguments.get("text"), str)):
        raise ValueError
    envelope = pb.Envelope(request_id="17")
    request = envelope.call_tool
    request.name = params["name"]
    request.arguments_json = orjson.dumps(arguments).decode()
    body = envelope.SerializeToString()
    return HEADER.pack(len(body)) + body


def tool_answer(frame: bytes) -> bytes:
    envelope = pb.Envelope()
    envelope.ParseFromString(frame[4:])
    request = envelope.call_tool
    result = echo(**orjson.loads(request.arguments_json))
    content = orjson.dumps([{"type": "text", "text": result}]).decode()
    answer = pb.Envelope(request_id=envelope.request_id, call_result=pb.CallToolResponse(result_json=content))
    body = answer.SerializeToString()
    return HEADER.pack(len(body)) + body


def host_response(frame: bytes) -> bytes:
    envelope = pb.Envelope()
    envelope.ParseFromString(frame[4:])
    content = envelope.call_result.result_json.encode()
    return b'{"jsonrpc":"2.0","id":17,"result":{"content":' + content + b',"isError":false}}\n'


def floor_echo() -> bytes:
    message = orjson.loads(LINE)
    text = message["params"]["arguments"]["text"]
    result = {"content": [{"type": "text", "text": text}], "isError": False}
    return orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + b"\n"


def best_us(fn: object, *args: object, number: int = 50_000) -> float:
    timer = timeit.Timer(lambda: fn(*args))  # type: ignore[operator]
    return min(timer.repeat(repeat=7, number=number)) / number * 1e6


def main() -> None:
    request = host_request()
    answer = tool_answer(request)
    assert b"hello" in host_response(answer)
    host = best_us(host_request) + best_us(host_response, answer)
    tool = best_us(tool_answer, request)
    floor = best_us(floor_echo)
    print(f"host, least work per call:         {host:6.2f} µs")
    print(f"tool process, least work per call: {tool:6.2f} µs")
    print(f"both:                              {host + tool:6.2f} µs")
    print(f"floor (floor_echo's work):         {floor:6.2f} µs")
    print(f"both ÷ floor:                      {(host + tool) / floor:6.2f}x")


if __name__ == "__main__":
    main()
