"""Testing tool files: a client over the real host and tool process, and a Context stand-in.

End to end, as an AI client would see the tools::

    from protomcp_sdk.testing import Client

    async def test_add():
        async with Client("tools.py") as c:
            result = await c.call("add", a=1, b=2)
            assert result.structured == {"result": 3} and not result.is_error

`Client` starts ``python -m protomcp_host run FILE...`` as a subprocess and speaks MCP
(JSON-RPC over its stdio) to it, so arguments are validated, results encoded and errors
reported exactly as in production. It depends on nothing but the standard library and
orjson (the SDK never imports the host: the host runs in its own process).

Modules: ``client`` (Client, CallResult), ``connection`` (the host subprocess and its
JSON-RPC lines), ``answers`` (the canned answers), ``recording`` (RecordingContext),
``user_states`` (UserStates: ctx.user_state for RecordingContext) and ``modules``
(load_tool_module).

The client answers the tool's requests to it when given the means, and declares the
matching capabilities: ``Client("tools.py", sampling=fn, elicitation=fn, roots=[...])``.

Unit tests can call a tool function directly with a :class:`RecordingContext`, which keeps
what the tool reported instead of sending it, and answers tool-list control and client
requests itself (with the same ``sampling=``, ``elicitation=``, ``roots=``)::

    tools = load_tool_module("tools.py")
    ctx = RecordingContext()
    assert await tools.count(3, ctx) == "done"
    assert ctx.progress[-1] == (3, 3, "step 3")

Canned answers, shared by both:

- ``sampling``: a str (the model's text answer to every request), or a function (sync or
  async) given the request's MCP params dict, returning a str or a whole
  ``CreateMessageResult`` dict.
- ``elicitation``: a dict (the accepted form content), ``"decline"`` or ``"cancel"``, or a
  function given the params returning one of those (or a whole result dict with ``action``).
- ``roots``: a list of URIs or ``{"uri": ..., "name": ...}`` dicts.
"""

from __future__ import annotations

from protomcp_sdk.testing.client import CallResult, Client, Progress
from protomcp_sdk.testing.connection import ClientError
from protomcp_sdk.testing.modules import load_tool_module
from protomcp_sdk.testing.recording import RecordingContext
from protomcp_sdk.testing.user_states import UserStates

__all__ = [
    "CallResult",
    "Client",
    "ClientError",
    "Progress",
    "RecordingContext",
    "UserStates",
    "load_tool_module",
]
