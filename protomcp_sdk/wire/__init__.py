"""The host <-> tool process contract (framing, protobuf, env, URIs, paths). Imports no other SDK layer.

Owns what both sides share (framing, the generated protobuf, environment names, URI templates,
package paths, ToolListChange, JSON type tests); imports nothing from protomcp_sdk outside
``wire`` and never protomcp_host.

Light on purpose: importing ``protomcp_sdk.wire.env`` (or any small module here) does not load
protobuf. ``envelope_pb2`` asked for as ``from protomcp_sdk.wire import envelope_pb2`` is loaded
by :mod:`protomcp_sdk.wire.leanpb` (its classes straight through upb, without the pure-Python
protobuf modules the generated code's builder imports). The framing names (``wire.encode``,
``wire.FrameDecoder``, ``wire.Raw``, ``wire.RAW_RESULT_JSON``...) are loaded from
:mod:`protomcp_sdk.wire.framing` on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_FRAMING = (
    "DEFAULT_MAX_FRAME",
    "Envelope",
    "FrameDecoder",
    "FrameError",
    "PROTOCOL_VERSION",
    "RAW_RESOURCE_JSON",
    "RAW_RESULT_JSON",
    "RAW_THRESHOLD",
    "Raw",
    "encode",
    "encode_raw",
    "max_frame_size",
    "parse",
    "raw_header",
)
_ENV = ("FD_ENV", "HOST_PID_ENV", "SPOOL_ENV", "SPOOL_PREFIX")

__all__ = [
    "DEFAULT_MAX_FRAME",
    "FD_ENV",
    "HOST_PID_ENV",
    "PROTOCOL_VERSION",
    "RAW_RESOURCE_JSON",
    "RAW_RESULT_JSON",
    "RAW_THRESHOLD",
    "SPOOL_ENV",
    "SPOOL_PREFIX",
    "Envelope",
    "FrameDecoder",
    "FrameError",
    "Raw",
    "encode",
    "encode_raw",
    "max_frame_size",
    "parse",
    "raw_header",
]

if TYPE_CHECKING:
    from protomcp_sdk.wire.env import FD_ENV, HOST_PID_ENV, SPOOL_ENV, SPOOL_PREFIX
    from protomcp_sdk.wire.framing import (
        DEFAULT_MAX_FRAME,
        PROTOCOL_VERSION,
        RAW_RESOURCE_JSON,
        RAW_RESULT_JSON,
        RAW_THRESHOLD,
        Envelope,
        FrameDecoder,
        FrameError,
        Raw,
        encode,
        encode_raw,
        max_frame_size,
        parse,
        raw_header,
    )


def __getattr__(name: str) -> object:
    if name == "envelope_pb2":  # `from protomcp_sdk.wire import envelope_pb2` asks here first
        from protomcp_sdk.wire.leanpb import load

        return load(f"{__name__}.{name}")  # (load sets it on this package)
    if name in _FRAMING:
        module = "protomcp_sdk.wire.framing"
    elif name in _ENV:
        module = "protomcp_sdk.wire.env"
    else:
        raise AttributeError(f"module 'protomcp_sdk.wire' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
