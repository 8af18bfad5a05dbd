"""`protomcp doctor` for upstream MCP servers: connect once, list what they offer, disconnect."""

from __future__ import annotations

from typing import Any

import anyio

from protomcp_host.processes.events import Loaded, StateReply
from protomcp_host.settings import RunSettings
from protomcp_host.upstream.spec import EXTRA_HINT, UpstreamSpec
from protomcp_sdk.wire import envelope_pb2 as pb


class _Offers:
    """ProcessEvents that keeps what the upstream offered and what went wrong."""

    share_output = False

    def __init__(self) -> None:
        self.offer: Loaded | None = None
        self.problems: list[str] = []

    def loaded(self, label: str, offer: Loaded) -> None:
        self.offer = offer

    def output(self, label: str, stream: str, line: str) -> None: ...
    def echo(self, label: str, line: str) -> None: ...
    def log(self, label: str, level: str, logger: str, data: Any) -> None: ...
    def logged(self, label: str, level: str, logger: str, data: Any) -> None: ...

    def problem(self, message: str) -> None:
        self.problems.append(message)

    def stale(self, label: str, error: str) -> None: ...
    def unloaded(self, label: str, error: str) -> None: ...
    def notice(self, label: str, envelope: pb.Envelope) -> None: ...
    def user_state(
        self, caller: dict[str, Any] | None, request: pb.UserStateRequest, reply: StateReply
    ) -> None:
        reply(pb.UserStateResponse(error="no user state here"))  # (an upstream's calls never ask)


Report = tuple[bool, str, str, str]
"""What doctor shows: (ok, text, fix, detail)."""


async def check_upstream(spec: UpstreamSpec) -> Report:
    """Connect to the upstream as `run` would (within run's --startup-timeout default); say what
    it offers or why it cannot be served."""
    from protomcp_host.upstream.errors import UpstreamError
    from protomcp_host.upstream.settings import UpstreamSettings
    from protomcp_host.upstream.source import Upstream

    target = spec.url or " ".join(spec.command)
    offers = _Offers()
    upstream = Upstream(spec, offers, UpstreamSettings(startup_timeout=RunSettings.startup_timeout))
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(upstream.run)
            await upstream.stop(0)
    except (UpstreamError, BaseExceptionGroup) as exc:
        while isinstance(exc, BaseExceptionGroup):
            exc = exc.exceptions[0]
        fix = (
            EXTRA_HINT
            if "client library" in str(exc)
            else (
                "check the command runs an MCP server on stdio"
                if not spec.is_http
                else "check the URL (and --upstream-token-env) with an MCP client"
            )
        )
        return (False, f"upstream {spec.name} ({target}) cannot be served", fix, str(exc))
    offer = offers.offer
    assert offer is not None
    counts = f"{len(offer.tools)} tools"
    if offer.resources is not None and offer.prompts is not None:
        counts += f", {len(offer.resources.resources)} resources, {len(offer.prompts.prompts)} prompts"
    name = f" '{upstream.server_name}'" if upstream.server_name else ""
    return (
        True,
        f"upstream {spec.name}{name} ({target}): {counts}, served as {spec.namespace}<name>",
        "",
        "",
    )
