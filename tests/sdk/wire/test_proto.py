"""The generated protobuf module matches proto/protomcp.proto and the Envelope spec (seed 001)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from google.protobuf.descriptor import FieldDescriptor

from protomcp_sdk.wire import envelope_pb2 as pb

ROOT = Path(__file__).resolve().parents[3]
GEN_PROTO = ROOT / "scripts" / "gen_proto.py"

# Envelope.msg oneof, exactly as the Envelope specification (seed 001) defines it:
# field name -> (number, message type).
SPEC_ONEOF: dict[str, tuple[int, str]] = {
    "reload": (1, "ReloadRequest"),
    "list_tools": (2, "ListToolsRequest"),
    "call_tool": (3, "CallToolRequest"),
    "reload_response": (4, "ReloadResponse"),
    "tool_list": (5, "ToolListResponse"),
    "call_result": (6, "CallToolResponse"),
    "enable_tools": (7, "EnableToolsRequest"),
    "disable_tools": (8, "DisableToolsRequest"),
    "set_allowed": (9, "SetAllowedRequest"),
    "set_blocked": (10, "SetBlockedRequest"),
    "get_active_tools": (11, "GetActiveToolsRequest"),
    "batch": (12, "BatchUpdateRequest"),
    "active_tools": (13, "ActiveToolsResponse"),
    "progress": (16, "ProgressNotification"),
    "cancel": (17, "CancelRequest"),
    "log": (18, "LogMessage"),
    "create_task": (19, "CreateTaskResponse"),
    "task_status": (20, "TaskStatusRequest"),
    "task_status_response": (21, "TaskStatusResponse"),
    "task_result": (22, "TaskResultRequest"),
    "task_cancel": (23, "TaskCancelRequest"),
    "register_middleware": (24, "RegisterMiddlewareRequest"),
    "register_middleware_response": (25, "RegisterMiddlewareResponse"),
    "middleware_intercept": (26, "MiddlewareInterceptRequest"),
    "middleware_intercept_response": (27, "MiddlewareInterceptResponse"),
    "stream_header": (28, "StreamHeader"),
    "stream_chunk": (29, "StreamChunk"),
    "raw_header": (30, "RawHeader"),
    "list_resources_request": (31, "ListResourcesRequest"),
    "resource_list_response": (32, "ResourceListResponse"),
    "list_resource_templates_request": (33, "ListResourceTemplatesRequest"),
    "resource_template_list_response": (34, "ResourceTemplateListResponse"),
    "read_resource_request": (35, "ReadResourceRequest"),
    "read_resource_response": (36, "ReadResourceResponse"),
    "resource_changed": (37, "ResourceChangedNotification"),
    "list_prompts_request": (40, "ListPromptsRequest"),
    "prompt_list_response": (41, "PromptListResponse"),
    "get_prompt_request": (42, "GetPromptRequest"),
    "get_prompt_response": (43, "GetPromptResponse"),
    "completion_request": (50, "CompletionRequest"),
    "completion_response": (51, "CompletionResponse"),
    "sampling_request": (60, "SamplingRequest"),
    "sampling_response": (61, "SamplingResponse"),
    "list_roots_request": (62, "ListRootsRequest"),
    "list_roots_response": (63, "ListRootsResponse"),
}

# Plain Envelope fields outside the oneof (spec): name -> number.
SPEC_PLAIN = {"request_id": 14, "namespace": 15}

# Sub-messages the host and SDK rely on, field name -> number, as in the spec.
SPEC_MESSAGES: dict[str, dict[str, int]] = {
    "CallToolRequest": {"name": 1, "arguments_json": 2, "progress_token": 3},
    "ReloadResponse": {"success": 1, "error": 2},
    "ToolListResponse": {"tools": 1},
    "ToolDefinition": {
        "name": 1,
        "description": 2,
        "input_schema_json": 3,
        "output_schema_json": 4,
        "title": 5,
        "read_only_hint": 6,
        "destructive_hint": 7,
        "idempotent_hint": 8,
        "open_world_hint": 9,
        "task_support": 10,
    },
    "CallToolResponse": {
        "is_error": 1,
        "result_json": 2,
        "enable_tools": 3,
        "disable_tools": 4,
        "error": 5,
        "structured_content_json": 6,
    },
    "ToolError": {"error_code": 1, "message": 2, "suggestion": 3, "retryable": 4},
    "ProgressNotification": {"progress_token": 1, "progress": 2, "total": 3, "message": 4},
    "CancelRequest": {"request_id": 1},
    "LogMessage": {"level": 1, "logger": 2, "data_json": 3},
}


def test_committed_pb2_is_not_stale() -> None:
    proc = subprocess.run(
        [sys.executable, str(GEN_PROTO), "--check"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def _load_gen_proto() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_proto_under_test", GEN_PROTO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_check_fails_on_a_stale_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gen_proto = _load_gen_proto()
    stubs = [module.replace(".py", ".pyi") for module in gen_proto.MODULES.values()]
    for module in [*gen_proto.MODULES.values(), *stubs, "options.proto"]:
        (tmp_path / module).write_text((ROOT / "protomcp_sdk" / "wire" / module).read_text())
    stale = tmp_path / "envelope_pb2.py"
    stale.write_text(stale.read_text() + "# edited by hand\n")
    monkeypatch.setattr(gen_proto, "WIRE", tmp_path)
    monkeypatch.setattr(sys, "argv", ["gen_proto.py", "--check"])
    assert gen_proto.main() == 1
    assert "is stale" in capsys.readouterr().err
    assert stale.read_text().endswith("# edited by hand\n")  # --check never writes


def test_envelope_oneof_matches_the_spec() -> None:
    descriptor = pb.Envelope.DESCRIPTOR
    oneof = descriptor.oneofs_by_name["msg"]
    actual = {
        field.name: (field.number, field.message_type.name)
        for field in oneof.fields
        if field.number < 64  # 64 and up are protomcp additions
    }
    assert actual == SPEC_ONEOF


def test_envelope_plain_fields_match_the_spec() -> None:
    descriptor = pb.Envelope.DESCRIPTOR
    plain = {f.name: f.number for f in descriptor.fields if f.containing_oneof is None and f.number < 64}
    assert plain == SPEC_PLAIN
    for name in SPEC_PLAIN:
        assert descriptor.fields_by_name[name].type == FieldDescriptor.TYPE_STRING


def test_protomcp_additions_use_numbers_from_64() -> None:
    descriptor = pb.Envelope.DESCRIPTOR
    spec_numbers = {n for n, _ in SPEC_ONEOF.values()} | set(SPEC_PLAIN.values())
    extra = {f.name: f.number for f in descriptor.fields if f.number not in spec_numbers}
    assert extra == {
        "hello": 64,
        "call_id": 65,
        "heartbeat": 66,
        "heartbeat_reply": 67,
        "elicit_request": 68,
        "elicit_response": 69,
        "roots_changed": 70,
        "user_state_request": 71,
        "user_state_response": 72,
    }
    assert descriptor.fields_by_name["hello"].containing_oneof is descriptor.oneofs_by_name["msg"]
    assert descriptor.fields_by_name["call_id"].containing_oneof is None


@pytest.mark.parametrize("message", sorted(SPEC_MESSAGES))
def test_sub_message_fields_match_the_spec(message: str) -> None:
    descriptor = pb.DESCRIPTOR.message_types_by_name[message]
    actual = {f.name: f.number for f in descriptor.fields if f.name in SPEC_MESSAGES[message]}
    assert actual == SPEC_MESSAGES[message]
    # Anything beyond the spec is a protomcp addition, numbered after the spec's fields.
    spec_max = max(SPEC_MESSAGES[message].values())
    for field in descriptor.fields:
        if field.name not in SPEC_MESSAGES[message]:
            assert field.number > spec_max, f"{message}.{field.name} reuses a spec number"


def test_oneof_fields_are_exclusive() -> None:
    envelope = pb.Envelope(request_id="1", call_tool=pb.CallToolRequest(name="a"))
    envelope.cancel.request_id = "1"
    assert envelope.WhichOneof("msg") == "cancel"
    assert not envelope.HasField("call_tool")
    assert envelope.request_id == "1"


def test_launch_uses_the_wire_fd_variable() -> None:
    # launch.py repeats the name to avoid importing protobuf before the tool processes start.
    from protomcp_host.processes import launch
    from protomcp_sdk import wire

    assert launch.FD_ENV == wire.FD_ENV
