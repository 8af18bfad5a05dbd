"""What a tool process asks of the host over its channel, beside answering: requests for the
client of a running call (sampling, elicitation, roots), tool-list control of that call's
session, its caller's user state, and middleware registration. Each is answered with its own
request id, exactly once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from protomcp_host.processes.events import ProcessEvents, Refused
from protomcp_host.processes.open_requests import OpenRequests
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire import user_state

# The Envelope requests a tool process makes for the client (sampling, elicitation, roots):
# (MCP method, the answer's field).
CLIENT_REQUESTS = {
    "sampling_request": ("sampling/createMessage", "sampling_response"),
    "elicit_request": ("elicitation/create", "elicit_response"),
    "list_roots_request": ("roots/list", "list_roots_response"),
}
CONTROL_REQUESTS = (
    "enable_tools",
    "disable_tools",
    "set_allowed",
    "set_blocked",
    "get_active_tools",
    "batch",
)

NO_CALL = "ctx.user_state works only during a tool call (or a read or prompt) that is still running"


class Asks:
    """Answers what one tool process asks; `send` writes a frame to it."""

    def __init__(
        self, send: Callable[[pb.Envelope], None], requests: OpenRequests, events: ProcessEvents
    ) -> None:
        self.send = send
        self.requests = requests
        self.events = events
        self.middleware: list[pb.RegisterMiddlewareRequest] = []  # registered right after Hello
        self.states_waiting = 0  # its user_state requests not answered yet (at most MAX_IN_FLIGHT)

    def client_request(self, envelope: pb.Envelope) -> None:
        """Sampling, elicitation or roots, asked during a request: for the client session it
        serves (its leg); answered with the same request id, exactly once."""
        kind = envelope.WhichOneof("msg") or ""
        request_id = envelope.request_id

        def reply(result: dict[str, Any] | None, error: str | None) -> None:
            self.send(client_reply(kind, request_id, result, error))

        method, message = CLIENT_REQUESTS[kind][0], getattr(envelope, kind)
        leg = self.requests.legs.get(envelope.call_id) if envelope.call_id else None
        if leg is None:
            reply(None, f"{method} can only be asked during a tool call that is still running")
            return
        params_json = getattr(message, "params_json", "")
        params = orjson.loads(params_json) if params_json else {}
        params = params if isinstance(params, dict) else {}
        leg.ask_client(method, params, message.timeout or None, reply, getattr(message, "key", ""))

    def register_middleware(self, envelope: pb.Envelope) -> None:
        self.middleware.append(envelope.register_middleware)
        reply = pb.RegisterMiddlewareResponse(success=True)
        self.send(pb.Envelope(request_id=envelope.request_id, register_middleware_response=reply))

    def control(self, envelope: pb.Envelope) -> None:
        """A tool-list control request: applied to the session of the running call it names,
        answered with the tools active there; no such call, no change (an error answer)."""
        leg = self.requests.legs.get(envelope.call_id) if envelope.call_id else None
        if leg is None:
            self._reply_control(
                envelope.request_id,
                error="tool-list control works only during a tool call that is still running "
                "(it changes the tools of the session that made the call)",
            )
            return
        try:
            names = leg.control(envelope)
        except Refused as exc:
            self._reply_control(envelope.request_id, error=str(exc))
        else:
            self._reply_control(envelope.request_id, names)

    def user_state(self, envelope: pb.Envelope) -> None:
        """ctx.user_state: the state of the caller of the running request it names (the host
        knows who that is; the process never says), served by the host; answered once."""
        request_id = envelope.request_id
        leg = self.requests.legs.get(envelope.call_id) if envelope.call_id else None
        if leg is None or not leg.live:
            self._reply_state(request_id, pb.UserStateResponse(error=NO_CALL))
            return
        if self.states_waiting >= user_state.MAX_IN_FLIGHT:  # (a flood: each waiting one costs memory)
            self._reply_state(request_id, pb.UserStateResponse(error=user_state.busy()))
            return
        self.states_waiting += 1

        def reply(answer: pb.UserStateResponse) -> None:
            self.states_waiting -= 1
            self._reply_state(request_id, answer)

        try:
            self.events.user_state(leg.caller, envelope.user_state_request, reply)
        except BaseException:  # (the channel answers it, reporting why)
            self.states_waiting -= 1
            raise

    def _reply_state(self, request_id: str, answer: pb.UserStateResponse) -> None:
        self.send(pb.Envelope(request_id=request_id, user_state_response=answer))

    def refuse(self, kind: str, envelope: pb.Envelope, message: str) -> bool:
        """Answer a request of `kind` with the error `message`; False if `kind` is not asked here."""
        if kind == "user_state_request":
            self._reply_state(envelope.request_id, pb.UserStateResponse(error=message))
        elif kind in CONTROL_REQUESTS:
            self._reply_control(envelope.request_id, error=message)
        elif kind in CLIENT_REQUESTS:
            self.send(client_reply(kind, envelope.request_id, None, message))
        else:
            return False
        return True

    def _reply_control(self, request_id: str, names: list[str] | None = None, error: str = "") -> None:
        reply = pb.ActiveToolsResponse(tool_names=names or [], error=error)
        self.send(pb.Envelope(request_id=request_id, active_tools=reply))


def client_reply(kind: str, request_id: str, result: dict[str, Any] | None, error: str | None) -> pb.Envelope:
    """The answer frame to a tool process's request for the client."""
    reply_kind = CLIENT_REQUESTS[kind][1]
    if reply_kind == "list_roots_response":
        if error is not None:
            response: Any = pb.ListRootsResponse(is_error=True, error=error)
        else:
            roots = result.get("roots", []) if result else []
            response = pb.ListRootsResponse(roots_json=orjson.dumps(roots).decode())
    else:
        response_type = pb.SamplingResponse if reply_kind == "sampling_response" else pb.ElicitResponse
        if error is not None:
            response = response_type(is_error=True, error=error)
        else:
            response = response_type(result_json=orjson.dumps(result).decode())
    envelope = pb.Envelope(request_id=request_id)
    getattr(envelope, reply_kind).CopyFrom(response)
    return envelope
