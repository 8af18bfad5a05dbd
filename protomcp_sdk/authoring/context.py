"""The marker of the per-call context: a parameter annotated with a subclass of
:class:`CallContext` (``protomcp_sdk.Context``, made by the tool process) is injected, not an
argument of the schema. Lives here so schemas need not import the runtime."""

from __future__ import annotations


class CallContext:
    """Base class of ``protomcp_sdk.Context``; annotate a parameter with ``Context``."""

    __slots__ = ()
