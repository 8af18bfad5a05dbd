"""Protobuf's base-128 varint, written: the one encoder that both the pure-Python Envelope
(`purepb`) and the proto-mcp codec's spliced listings need (importing either for it would cost
the other its import)."""

from __future__ import annotations


def varint(value: int) -> bytes:
    """`value` (0 or more) as a varint: seven bits a byte, low first, the high bit set on all
    but the last."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
