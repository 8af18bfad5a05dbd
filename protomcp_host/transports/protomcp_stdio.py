"""proto-mcp on stdio (imported when a connection's first byte is binary: JSON-RPC clients
never pay for it): frames in, JSON-RPC lines for the session out (proto_mcp/codec.py); the
session's answers back as frames."""

from __future__ import annotations

from collections.abc import Callable

from protomcp_host.proto_mcp.codec import (
    Descriptors,
    FrameReader,
    ProtoMcp,
    ProtoMcpFrameError,
    error_message,
    frame,
    is_notice,
)
from protomcp_host.protocol import jsonrpc as rpc


class ProtoStdio:
    """proto-mcp on stdio: frames in, JSON-RPC lines for the session out (see
    proto_mcp/codec.py); the session's answers back as frames."""

    def __init__(
        self, descriptors: Descriptors, write: Callable[[bytes, bool], None], stderr: Callable[[str], None]
    ):
        self.proto = ProtoMcp(descriptors)
        self.write = write
        self.stderr = stderr
        self.reader = FrameReader()
        self.broken = False  # a frame that cannot be read past: the rest of the input is ignored

    def feed(self, data: bytes) -> list[bytes]:
        if self.broken:
            return []
        lines: list[bytes] = []
        try:
            frames = self.reader.feed(data)
        except ProtoMcpFrameError as exc:
            self.broken = True
            self._refuse(f"{exc}; the rest of the input is not read")
            return lines
        for data_ in frames:
            more, answers = self.proto.receive(data_)
            lines += more
            for message in answers:
                self.write(frame(message), False)
        return lines

    def answer(self, line: bytes) -> None:
        message = self.proto.sent(line)
        if message is not None:
            self.write(frame(message), is_notice(message))

    def ended(self) -> None:
        if self.reader.pending and not self.broken:
            self._refuse(f"truncated frame: the input ended {self.reader.pending} bytes into a frame")

    def _refuse(self, text: str) -> None:
        self.stderr(f"protomcp: proto-mcp: {text}")
        self.write(frame(error_message(0, rpc.INVALID_REQUEST, f"Invalid Request: {text}")), False)
