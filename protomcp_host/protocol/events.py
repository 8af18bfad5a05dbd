"""What the protocol core hands its driver besides the call records: bytes to write (``Send``)
and the collector of one JSON-RPC batch's answers (``Batch``). Imported by the session and by
the feature handlers alike; it imports nothing of the host."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Batch:
    """Collects the responses of one JSON-RPC batch; complete when all have arrived."""

    expected: int
    parts: list[bytes] = field(default_factory=list)

    def add(self, part: bytes) -> bytes | None:
        self.parts.append(part)
        if len(self.parts) == self.expected:
            return b"[" + b",".join(self.parts) + b"]"
        return None

    def drop(self) -> bytes | None:
        """One expected answer will never come (its request was cancelled)."""
        self.expected -= 1
        if self.parts and len(self.parts) == self.expected:
            return b"[" + b",".join(self.parts) + b"]"
        return None


@dataclass(slots=True)
class Send:
    """Bytes to write. `related` is the id of the client request they belong to (a response,
    or a notification during that request), so a transport can pick the right stream."""

    data: bytes
    related: bytes | None = None
