"""A tool process written to the Envelope specification alone (no Hello, no protomcp_sdk
runtime): it waits for ListToolsRequest, lists one tool and answers calls to it.

Run by the host through --python (tests/e2e/test_hardening.py makes a small launcher), so the
`-m protomcp_sdk FILE` arguments the host passes are ignored."""

import os

from protomcp_sdk import wire
from protomcp_sdk.wire import envelope_pb2 as pb

read_fd, write_fd = (int(fd) for fd in os.environ[wire.FD_ENV].split(","))
decoder = wire.FrameDecoder()
while data := os.read(read_fd, 65536):
    for envelope in decoder.feed(data):
        kind = envelope.WhichOneof("msg")
        if kind == "list_tools":
            tool = pb.ToolDefinition(name="seeded", description="From a seed-only process.")
            tool.input_schema_json = '{"type":"object","properties":{}}'
            reply = pb.Envelope(request_id=envelope.request_id, tool_list=pb.ToolListResponse(tools=[tool]))
        elif kind == "call_tool":
            result = pb.CallToolResponse(result_json='[{"type":"text","text":"seeded answer"}]')
            reply = pb.Envelope(request_id=envelope.request_id, call_result=result)
        else:
            continue
        os.write(write_fd, wire.encode(reply))
