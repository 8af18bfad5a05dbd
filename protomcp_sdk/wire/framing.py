"""Envelope framing: ``[4-byte big-endian length][serialized Envelope]``.

Sans-IO: :class:`FrameDecoder` is fed bytes and yields Envelopes; :func:`encode`
turns an Envelope into one frame. Both the host and the tool process use this
module (and the rest of ``protomcp_sdk.wire``) and nothing else from each other.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Generator, Iterator
from dataclasses import dataclass

from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.env import FD_ENV as FD_ENV  # re-exported: framing.FD_ENV
from protomcp_sdk.wire.env import MAX_FRAME_ENV
from protomcp_sdk.wire.env import SPOOL_PREFIX as SPOOL_PREFIX  # re-exported

Envelope = pb.Envelope

PROTOCOL_VERSION = 1
"""Envelope protocol version carried in Hello."""

DEFAULT_MAX_FRAME = 256 * 1024 * 1024
"""Largest frame accepted, in bytes (override with PROTOMCP_MAX_FRAME)."""

RAW_THRESHOLD = 256 * 1024
"""Payloads larger than this travel as raw bytes after a RawHeader frame, not inside an
Envelope: no protobuf copy, no UTF-8 round trip."""

RAW_RESULT_JSON = "application/json; protomcp=call_result.result_json"
"""RawHeader.content_type of a raw payload that is the result_json of the call_result
with the same request_id, which follows it."""

RAW_RESOURCE_JSON = "application/json; protomcp=read_resource_response.contents_json"
"""RawHeader.content_type of a raw payload that is the contents_json of the
read_resource_response with the same request_id, which follows it."""

_HEADER = struct.Struct(">I")


def _decode_error() -> type[Exception]:
    """What ParseFromString raises for bytes that are not an Envelope, with the classes in use
    (protomcp_sdk.wire.purepb's, or protobuf's own)."""
    pure: type[Exception] | None = getattr(pb, "DecodeError", None)
    if pure is not None:
        return pure
    from google.protobuf.message import DecodeError

    return DecodeError


_DecodeError = _decode_error()


def max_frame_size() -> int:
    value = os.environ.get(MAX_FRAME_ENV, "")
    return int(value) if value.isdigit() and int(value) > 0 else DEFAULT_MAX_FRAME


class FrameError(Exception):
    """A frame that cannot be accepted: oversized, truncated or not an Envelope."""


def encode(envelope: pb.Envelope) -> bytes:
    body = envelope.SerializeToString()
    return _HEADER.pack(len(body)) + body


@dataclass(slots=True)
class Raw:
    """A payload sent inline after a RawHeader frame (RawHeader.path empty), in the pieces
    it arrived in (joining them is left to whoever needs one buffer)."""

    header: pb.RawHeader
    parts: list[bytes]

    @property
    def data(self) -> bytes:
        return self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)


def raw_header(request_id: str, size: int, content_type: str, path: str = "") -> bytes:
    """The frame announcing a raw payload: inline bytes follow it unless `path` names a file."""
    header = pb.RawHeader(transfer_id=request_id, size=size, content_type=content_type, path=path)
    return encode(pb.Envelope(request_id=request_id, raw_header=header))


def encode_raw(request_id: str, payload: bytes, content_type: str) -> list[bytes]:
    """The pieces to write, in order, to send `payload` raw inline: header frame, then the bytes."""
    return [raw_header(request_id, len(payload), content_type), payload]


class FrameDecoder:
    """Incremental frame parser. ``feed`` bytes, iterate the Envelopes (and Raw payloads)
    completed so far."""

    def __init__(self, max_frame: int | None = None) -> None:
        self.max_frame = max_frame if max_frame is not None else max_frame_size()
        self._buffer = bytearray()
        self._needed: int | None = None
        self._raw: pb.RawHeader | None = None  # collecting this payload
        self._raw_parts: list[bytes] = []
        self._raw_left = 0

    def feed(self, data: bytes) -> Iterator[pb.Envelope | Raw]:
        """Add bytes and yield every complete item. Raises FrameError on bad input.

        The frames of one read are parsed where they lie, and what they took is cut from
        the buffer once, at the end (cutting each frame off the front would move the rest
        of the buffer once per frame)."""
        if self._raw is not None:
            data = yield from self._collect_raw(data)
        buffer = self._buffer
        buffer += data
        at = 0
        try:
            while True:
                if self._raw is not None:  # a raw header ended the last frame: the rest is payload
                    rest = bytes(buffer[at:])
                    del buffer[:]
                    at = 0
                    buffer += yield from self._collect_raw(rest)
                    if self._raw is not None:
                        return  # the payload needs more bytes
                    continue
                if self._needed is None:
                    if len(buffer) - at < 4:
                        return
                    (size,) = _HEADER.unpack_from(buffer, at)
                    if size > self.max_frame:
                        raise FrameError(f"frame of {size} bytes exceeds the {self.max_frame}-byte limit")
                    self._needed = size
                    at += 4
                end = at + self._needed
                if len(buffer) < end:
                    return
                envelope = parse(buffer[at:end])
                at, self._needed = end, None
                if envelope.WhichOneof("msg") == "raw_header" and not envelope.raw_header.path:
                    self._start_raw(envelope.raw_header)
                else:
                    yield envelope
        finally:
            del buffer[:at]

    def _start_raw(self, header: pb.RawHeader) -> None:
        if not 0 <= header.size <= self.max_frame:
            raise FrameError(f"raw payload of {header.size} bytes exceeds the {self.max_frame}-byte limit")
        self._raw, self._raw_left, self._raw_parts = header, header.size, []

    def _collect_raw(self, data: bytes) -> Generator[Raw, None, bytes]:
        """Take this payload's bytes from `data`; yield it when complete; return the rest.
        Written as a generator used with ``yield from``, so its return value is the rest."""
        assert self._raw is not None
        take = min(self._raw_left, len(data))
        if take:
            self._raw_parts.append(data if take == len(data) else data[:take])
            self._raw_left -= take
        if self._raw_left == 0:
            header, parts = self._raw, self._raw_parts
            self._raw, self._raw_parts = None, []
            yield Raw(header, parts)
        return data[take:]

    def close(self) -> None:
        """Call at end of stream: raises FrameError when a frame was cut off."""
        if self._raw is not None:
            raise FrameError(f"truncated raw payload: stream ended {self._raw_left} bytes short")
        if self._needed is not None:
            raise FrameError(
                f"truncated frame: stream ended after {len(self._buffer)} of {self._needed} bytes"
            )
        if self._buffer:
            raise FrameError(f"truncated frame: stream ended inside a {len(self._buffer)}-byte header")


def parse(body: bytes | bytearray) -> pb.Envelope:
    envelope = pb.Envelope()
    try:
        # the parser reads any buffer: bytes(body) would copy the frame to please the stub
        envelope.ParseFromString(body)  # type: ignore[arg-type]
    except _DecodeError as exc:
        raise FrameError(f"frame of {len(body)} bytes is not a valid Envelope ({exc})") from None
    return envelope
