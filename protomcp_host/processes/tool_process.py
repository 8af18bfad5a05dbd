"""One tool process serving: its lifetime (ChildProcess) joined to its frame channel
(Channel) — start, handshake, calls, death, stop.

A ToolProcess is a single child-process lifetime. It never restarts itself; the Supervisor
replaces a dead or outdated ToolProcess with a new one.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
from collections.abc import Iterable
from pathlib import Path

import anyio
import anyio.abc

from protomcp_host.processes.channel import Channel, ChannelError
from protomcp_host.processes.child import EXIT_WAIT, ChildProcess
from protomcp_host.processes.distribution import DIST_NAME, install_command
from protomcp_host.processes.events import Leg, Loaded, ProcessEvents
from protomcp_host.processes.launch import Launched, label_of
from protomcp_host.processes.pipes import read_into
from protomcp_host.processes.settings import LaunchSettings
from protomcp_host.processes.spool import spool_path_safe
from protomcp_sdk import wire
from protomcp_sdk.wire import envelope_pb2 as pb

EXIT_READ_GRACE = 0.2  # seconds to read what a dead process left in its frame pipe
HELLO_WAIT = 2.0  # seconds to wait for Hello before trying the Envelope spec's own handshake


class ToolProcessError(Exception):
    """The tool process cannot serve: it failed to start, load, answer, or it died."""


class LoadError(ToolProcessError):
    """The tool file failed to import; the message carries the traceback."""


class ToolProcess:
    def __init__(
        self,
        file: Path,
        events: ProcessEvents,
        how: LaunchSettings,
        *,
        standby: bool = False,
    ) -> None:
        self.file = file
        self.label = label_of(file)
        self.python = how.python
        self.events = events
        self.child = ChildProcess(
            file, how, lambda stream, line: events.output(self.label, stream, line), standby=standby
        )
        self.channel: Channel | None = None
        self.exited = anyio.Event()
        # set once nothing more is read from it (its pipe ended, or it died): new calls must go
        # elsewhere or wait for a replacement from then, not only once it is reaped (its output
        # drains first, up to 0.5 s when a child it started holds the pipes)
        self.unreachable = anyio.Event()
        self.death: str | None = None  # why it stopped serving, once it has (what clients see)
        self.obituary: str | None = None  # the same with its last stderr lines, for the host's stderr

    # -- start ---------------------------------------------------------------------
    async def run(
        self,
        launched: Launched | None = None,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Start the process (or adopt one already launched) and serve it until it exits.
        Signals started once the process exists."""
        try:
            launched = self.child.start(launched)
        except OSError as exc:
            raise ToolProcessError(f"{self.label}: cannot start {self.python}: {exc}") from None
        self.channel = channel = Channel(
            self.label, launched.to_child, self.events, spool_dir=launched.spool_dir
        )
        task_status.started()
        try:
            async with anyio.create_task_group() as tg:
                drained = await self.child.pump_output(tg)
                ended = await self._read_frames(launched.from_child)
                self.unreachable.set()
                if ended:
                    channel.end_of_input()
                channel.close()
                await self.child.ensure_exit()
                # Output pipes may be held open by processes the tool started: drain briefly.
                with anyio.move_on_after(0.5):
                    for event in drained:
                        await event.wait()
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._reap()

    async def _read_frames(self, fd: int) -> bool:
        """Feed frames to the channel until the pipe ends or the process is gone. A process
        that forked may leave the pipe open in a child: its death is watched directly, and
        what it wrote before dying is read briefly. True when the pipe ended normally."""
        ended = False
        async with anyio.create_task_group() as frames:

            async def read() -> None:
                nonlocal ended
                await read_into(fd, self._feed)
                ended = True
                frames.cancel_scope.cancel()

            async def watch_exit() -> None:
                await self.child.wait()
                await anyio.sleep(EXIT_READ_GRACE)  # the pipe still holds its last frames
                frames.cancel_scope.cancel()

            frames.start_soon(read)
            frames.start_soon(watch_exit)
        return ended  # (a cancelled read_into closes the fd itself)

    def _feed(self, data: bytes) -> None:
        assert self.channel is not None
        self.channel.feed(data)
        if self.channel.broken is not None and self.death is None:
            self.death = self.channel.broken
            self.child.kill()

    def activate(self) -> None:
        """Tell a standby process to import the tool file now (it then says Hello)."""
        self.send(pb.Envelope(reload=pb.ReloadRequest()))

    async def handshake(self, timeout: float) -> Loaded:
        """Wait for Hello and what the process offers. Raises LoadError or ToolProcessError.

        A process that sends no Hello within HELLO_WAIT may be written to the Envelope
        specification alone, whose handshake is the host's ListToolsRequest: that is sent
        then, and its answer accepted (with its content checked, as from any other SDK)."""
        assert self.channel is not None
        channel = self.channel
        started = anyio.current_time()
        try:
            with anyio.fail_after(min(HELLO_WAIT, timeout)):
                hello = await asyncio.shield(channel.hello)
        except TimeoutError:
            left = max(0.0, timeout - (anyio.current_time() - started))
            try:
                reply = await channel.request(pb.Envelope(list_tools=pb.ListToolsRequest()), timeout=left)
            except TimeoutError:
                self.kill()
                raise ToolProcessError(
                    f"{self.label}: tool process did not finish its handshake within {timeout:g}s"
                ) from None
            except ChannelError:
                hello = channel.hello.result() if channel.hello.done() else None  # it died: why?
            else:
                if not channel.hello.done() or channel.hello.result() is None:
                    return Loaded(list(reply.tool_list.tools), list(channel.middleware))
                hello = channel.hello.result()  # our SDK after all, slow to load (a lifespan): as usual
        self._check_hello(hello)
        try:
            asked = [pb.Envelope(list_tools=pb.ListToolsRequest())]
            if channel.trusted:  # our SDK also lists resources, templates and prompts
                asked += [
                    pb.Envelope(list_resources_request=pb.ListResourcesRequest()),
                    pb.Envelope(list_resource_templates_request=pb.ListResourceTemplatesRequest()),
                    pb.Envelope(list_prompts_request=pb.ListPromptsRequest()),
                ]
            replies = await asyncio.gather(*(channel.request(e, timeout=timeout) for e in asked))
        except ChannelError as exc:
            raise ToolProcessError(str(exc)) from None
        except TimeoutError:
            self.kill()
            raise ToolProcessError(
                f"{self.label}: tool process did not list its tools within {timeout:g}s"
            ) from None
        offer = Loaded(list(replies[0].tool_list.tools), list(channel.middleware))
        if len(replies) == 4:
            assert hello is not None
            offer.resources = replies[1].resource_list_response
            offer.templates = replies[2].resource_template_list_response
            offer.prompts = replies[3].prompt_list_response
            offer.completions = hello.completions
            offer.declared_files = tuple(map(Path, hello.declared_files))
            offer.warnings = list(hello.warnings)
        return offer

    def _check_hello(self, hello: pb.Hello | None) -> None:
        assert self.channel is not None
        if hello is None:
            missing = _missing_sdk_module(self.child.stderr_tail)
            if missing:
                raise ToolProcessError(
                    f"{self.label}: protomcp_sdk is not importable by {self.python} ({missing}); install "
                    f"{DIST_NAME} there ({install_command(self.python)}) or choose another --python"
                )
            raise ToolProcessError(self.death or f"{self.label}: tool process exited during start-up")
        if hello.error:
            raise LoadError(f"{self.label} failed to load:\n{hello.error.rstrip()}")
        self.channel.trusted = hello.sdk_name == "protomcp_sdk"
        if hello.protocol_version != wire.PROTOCOL_VERSION:
            self.kill()
            raise ToolProcessError(
                f"{self.label}: tool process speaks Envelope protocol v{hello.protocol_version}, "
                f"this host speaks v{wire.PROTOCOL_VERSION} (mismatched protomcp_sdk in {self.python}?)"
            )

    # -- calls -----------------------------------------------------------------------
    def start(self, envelope: pb.Envelope, leg: Leg) -> None:
        """Send a request of the calls layer; its answer (or failure) goes to `leg`."""
        if self.channel is None or self.death is not None:
            leg.failed(self.death or f"{self.label}: tool process is not running")
            return
        self.channel.start(envelope, leg)

    def send(self, envelope: pb.Envelope) -> None:
        if self.channel is not None:
            self.channel.send(envelope)

    # -- death and stop ------------------------------------------------------------
    async def _reap(self) -> None:
        """The process is gone: fail what is pending and tell whoever waits."""
        await self.child.reap()
        channel = self.channel
        if channel is not None and channel.spool_dir and spool_path_safe(channel.spool_dir):
            shutil.rmtree(channel.spool_dir, ignore_errors=True)  # left behind if it crashed
        if self.death is None:
            # Clients see its last stderr lines only where there is one client (stdio); over
            # HTTP those lines may be anyone's, so they stay on the host's stderr (the obituary).
            self.obituary = self.child.describe_exit()
            self.death = self.child.describe_exit(tail=self.events.share_output)
        if channel is not None:
            channel.shut(self.death)
        self.unreachable.set()
        self.exited.set()

    async def stop(self, grace: float) -> None:
        """Graceful stop: let its open requests finish (within `grace`: middleware phases and
        answers to its questions still need its input), close its input so it exits, then insist."""
        self.child.stopping = True
        with anyio.move_on_after(grace):
            if self.channel is not None:
                await self.channel.open_requests.drained()
            self.close_input()
            await self.exited.wait()
        self.close_input()
        if not self.exited.is_set():
            self.child.signal_group(signal.SIGTERM)
            with anyio.move_on_after(EXIT_WAIT):
                await self.exited.wait()
        if not self.exited.is_set():
            self.kill()
            await self.exited.wait()

    def close_input(self) -> None:
        if self.channel is not None:
            self.channel.close()

    def kill(self) -> None:
        self.child.kill()


_SDK_MODULES = ("protomcp_sdk", "orjson", "google", "pydantic", "anyio")


def _missing_sdk_module(lines: Iterable[str]) -> str:
    """ "No module named ..." for the SDK or one of its dependencies, from a failed start-up."""
    for line in lines:
        text = line.split("] ", 1)[-1].strip()
        _, found, module = text.partition("No module named ")
        if found and module.strip("'").split(".")[0] in _SDK_MODULES:
            return f"No module named {module}"
    return ""


__all__ = ["LoadError", "ToolProcess", "ToolProcessError"]
