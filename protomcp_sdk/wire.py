"""Envelope framing: ``[4-byte big-endian length][serialized Envelope]``.

Sans-IO: :class:`FrameDecoder` is fed bytes and yields Envelopes; :func:`encode`
turns an Envelope into one frame. Both the host and the tool process use this
module (and the generated ``protomcp_pb2``) and nothing else from each other.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

from google.protobuf.message import DecodeError

from protomcp_sdk import protomcp_pb2 as pb

Envelope = pb.Envelope

PROTOCOL_VERSION = 1
"""Envelope protocol version carried in Hello."""

DEFAULT_MAX_FRAME = 256 * 1024 * 1024
"""Largest frame accepted, in bytes (override with PROTOMCP_MAX_FRAME)."""

FD_ENV = "PROTOMCP_FDS"
"""Environment variable naming the tool process's pipe fds: "<read_fd>,<write_fd>"."""

_HEADER = struct.Struct(">I")


def max_frame_size() -> int:
    value = os.environ.get("PROTOMCP_MAX_FRAME", "")
    return int(value) if value.isdigit() and int(value) > 0 else DEFAULT_MAX_FRAME


class FrameError(Exception):
    """A frame that cannot be accepted: oversized, truncated or not an Envelope."""


def encode(envelope: pb.Envelope) -> bytes:
    body = envelope.SerializeToString()
    return _HEADER.pack(len(body)) + body


class FrameDecoder:
    """Incremental frame parser. ``feed`` bytes, iterate the Envelopes completed so far."""

    def __init__(self, max_frame: int | None = None) -> None:
        self.max_frame = max_frame if max_frame is not None else max_frame_size()
        self._buffer = bytearray()
        self._needed: int | None = None

    def feed(self, data: bytes) -> Iterator[pb.Envelope]:
        """Add bytes and yield every complete Envelope. Raises FrameError on bad input."""
        self._buffer += data
        while True:
            if self._needed is None:
                if len(self._buffer) < 4:
                    return
                (size,) = _HEADER.unpack_from(self._buffer)
                if size > self.max_frame:
                    raise FrameError(f"frame of {size} bytes exceeds the {self.max_frame}-byte limit")
                self._needed = size
                del self._buffer[:4]
            if len(self._buffer) < self._needed:
                return
            body = bytes(self._buffer[: self._needed])
            del self._buffer[: self._needed]
            self._needed = None
            yield parse(body)

    def close(self) -> None:
        """Call at end of stream: raises FrameError when a frame was cut off."""
        if self._needed is not None:
            raise FrameError(
                f"truncated frame: stream ended after {len(self._buffer)} of {self._needed} bytes"
            )
        if self._buffer:
            raise FrameError(f"truncated frame: stream ended inside a {len(self._buffer)}-byte header")


def parse(body: bytes) -> pb.Envelope:
    envelope = pb.Envelope()
    try:
        envelope.ParseFromString(body)
    except DecodeError as exc:
        raise FrameError(f"frame of {len(body)} bytes is not a valid Envelope ({exc})") from None
    return envelope
