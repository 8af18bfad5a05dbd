"""Envelope framing (protomcp_sdk.wire): encode, the sans-IO FrameDecoder, limits and errors."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protomcp_sdk import wire
from protomcp_sdk.wire import FrameDecoder, FrameError, encode
from protomcp_sdk.wire import envelope_pb2 as pb

pytestmark = pytest.mark.fast  # starts no process


def call(request_id: str, name: str = "add", arguments: str = '{"a":1}') -> pb.Envelope:
    return pb.Envelope(
        request_id=request_id, call_tool=pb.CallToolRequest(name=name, arguments_json=arguments)
    )


def decode_all(decoder: FrameDecoder, data: bytes) -> list[pb.Envelope]:
    return list(decoder.feed(data))


# -- encode --------------------------------------------------------------------------


def test_encode_is_big_endian_length_then_body() -> None:
    envelope = pb.Envelope(request_id="7")
    body = envelope.SerializeToString()
    assert body == b"\x72\x017"  # field 14, length-delimited, 1 byte
    assert encode(envelope) == b"\x00\x00\x00\x03" + body


def test_encode_empty_envelope_is_a_bare_zero_header() -> None:
    assert encode(pb.Envelope()) == b"\x00\x00\x00\x00"


def test_encode_length_header_for_a_large_body() -> None:
    envelope = call("1", arguments="x" * 70_000)
    frame = encode(envelope)
    (size,) = struct.unpack(">I", frame[:4])
    assert size == len(frame) - 4 == envelope.ByteSize()


# -- round trips ---------------------------------------------------------------------


def test_single_frame_round_trip() -> None:
    envelope = call("42", name="greet", arguments='{"name":"Ada"}')
    decoded = decode_all(FrameDecoder(), encode(envelope))
    assert decoded == [envelope]
    assert decoded[0].WhichOneof("msg") == "call_tool"
    assert decoded[0].request_id == "42"
    assert decoded[0].call_tool.arguments_json == '{"name":"Ada"}'


def test_empty_envelope_round_trip() -> None:
    decoder = FrameDecoder()
    decoded = decode_all(decoder, encode(pb.Envelope()))
    assert len(decoded) == 1
    assert decoded[0] == pb.Envelope()
    assert decoded[0].WhichOneof("msg") is None
    decoder.close()  # nothing left over


def test_many_frames_in_one_chunk() -> None:
    envelopes = [
        call("1"),
        pb.Envelope(),
        pb.Envelope(request_id="2", list_tools=pb.ListToolsRequest()),
        pb.Envelope(request_id="3", cancel=pb.CancelRequest(request_id="1")),
        pb.Envelope(log=pb.LogMessage(level="info", logger="x", data_json='"hi"')),
    ]
    decoder = FrameDecoder()
    assert decode_all(decoder, b"".join(encode(e) for e in envelopes)) == envelopes
    decoder.close()


def test_frame_split_byte_by_byte() -> None:
    envelope = call("abc", arguments='{"text":"héllo wörld"}')
    frame = encode(envelope)
    decoder = FrameDecoder()
    for i, byte in enumerate(frame[:-1]):
        assert decode_all(decoder, bytes([byte])) == [], f"frame completed early at byte {i}"
    assert decode_all(decoder, frame[-1:]) == [envelope]
    decoder.close()


def test_feed_of_nothing_yields_nothing() -> None:
    decoder = FrameDecoder()
    assert decode_all(decoder, b"") == []
    decoder.close()


def test_frame_then_partial_frame_in_one_chunk() -> None:
    first, second = call("1"), call("2", name="other")
    data = encode(first) + encode(second)
    decoder = FrameDecoder()
    assert decode_all(decoder, data[: len(encode(first)) + 6]) == [first]
    assert decode_all(decoder, data[len(encode(first)) + 6 :]) == [second]
    decoder.close()


# -- limits --------------------------------------------------------------------------


def test_frame_at_the_limit_is_accepted() -> None:
    envelope = call("1", arguments="y" * 100)
    size = envelope.ByteSize()
    assert decode_all(FrameDecoder(max_frame=size), encode(envelope)) == [envelope]


def test_frame_over_the_limit_raises_a_readable_error() -> None:
    envelope = call("1", arguments="y" * 100)
    size = envelope.ByteSize()
    with pytest.raises(FrameError) as info:
        decode_all(FrameDecoder(max_frame=size - 1), encode(envelope))
    assert str(info.value) == f"frame of {size} bytes exceeds the {size - 1}-byte limit"


def test_oversized_header_is_detected_before_the_body_arrives() -> None:
    decoder = FrameDecoder(max_frame=1024)
    with pytest.raises(FrameError) as info:
        decode_all(decoder, struct.pack(">I", 0xFFFFFFFF))  # the header alone, no body
    assert str(info.value) == "frame of 4294967295 bytes exceeds the 1024-byte limit"


def test_default_limit_and_environment_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROTOMCP_MAX_FRAME", raising=False)
    assert wire.max_frame_size() == 256 * 1024 * 1024
    assert FrameDecoder().max_frame == 256 * 1024 * 1024
    monkeypatch.setenv("PROTOMCP_MAX_FRAME", "4096")
    assert wire.max_frame_size() == 4096
    assert FrameDecoder().max_frame == 4096
    assert FrameDecoder(max_frame=10).max_frame == 10
    for bad in ("0", "-5", "lots", ""):
        monkeypatch.setenv("PROTOMCP_MAX_FRAME", bad)
        assert wire.max_frame_size() == wire.DEFAULT_MAX_FRAME, bad


# -- truncation and garbage ---------------------------------------------------------------


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_truncated_inside_the_header(cut: int) -> None:
    decoder = FrameDecoder()
    assert decode_all(decoder, encode(call("1"))[:cut]) == []
    with pytest.raises(FrameError) as info:
        decoder.close()
    assert str(info.value) == f"truncated frame: stream ended inside a {cut}-byte header"


def test_truncated_inside_the_body() -> None:
    frame = encode(call("1"))
    body_size = len(frame) - 4
    decoder = FrameDecoder()
    assert decode_all(decoder, frame[:9]) == []
    with pytest.raises(FrameError) as info:
        decoder.close()
    assert str(info.value) == f"truncated frame: stream ended after 5 of {body_size} bytes"


def test_truncated_after_a_header_with_no_body_bytes() -> None:
    decoder = FrameDecoder()
    assert decode_all(decoder, struct.pack(">I", 10)) == []
    with pytest.raises(FrameError, match=r"^truncated frame: stream ended after 0 of 10 bytes$"):
        decoder.close()


def test_close_after_complete_frames_is_silent() -> None:
    decoder = FrameDecoder()
    assert len(decode_all(decoder, encode(call("1")) + encode(call("2")))) == 2
    assert decoder.close() is None


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"\xff", "Wire format was corrupt"),  # wire type 7 does not exist
        (b"\x0a\x05ab", "Wire format was corrupt"),  # length runs past the end
        (b"\x72\x02\xff\xfe", "bad UTF-8"),  # request_id that is not UTF-8
    ],
)
def test_garbage_body_raises_frame_error(body: bytes, reason: str) -> None:
    frame = struct.pack(">I", len(body)) + body
    with pytest.raises(FrameError) as info:
        decode_all(FrameDecoder(), frame)
    message = str(info.value)
    assert message.startswith(f"frame of {len(body)} bytes is not a valid Envelope (")
    assert reason in message
    assert info.value.__cause__ is None  # reported in one readable line, not a chained traceback


def test_garbage_after_a_good_frame_yields_the_good_frame_first() -> None:
    good = call("1")
    decoder = FrameDecoder()
    frames = decoder.feed(encode(good) + b"\x00\x00\x00\x01\xff")
    assert next(frames) == good
    with pytest.raises(FrameError):
        next(frames)


def test_parse_is_the_body_decoder() -> None:
    envelope = call("9")
    assert wire.parse(envelope.SerializeToString()) == envelope
    with pytest.raises(FrameError):
        wire.parse(b"\xff")


# -- property: any chunking decodes to the same list ----------------------------------------

_text = st.text(max_size=40)


def _envelope(request_id: str, namespace: str, kind: int, a: str, b: str) -> pb.Envelope:
    envelope = pb.Envelope(request_id=request_id, namespace=namespace)
    if kind == 1:
        envelope.call_tool.CopyFrom(pb.CallToolRequest(name=a, arguments_json=b, progress_token=a))
    elif kind == 2:
        envelope.call_result.CopyFrom(pb.CallToolResponse(is_error=bool(b), result_json=a))
    elif kind == 3:
        envelope.log.CopyFrom(pb.LogMessage(level=a, logger=b, data_json=a + b))
    elif kind == 4:
        envelope.cancel.CopyFrom(pb.CancelRequest(request_id=a))
    elif kind == 5:
        envelope.list_tools.SetInParent()
    return envelope


envelopes = st.lists(
    st.builds(_envelope, _text, _text, st.integers(min_value=0, max_value=5), _text, _text), max_size=12
)


@settings(max_examples=200, deadline=None)
@given(items=envelopes, data=st.data())
def test_any_chunking_decodes_to_the_same_list(items: list[pb.Envelope], data: st.DataObject) -> None:
    stream = b"".join(encode(e) for e in items)
    cuts = sorted(data.draw(st.sets(st.integers(min_value=0, max_value=len(stream)), max_size=20)))
    decoder = FrameDecoder()
    decoded: list[pb.Envelope] = []
    start = 0
    for end in [*cuts, len(stream)]:
        decoded.extend(decoder.feed(stream[start:end]))
        start = end
    decoder.close()
    assert decoded == items
    assert [e.WhichOneof("msg") for e in decoded] == [e.WhichOneof("msg") for e in items]


def _raw_stream(payload: bytes) -> bytes:
    from protomcp_sdk import wire
    from protomcp_sdk.wire import envelope_pb2 as pb

    result = wire.encode(pb.Envelope(request_id="7", call_result=pb.CallToolResponse()))
    return (
        wire.encode(pb.Envelope(request_id="1"))
        + b"".join(wire.encode_raw("7", payload, wire.RAW_RESULT_JSON))
        + result
        + wire.encode(pb.Envelope(request_id="9"))
    )


@pytest.mark.parametrize("chunk", [1, 5, 4096, 1 << 20])
def test_raw_payload_round_trip_at_any_chunking(chunk: int) -> None:
    from protomcp_sdk import wire

    payload = b'[{"type":"text","text":"' + b"x" * 30000 + b'"}]'
    stream = _raw_stream(payload)
    decoder = wire.FrameDecoder()
    items = [item for i in range(0, len(stream), chunk) for item in decoder.feed(stream[i : i + chunk])]
    decoder.close()
    assert [type(item).__name__ for item in items] == ["Envelope", "Raw", "Envelope", "Envelope"]
    raw = items[1]
    assert isinstance(raw, wire.Raw)
    assert (
        raw.data == payload
        and raw.header.transfer_id == "7"
        and raw.header.content_type == wire.RAW_RESULT_JSON
    )
    assert [items[0].request_id, items[2].request_id, items[3].request_id] == ["1", "7", "9"]


def test_truncated_raw_payload_is_reported_at_close() -> None:
    from protomcp_sdk import wire

    stream = _raw_stream(b"y" * 1000)
    decoder = wire.FrameDecoder()
    cut = stream.index(b"y" * 1000) + 10
    list(decoder.feed(stream[:cut]))
    with pytest.raises(wire.FrameError, match="truncated raw payload: stream ended 990 bytes short"):
        decoder.close()


def test_raw_payload_over_the_limit_is_refused() -> None:
    from protomcp_sdk import wire

    decoder = wire.FrameDecoder(max_frame=100)
    with pytest.raises(wire.FrameError, match="raw payload of 1000 bytes exceeds the 100-byte limit"):
        list(decoder.feed(b"".join(wire.encode_raw("7", b"z" * 1000, wire.RAW_RESULT_JSON))))
