"""A change to a session's tool list: the one shape of the enable/disable/allow/block quadruple.

The tool process builds one (``ctx.enable_tools``..., ``ctx.update_tools``, a ToolResult's
``enable_tools``/``disable_tools``) and turns it into its Envelope request; the host reads the
same dataclass back from the Envelope and applies it to the session. The Envelope layout is
unchanged: a change of exactly one kind travels as its own request (EnableToolsRequest,
DisableToolsRequest, SetAllowedRequest, SetBlockedRequest), anything else as a
BatchUpdateRequest (where an empty allow or block list means "not set").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from protomcp_sdk.wire import envelope_pb2 as pb

Names = tuple[str, ...]

_SINGLE = (  # field of ToolListChange, Envelope oneof name (its message has `tool_names`)
    ("enable", "enable_tools"),
    ("disable", "disable_tools"),
    ("allow", "set_allowed"),
    ("block", "set_blocked"),
)
CONTROL_KINDS = frozenset({kind for _, kind in _SINGLE} | {"batch"})
"""The Envelope ``msg`` kinds that carry a ToolListChange."""


def _names(names: Iterable[str] | None) -> Names | None:
    if names is None:
        return None
    if isinstance(names, str):
        raise TypeError(f"tool names must be a list of strings, not the string {names!r}")
    return tuple(names)


@dataclass(frozen=True, slots=True)
class ToolListChange:
    """Applied in this order, atomically: a new allowlist or blocklist (None: keep the mode),
    then the enables, then the disables. None means "not set"."""

    enable: Names | None = None
    disable: Names | None = None
    allow: Names | None = None
    block: Names | None = None

    @classmethod
    def of(
        cls,
        *,
        enable: Iterable[str] | None = None,
        disable: Iterable[str] | None = None,
        allow: Iterable[str] | None = None,
        block: Iterable[str] | None = None,
    ) -> ToolListChange:
        """From any iterables of names (a bare string is refused: it is not a list of names)."""
        return cls(_names(enable), _names(disable), _names(allow), _names(block))

    @property
    def empty(self) -> bool:
        return not (self.enable or self.disable or self.allow or self.block)

    def envelope(self, call_id: str = "") -> pb.Envelope:
        """The Envelope request that asks the host for this change (for the call `call_id`)."""
        fields = {name: getattr(self, name) for name, _ in _SINGLE}
        given = [name for name, value in fields.items() if value is not None]
        if len(given) == 1:
            for name, kind in _SINGLE:
                if name == given[0]:
                    envelope = pb.Envelope(call_id=call_id)
                    request = getattr(envelope, kind)
                    request.SetInParent()  # sent even when it names no tool
                    request.tool_names.extend(fields[name] or ())
                    return envelope
        batch = pb.BatchUpdateRequest(
            enable=list(self.enable or ()),
            disable=list(self.disable or ()),
            allow=list(self.allow or ()),
            block=list(self.block or ()),
        )
        return pb.Envelope(call_id=call_id, batch=batch)

    @classmethod
    def from_envelope(cls, envelope: pb.Envelope) -> ToolListChange | None:
        """The change an Envelope request asks for; None when it is not a tool-list change."""
        kind = envelope.WhichOneof("msg")
        for name, single in _SINGLE:
            if kind == single:
                return cls(**{name: tuple(getattr(envelope, single).tool_names)})
        if kind == "batch":
            batch = envelope.batch
            return cls(
                enable=tuple(batch.enable),
                disable=tuple(batch.disable),
                allow=tuple(batch.allow) or None,
                block=tuple(batch.block) or None,
            )
        return None

    def write_to(self, response: pb.CallToolResponse) -> None:
        """Attach this change to a call's result (applied by the host after the call). A
        result carries enables and disables only."""
        if self.allow is not None or self.block is not None:
            raise ValueError("a tool result can enable and disable tools, not set an allowlist or blocklist")
        response.enable_tools.extend(self.enable or ())
        response.disable_tools.extend(self.disable or ())

    @classmethod
    def from_response(cls, response: pb.CallToolResponse) -> ToolListChange | None:
        """The change a call's result asks for, or None."""
        if not response.enable_tools and not response.disable_tools:
            return None
        return cls(enable=tuple(response.enable_tools), disable=tuple(response.disable_tools))
