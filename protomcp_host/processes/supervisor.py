"""Keeps one tool file served: starts its ToolProcess, replaces it after a crash (with
bounded exponential backoff) or on reload (blue/green), and routes calls to it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.abc

from protomcp_host.processes.channel import Channel, ChannelError
from protomcp_host.processes.events import Leg, ProcessEvents
from protomcp_host.processes.launch import Launched, label_of
from protomcp_host.processes.settings import ProcessSettings
from protomcp_host.processes.tool_process import LoadError, ToolProcess, ToolProcessError
from protomcp_sdk.wire import envelope_pb2 as pb


class Backoff:
    """Restart delays 0.1 s, 0.2 s, ... up to `cap`; reset once a process ran `stable` seconds."""

    def __init__(self, base: float = 0.1, cap: float = 10.0, stable: float = 30.0) -> None:
        self.base, self.cap, self.stable = base, cap, stable
        self.failures = 0

    def next_delay(self, uptime: float) -> float:
        if uptime >= self.stable:
            self.failures = 0
        delay = min(self.cap, self.base * 2**self.failures)
        self.failures += 1
        return delay


class Supervisor:
    def __init__(
        self,
        file: Path,
        events: ProcessEvents,
        settings: ProcessSettings,
        *,
        launched: Launched | None = None,
    ) -> None:
        self.file = file
        self.label = label_of(file)
        self.events = events
        self.settings = settings
        self.current: ToolProcess | None = None
        self.load_error: str | None = None  # dev: why the file has not loaded yet (no process serves it)
        self._standby: ToolProcess | None = None
        self._standby_starting = False  # one standby at a time: a second would idle until exit
        self._standby_backoff = Backoff()  # a standby that keeps dying is replaced ever more slowly
        self._launched = launched  # a first process the CLI started early, to adopt
        self.backoff = Backoff()
        self.reloads = 0  # successful reloads, for diagnostics and tests
        self.declared_files: tuple[Path, ...] = ()  # its resources' files= (dev watches them)
        self.on_reloaded: Callable[[], None] | None = None  # a pool's leader: the others follow
        self._ready = asyncio.Event()
        self._wake = asyncio.Event()
        self._reload_requested = False
        self._stopping = False
        self._started_at = 0.0
        self._tg: anyio.abc.TaskGroup | None = None

    # -- lifecycle -----------------------------------------------------------------
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start the first tool process (errors propagate), then keep the file served."""
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                await self._replace()
            except (ToolProcessError, ValueError) as exc:
                if self.settings.wait_for_fix:
                    self.events.problem(
                        f"{exc}\n{self.label} serves no tools until it loads: save it to retry"
                    )
                    self._not_loaded(str(exc))
                    task_status.started()
                else:
                    failure = exc  # raised below, outside the task group, so it is not wrapped
                    tg.cancel_scope.cancel()
            else:
                task_status.started()
            while failure is None:
                await self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    break
                if self.current is None:  # never loaded: only a save can help
                    if self._reload_requested:
                        self._reload_requested = False
                        await self._first_load()
                elif self.current.death is not None:
                    await self._restart()
                elif self._reload_requested:
                    self._reload_requested = False
                    await self._reload()
            tg.cancel_scope.cancel()
        if failure is not None:
            raise failure

    def request_reload(self) -> None:
        """Load the file again in a new process; coalesces requests made during a reload."""
        self._reload_requested = True
        self._wake.set()

    async def stop(self, grace: float) -> None:
        """Let in-flight calls finish (up to `grace` seconds), then stop the process."""
        self._stopping = True
        self._ready.clear()
        if self._standby is not None:
            self._standby.kill()
        current, self.current = self.current, None
        if current is not None:
            await current.stop(grace)
        self._wake.set()

    # -- replacing the process -----------------------------------------------------
    def _new_process(self, standby: bool) -> ToolProcess:
        return ToolProcess(self.file, self.events, self.settings.launch, standby=standby)

    async def _prepare_standby(self) -> None:
        assert self._tg is not None
        if self._standby_starting or (self._standby is not None and self._standby.death is None):
            return  # saves and crashes in quick succession: the one standby serves them all
        self._standby_starting = True
        process = self._new_process(standby=True)
        try:
            await self._tg.start(process.run)
        except ToolProcessError as exc:
            self.events.problem(f"cannot start a standby tool process: {exc}")
            return
        finally:
            self._standby_starting = False
        if self._stopping:
            process.kill()
            return
        self._standby = process
        self._tg.start_soon(self._replace_standby_when_lost, process, time.monotonic())

    async def _replace_standby_when_lost(self, process: ToolProcess, started: float) -> None:
        """A standby that dies while it idles (killed, out of memory) is replaced, after a growing
        delay if it keeps dying: otherwise the next save would find none and load cold."""
        await process.exited.wait()
        if self._standby is not process or self._stopping:
            return  # it was activated (a reload or restart took it) or the host stops
        self._standby = None
        await anyio.sleep(self._standby_backoff.next_delay(time.monotonic() - started))  # (stop cancels it)
        if not self._stopping:
            await self._prepare_standby()

    async def _spawn(self) -> ToolProcess:
        assert self._tg is not None
        process, self._standby = self._standby, None
        if process is not None and process.death is None:
            process.activate()
        else:
            process = self._new_process(standby=False)
            launched, self._launched = self._launched, None
            await self._tg.start(process.run, launched)
        if self.settings.standby and not self._stopping:
            self._tg.start_soon(self._prepare_standby)
        try:
            offer = await process.handshake(self.settings.startup_timeout)
            self.events.loaded(self.label, offer)  # may reject it (e.g. a name clash)
            self.declared_files = offer.declared_files
        except BaseException:
            process.kill()
            with anyio.CancelScope(shield=True):
                await process.exited.wait()
            raise
        return process

    async def _replace(self) -> None:
        process = await self._spawn()
        old, self.current = self.current, process
        self._started_at = time.monotonic()
        self._ready.set()
        self._tell("started")
        assert self._tg is not None
        self._tg.start_soon(self._watch, process)
        if self.settings.heartbeat_timeout > 0:
            self._tg.start_soon(self._heartbeat, process)
        if old is not None:
            self._tg.start_soon(old.stop, self.settings.retire_timeout)

    async def _heartbeat(self, process: ToolProcess) -> None:
        """Ask the serving process every so often whether it is alive and has threads to spare.

        One that does not answer (an async tool blocking its event loop) has its calls failed,
        naming the tool, and is replaced; one whose stuck threads starve a tool is replaced
        blue/green (new calls go to a fresh process, the old one drains, bounded)."""
        timeout = self.settings.heartbeat_timeout
        while process is self.current and process.death is None:
            with anyio.move_on_after(timeout / 3):
                await process.exited.wait()
            if process.exited.is_set() or process is not self.current or process.channel is None:
                return
            try:
                answer = await process.channel.request(pb.Envelope(heartbeat=pb.Heartbeat()), timeout=timeout)
            except TimeoutError:
                channel = process.channel
                if channel.blocked_tool:
                    culprit = f"tool '{channel.blocked_tool}' blocked its event loop"
                else:
                    culprit = "running: " + (", ".join(channel.open_requests.running()) or "nothing")
                reason = (
                    f"{self.label}: tool process stopped answering for {timeout:g}s ({culprit}); "
                    "it was replaced"
                )
                self.events.problem(reason)
                self._ready.clear()  # calls from now on wait for the replacement
                process.death = reason
                channel.shut(reason)  # its calls fail now, with the reason
                process.kill()
                return
            except ChannelError:
                return  # it died: _watch sees to that
            state = answer.heartbeat_reply
            if state.starving and process is self.current and not self._stopping:
                self.events.problem(
                    f"{self.label}: calls to {', '.join(state.stuck_tools)} ignored cancellation and hold "
                    f"{state.threads_busy} of {state.threads_limit} call threads; starting a fresh tool "
                    "process (the old one finishes its other calls, bounded)"
                )
                self.request_reload()
                return

    async def _watch(self, process: ToolProcess) -> None:
        await process.unreachable.wait()
        if process is self.current and not self._stopping:
            self._ready.clear()  # calls from now on wait for the replacement (or another member)
        await process.exited.wait()
        if process is self.current and not self._stopping:
            self._ready.clear()
            self._wake.set()

    async def _restart(self) -> None:
        dead = self.current
        reason = (
            (dead.obituary or dead.death)
            if dead is not None and dead.death
            else f"{self.label}: tool process is not running"
        )
        delay = (
            0.0 if self._reload_requested else self.backoff.next_delay(time.monotonic() - self._started_at)
        )
        reloading, self._reload_requested = self._reload_requested, False
        self.events.problem(f"{reason}\nrestarting in {delay:.1f}s")
        self._tell("crashed")
        with anyio.move_on_after(delay):
            await self._stop_requested()
        if self._stopping:
            return
        # The load below reads the file as it is now: a save made so far is served by it; one made
        # while it loads stays requested (the file may have changed after it was read).
        reloading = reloading or self._reload_requested
        self._reload_requested = False
        try:
            await self._replace()
        except (ToolProcessError, ValueError) as exc:
            self.events.problem(str(exc))
            self._started_at = time.monotonic()
            self._wake.set()  # try again after the next backoff delay
        else:
            if reloading:
                self._reloaded()

    async def _first_load(self) -> None:
        try:
            await self._replace()
        except (ToolProcessError, ValueError) as exc:
            self.events.problem(f"{exc}\n{self.label} still serves no tools: save it to retry")
            self._not_loaded(str(exc))
        else:
            self.load_error = None

    def _not_loaded(self, error: str) -> None:
        """dev: the file failed to load and no version of it serves: calls fail at once with
        the error (rather than wait for a restart that only a save brings)."""
        self.load_error = error
        self.events.unloaded(self.label, error)

    async def _reload(self) -> None:
        try:
            await self._replace()
        except (ToolProcessError, ValueError) as exc:
            self.events.problem(f"{exc}\nthe previous version of {self.label} keeps serving")
            self.events.stale(self.label, str(exc))
            return
        self._reloaded()

    def _reloaded(self) -> None:
        self.reloads += 1
        self._tell("reloaded")
        if self.on_reloaded is not None:
            self.on_reloaded()

    def _tell(self, event: str) -> None:
        if self.settings.lifecycle is not None:
            self.settings.lifecycle(self.label, event)

    async def _stop_requested(self) -> None:
        while not self._stopping:
            await self._wake.wait()
            self._wake.clear()
        self._wake.set()

    @property
    def ready(self) -> bool:
        """A process is serving (not restarting, not stopping)."""
        return self._ready.is_set()

    async def wait_ready(self) -> None:
        """Until a process serves (unbounded: the caller bounds it)."""
        await self._ready.wait()

    def ready_channel(self) -> Channel | None:
        """The serving process's frame channel, if it serves now (None while it restarts)."""
        process = self.current
        if process is None or process.death is not None or not self._ready.is_set():
            return None
        return process.channel

    async def channel(self) -> Channel | None:
        """The serving process's frame channel, waiting (bounded) for a restart first."""
        if not self._stopping and not self._ready.is_set():  # (a restart: no timer per call)
            with anyio.move_on_after(self.settings.restart_wait):
                await self._ready.wait()
        return self.ready_channel()

    # -- requests ---------------------------------------------------------------------
    def start(self, envelope: pb.Envelope, leg: Leg) -> None:
        """Send a request to the serving tool process, waiting (bounded) for a restart first."""
        process = self.current
        if process is not None and process.death is None and self._ready.is_set():
            process.start(envelope, leg)
        elif process is None and self.load_error is not None:
            leg.failed(f"{self.load_error}\nFix {self.label} and save it: its tools then replace this one.")
        elif self._tg is None or self._stopping:
            leg.failed(f"{self.label}: tool process is not running")
        else:
            self._tg.start_soon(self._start_when_ready, envelope, leg)

    def notify(self, envelope: pb.Envelope) -> None:
        """A notification for the serving process (none is sent while it restarts)."""
        process = self.current
        if process is not None and process.death is None:
            process.send(envelope)

    async def _start_when_ready(self, envelope: pb.Envelope, leg: Leg) -> None:
        try:
            with anyio.move_on_after(self.settings.restart_wait):
                await self._ready.wait()
        finally:  # also when the host stops meanwhile: the request must still get an answer
            process = self.current
            if not leg.live:
                pass  # its request ended meanwhile: nothing to send
            elif process is not None and process.death is None and self._ready.is_set():
                process.start(envelope, leg)
            else:
                leg.failed(f"{self.label}: tool process is not running (it is restarting; try again shortly)")


__all__ = ["Backoff", "LoadError", "Supervisor", "ToolProcessError"]
