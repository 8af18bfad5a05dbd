"""What a transport needs from the rest of the host, and nothing more: narrow structural interfaces.

Transports move bytes between clients and sessions. They never see `app.Host` or the calls layer's
`Router`; they are typed against these protocols, which `Host` and `Router` satisfy structurally
(no base class, no registration, no wrapper: calls go straight to the real objects, so the hot
path pays nothing for them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.abc

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.catalog import Catalog
from protomcp_host.protocol.features import FeatureCatalog
from protomcp_host.protocol.session import Session

if TYPE_CHECKING:
    from protomcp_host.proto_mcp.codec import Descriptors

Writer = Callable[[bytes, bytes | None], None]
"""Writes one message to the client; the second argument is the id of the client request it
relates to (None: no request, e.g. a log line outside any call), so a transport with several
streams can put it on the right one."""


class RequestMeasure(Protocol):
    """One 2026-07-28 request measured by its endpoint (metrics, the audit log): told once how it
    ended (later calls do nothing)."""

    def answered(self, data: bytes, end: int) -> None:
        """`data` answers it (its id ends at `end`)."""

    def unanswered(self) -> None:
        """It ended unanswered: its client left."""


class Connection(Protocol):
    """One client session as a transport drives it (the calls layer's Router)."""

    session: Session  # the sans-IO protocol state: version, in-flight calls, auth
    on_call_end: Callable[[], None] | None  # called after each call ends (held requests may move)

    def feed(self, line: bytes) -> None:
        """Handle one message (or batch) from the client."""

    def feed_loaded(self, line: bytes, data: Any) -> None:
        """feed() of a line the transport has parsed already (`data`, as orjson parsed it)."""

    async def wait_idle(self) -> None:
        """Return once no call is running."""

    def fail_all(self, message: str) -> None:
        """Answer every running call with an error (its tool process is told to cancel it)."""

    def cancel_all(self) -> None:
        """The client is gone: cancel everything it started, answering nothing."""

    def end_streams(self) -> None:
        """Shutdown: end the streams only the server ends (2026-07-28 listen streams)."""

    def measure(self, request: rpc.Request) -> RequestMeasure | None:
        """2026-07-28: the connection's one request measured (None: metrics and the audit log
        are off)."""


class Sessions(Protocol):
    """What every serving transport needs from the host."""

    ready: anyio.Event  # set once every tool file has loaded (or, in dev, failed to)
    max_in_flight: int  # tool calls one session may have running at once
    startup_error: str | None  # why the tool files did not load (None: they did, or still load)
    catalog: Catalog  # the tools (HTTP checks Mcp-Param-* headers against their schemas)
    features: FeatureCatalog  # resources, templates, prompts (HTTP checks the scopes they need)

    @property
    def descriptors(self) -> Descriptors:
        """The tools as protobuf messages, for proto-mcp clients."""

    def connect(self, write: Writer) -> Connection:
        """A new client session whose messages go to `write`."""

    def connect_modern(self, write: Writer, principal: str = ..., *, measured: bool = False) -> Connection:
        """A connection for modern-era (2026-07-28) requests of `principal` (tool-list state
        is the principal's). `measured`: the transport measures its one request itself
        (Connection.measure), so the connection does not."""

    def disconnect(self, connection: Connection) -> None:
        """The session is over: the host forgets it."""

    def stderr(self, text: str) -> None:
        """One line for the operator (the host's stderr)."""

    async def health(self) -> tuple[bool, dict[str, Any]]:
        """Readiness for a load balancer: (ready, what /healthz shows)."""

    async def wait_tasks(self) -> None:
        """Until no task's call runs outside a session (modern-era tasks): a drain waits for them."""

    def tasks_running(self) -> int:
        """How many such task calls run now."""


class StartStop(Sessions, Protocol):
    """A host the in-process client (`transports.direct`) starts and stops itself."""

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Start the tool processes in `tg`; raises StartupError when one cannot start."""

    async def stop(self, grace: float) -> None:
        """Stop the tool processes (waiting up to `grace` seconds for each)."""
