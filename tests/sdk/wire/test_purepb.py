"""protomcp_sdk.wire.purepb: the pure-Python Envelope classes a tool process uses under
PROTOMCP_ENVELOPE=python, held against protobuf's own (upb) classes for every message of
protomcp.proto, byte for byte both ways, and for the API the SDK uses."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protomcp_sdk.wire import envelope_pb2 as upb
from protomcp_sdk.wire import purepb
from protomcp_sdk.wire.leanpb import serialized_descriptor

pytestmark = pytest.mark.fast  # starts no process

PURE = purepb.build(serialized_descriptor("protomcp_sdk.wire.envelope_pb2") or b"", "test")
NAMES = sorted(PURE)

INT32 = st.integers(-(2**31), 2**31 - 1)
SCALARS: dict[int, st.SearchStrategy[Any]] = {
    purepb.STRING: st.text(max_size=20),
    purepb.BYTES: st.binary(max_size=20),
    purepb.BOOL: st.booleans(),
    purepb.INT32: INT32,
    purepb.INT64: st.integers(-(2**63), 2**63 - 1),
    purepb.UINT32: st.integers(0, 2**32 - 1),
    purepb.DOUBLE: st.floats(allow_nan=False),
}


def values(cls: type[purepb.Message], depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """Field values for a message of `cls`: some fields set, at most one member per oneof."""
    options: dict[str, st.SearchStrategy[Any]] = {}
    for name, field in cls._pb_fields.items():
        if field.message is not None:
            if depth >= 2:
                continue
            inner = values(field.message, depth + 1)
            options[name] = st.lists(inner, max_size=2) if field.repeated else inner
        else:
            scalar = SCALARS[field.kind]
            options[name] = st.lists(scalar, max_size=3) if field.repeated else scalar
    oneof_members = {n for members in cls._pb_oneofs.values() for n in members}
    plain = {n: s for n, s in options.items() if n not in oneof_members}
    chosen_member = st.sampled_from(sorted(oneof_members & set(options))) if oneof_members else st.none()

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        found = draw(st.fixed_dictionaries({}, optional=plain))
        member = draw(chosen_member)
        if member is not None and draw(st.booleans()):
            found[member] = draw(options[member])
        return found

    return build()


def make(module: Any, cls_name: str, fields: dict[str, Any]) -> Any:
    """A message of `cls_name` from `module` (upb's module or PURE) with `fields` set."""
    classes = module if isinstance(module, dict) else vars(module)
    cls = classes[cls_name]
    message = cls()
    spec = PURE[cls_name]._pb_fields
    for name, value in fields.items():
        field = spec[name]
        if field.message is not None and field.repeated:
            for item in value:
                make_into(getattr(message, name).add(), classes, field.message.__name__, item)
        elif field.message is not None:
            target = getattr(message, name)
            make_into(target, classes, field.message.__name__, value)
            target.SetInParent()
        elif field.repeated:
            getattr(message, name).extend(value)
        else:
            setattr(message, name, value)
    return message


def make_into(target: Any, classes: dict[str, Any], cls_name: str, fields: dict[str, Any]) -> None:
    target.CopyFrom(make(classes, cls_name, fields))


def as_dict(message: Any) -> dict[str, Any]:
    """Every field of a message of either kind, recursively, with proto3 defaults."""
    spec = PURE[type(message).__name__]._pb_fields
    out: dict[str, Any] = {}
    for name, field in spec.items():
        value = getattr(message, name)
        if field.message is not None and field.repeated:
            out[name] = [as_dict(item) for item in value]
        elif field.message is not None:
            out[name] = as_dict(value) if message.HasField(name) else None
        elif field.repeated:
            out[name] = list(value)
        else:
            out[name] = value
    return out


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_message_reads_and_writes_what_upb_does(name: str, data: st.DataObject) -> None:
    fields = data.draw(values(PURE[name]))
    theirs = make(upb, name, fields)
    wire = theirs.SerializeToString()
    ours = PURE[name].FromString(wire)
    assert as_dict(ours) == as_dict(theirs)
    assert ours.SerializeToString() == wire or upb_parse(name, ours.SerializeToString()) == theirs
    built = make(PURE, name, fields)
    assert upb_parse(name, built.SerializeToString()) == theirs
    assert built == ours


def upb_parse(name: str, data: bytes) -> Any:
    message = getattr(upb, name)()
    message.ParseFromString(data)
    return message


def test_a_read_sub_message_is_not_present_until_set() -> None:
    envelope = PURE["Envelope"]()
    assert envelope.call_tool.name == ""  # reading makes it, but it is not set
    assert envelope.WhichOneof("msg") is None
    assert not envelope.HasField("call_tool")
    assert envelope.SerializeToString() == b""
    envelope.list_tools.SetInParent()  # an empty message, present
    assert envelope.WhichOneof("msg") == "list_tools"
    assert upb.Envelope.FromString(envelope.SerializeToString()).WhichOneof("msg") == "list_tools"


def test_setting_a_oneof_member_drops_the_other() -> None:
    envelope = PURE["Envelope"](request_id="7")
    envelope.call_tool.name = "echo"
    assert envelope.WhichOneof("msg") == "call_tool"
    envelope.heartbeat.SetInParent()
    assert envelope.WhichOneof("msg") == "heartbeat"
    assert not envelope.HasField("call_tool")
    parsed = upb.Envelope.FromString(envelope.SerializeToString())
    assert parsed.WhichOneof("msg") == "heartbeat" and parsed.request_id == "7"
    envelope.ClearField("msg")
    assert envelope.WhichOneof("msg") is None and envelope.request_id == "7"


def test_a_message_given_to_a_constructor_is_present_and_one_of_another_is_copied() -> None:
    response = PURE["CallToolResponse"](result_json="[]", is_error=True)
    envelope = PURE["Envelope"](request_id="1", call_result=response)
    assert envelope.WhichOneof("msg") == "call_result"
    other = PURE["Envelope"](call_result=envelope.call_result)  # belongs to `envelope`: copied
    other.call_result.is_error = False
    assert envelope.call_result.is_error is True
    empty = PURE["Envelope"](heartbeat=PURE["Heartbeat"]())
    assert upb.Envelope.FromString(empty.SerializeToString()).WhichOneof("msg") == "heartbeat"


def test_grandchildren_make_their_parents_present() -> None:
    envelope = PURE["Envelope"]()
    envelope.call_result.error.SetInParent()
    parsed = upb.Envelope.FromString(envelope.SerializeToString())
    assert parsed.WhichOneof("msg") == "call_result" and parsed.call_result.HasField("error")


def test_repeated_fields() -> None:
    tools = PURE["ToolListResponse"]()
    tools.tools.add(name="a", description="first")
    tools.tools.append(PURE["ToolDefinition"](name="b"))
    parsed = upb.ToolListResponse.FromString(tools.SerializeToString())
    assert [tool.name for tool in parsed.tools] == ["a", "b"]
    listing = PURE["EnableToolsRequest"](tool_names=["x", ""])
    assert list(upb.EnableToolsRequest.FromString(listing.SerializeToString()).tool_names) == ["x", ""]
    with pytest.raises(AttributeError):
        listing.tool_names.add()


def test_edge_values_match_upb() -> None:
    for value in (-0.0, math.inf, -math.inf, 5e-324):
        ours = PURE["HeartbeatReply"](blocked_seconds=value).SerializeToString()
        assert ours == upb.HeartbeatReply(blocked_seconds=value).SerializeToString()
    nan = PURE["HeartbeatReply"](blocked_seconds=math.nan).SerializeToString()
    assert math.isnan(upb.HeartbeatReply.FromString(nan).blocked_seconds)
    assert PURE["Hello"](pid=-5).SerializeToString() == upb.Hello(pid=-5).SerializeToString()


def test_bad_bytes_are_a_decode_error() -> None:
    good = upb.Envelope(request_id="r", call_tool=upb.CallToolRequest(name="echo")).SerializeToString()
    for bad in (good[:-1], b"\x0a\xff", b"\x72\x02\xff\xfe", b"\x80" * 11, b"\x0f"):
        with pytest.raises(purepb.DecodeError):
            PURE["Envelope"].FromString(bad)


def test_unknown_fields_are_skipped() -> None:
    unknown = b"\xf8\x07\x05" + b"\xfa\x07\x01x" + b"\xf9\x07" + bytes(8) + b"\xfd\x07" + bytes(4)
    parsed = PURE["Envelope"].FromString(unknown + upb.Envelope(request_id="r").SerializeToString())
    assert parsed.request_id == "r"


def test_unknown_names_are_refused() -> None:
    with pytest.raises(ValueError, match='no "nope" field'):
        PURE["Hello"](nope=1)
    with pytest.raises(AttributeError):
        _ = PURE["Hello"]().nope
    with pytest.raises(ValueError):
        PURE["Hello"]().HasField("pid")  # a proto3 scalar has no presence


def file_with(field_type: int, label: int = 1, **extra: Any) -> bytes:
    from google.protobuf import descriptor_pb2

    file = descriptor_pb2.FileDescriptorProto(name="t.proto", package="t", syntax="proto3")
    file.message_type.add(name="M").field.add(name="f", number=1, type=field_type, label=label, **extra)
    return file.SerializeToString()


def test_a_file_with_what_this_module_lacks_is_refused() -> None:
    assert set(purepb.build(file_with(purepb.STRING), "t")) == {"M"}
    for unsupported in (
        file_with(2),  # float
        file_with(purepb.INT64, label=purepb.LABEL_REPEATED),  # packed
        file_with(purepb.STRING, proto3_optional=True),  # explicit presence
    ):
        with pytest.raises(purepb.Unsupported):
            purepb.build(unsupported, "t")


def test_a_message_field_seen_twice_is_merged_as_upb_merges_it() -> None:
    first = upb.Envelope(call_tool=upb.CallToolRequest(name="echo")).SerializeToString()
    second = upb.Envelope(call_tool=upb.CallToolRequest(arguments_json="{}")).SerializeToString()
    ours = PURE["Envelope"]()
    _ = ours.call_tool  # a sub-message made by reading, then filled by the bytes
    ours.MergeFromString(first + second)
    assert as_dict(ours) == as_dict(upb.Envelope.FromString(first + second))
    assert ours.HasField("call_tool") and ours.call_tool.name == "echo"
