"""Rate limits per caller: `--rate-limit TOOL|*=N/unit` and `@tool(rate_limit=...)`.

A call to a tool with a limit is counted before it reaches the tool's process (after its
arguments were validated: a malformed call costs nothing), in the store, so every host and
worker of one `--store` counts on one log: at most N calls of each principal in any window of
the unit's length (a sliding window, exact under concurrency). A call over it ends at once as an
`isError` result that says which limit it hit and in how many seconds to retry, with
`_meta["protomcp/error"] = {"code": "rate_limited", "retryable": true, "retryAfter": seconds}`.

Who counts as one principal: the signed-in user (the token's `iss` and `sub`, over HTTP with
OAuth; named by protocol/principals.py, as for sessions and ctx.user_state); every caller
without one — stdio, a shared `--auth-token`, no authentication, a token without `sub` — is the
one principal "anonymous", so there the limit holds for all of them together.

A store that cannot answer (Redis down, or slower than STORE_WAIT) lets the call through and
says so on stderr, once per outage: a limit protects the service, and an outage of the store
should not also take down every limited tool (the choice of Envoy's and Kong's limiters).

Cost: a tool without a limit pays one attribute test (Dispatcher.execute). With the memory store
the check is synchronous; with Redis it is one script round trip (EVALSHA).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from collections.abc import Callable, Container, Mapping
from typing import Any, Protocol

import anyio
import orjson

from protomcp_host.protocol.principals import principal_of as signed_in
from protomcp_host.protocol.session import Call, ToolAnswer
from protomcp_host.telemetry import metrics
from protomcp_sdk.wire.rates import Rate, parse_rate

ANONYMOUS = "anonymous"  # the principal of every caller that has not signed in
EVERY_TOOL = "*"
STORE_WAIT = 2.0  # seconds a check waits for the store before the call goes on unchecked
REFUSED = "rate_limited"  # the code in the refusal's _meta["protomcp/error"]
REPORT_EVERY = 60.0  # seconds: the first REPORT_BURST refusals of each window are written one
REPORT_BURST = 10  # by one on stderr; the rest are summed in one line when the window ends
MAX_KEYS = 10_000  # store keys remembered (_key) before the memo starts again


class Counts(Protocol):
    """What counts the calls: the store (store/base.py's rate-limit methods)."""

    def take_now(self, key: str, limit: int, window: float) -> float | None: ...
    async def take(self, key: str, limit: int, window: float) -> float: ...


class Checked(Protocol):
    """The call being checked (a calls.execution.Execution): it goes on, or ends refused."""

    call: Call
    finished: bool  # (ended while the store answered: cancelled, the host stopping)

    def start(self) -> None: ...
    def finish(self, answer: ToolAnswer, effects: None) -> None: ...


Spawn = Callable[..., object]  # runs a task in the host's task group


def principal_of(auth: Mapping[str, Any] | None) -> str:
    """Whose calls a limit counts: the signed-in subject (protocol/principals.py), else ANONYMOUS
    (every caller that names no subject, together)."""
    return signed_in(auth) or ANONYMOUS


def rate_key(rate: Rate, tool: str, principal: str) -> str:
    """The store's key of one tool's log for one principal: the tool name's length first, so
    no tool name and principal (both may hold ':') spell another pair's key."""
    return f"rate:{rate.period:g}:{len(tool)}:{tool}:{principal}"


def retry_text(seconds: float) -> str:
    """Seconds to wait, rounded up: tenths under ten seconds, whole seconds above."""
    if seconds < 10:
        return f"{math.ceil(seconds * 10) / 10:g}"
    return f"{math.ceil(seconds)}"


def refusal(tool: str, rate: Rate, wait: float) -> ToolAnswer:
    """The isError result of a call over `rate`: readable by the model, with the wait in _meta."""
    after = retry_text(wait)
    text = (
        f"Rate limit reached: tool '{tool}' allows {rate.calls} call{'s' * (rate.calls != 1)} per "
        f"{rate.unit} per caller; retry in {after} second{'s' * (after != '1')}."
    )
    content = orjson.dumps([{"type": "text", "text": text}])
    error = {"code": REFUSED, "retryable": True, "retryAfter": float(after)}
    return ToolAnswer([content], is_error=True, trusted=True, meta=orjson.dumps({"protomcp/error": error}))


class RateLimits:
    """The limits of one host: which tool has which (rate_of), and each call checked (admit)."""

    def __init__(self, given: Mapping[str, Rate], store: Counts, report: Callable[[str], None]) -> None:
        self.given = dict(given)  # --rate-limit: by tool name, EVERY_TOOL for the rest
        self.store = store
        self.report = report
        self._log = RefusalLog(report)
        self._store_down = False
        self._keys: dict[tuple[float, str, str], str] = {}  # the store keys in use (_key)

    def rate_of(self, name: str, declared: str) -> Rate | None:
        """Tool `name`'s limit: its own --rate-limit, else its @tool(rate_limit=...) (`declared`),
        else --rate-limit '*'; None: not limited."""
        rate = self.given.get(name)
        if rate is not None:
            return rate
        if declared:
            try:
                return parse_rate(declared)
            except ValueError as exc:  # (not our SDK's: it checks when the tool is declared)
                self.report(f"protomcp: tool '{name}': {exc}; its own limit is ignored")
        return self.given.get(EVERY_TOOL)

    def unserved(self, served: Container[str]) -> list[str]:
        """The tools --rate-limit names that are not among those `served` (a typo, say: the tool
        it meant would go unlimited), in the order given."""
        return [name for name in self.given if name != EVERY_TOOL and name not in served]

    def admit(self, execution: Checked, rate: Rate, spawn: Spawn | None) -> None:
        """Count the call: it goes on (execution.start) or ends refused; `spawn` runs the wait
        for a store that answers asynchronously."""
        call = execution.call
        principal = ANONYMOUS if call.auth is None else principal_of(call.auth)
        key = self._keys.get((rate.period, call.tool.name, principal)) or self._key(
            rate, call.tool.name, principal
        )
        wait = self.store.take_now(key, rate.calls, rate.period)
        if wait is None:
            if spawn is None:  # (no task group yet: nothing to wait in)
                execution.start()
            else:
                spawn(self._ask, execution, key, rate, principal)
        elif wait <= 0.0:  # (under its limit: the usual case)
            execution.start()
        else:
            self._decided(execution, rate, principal, wait)

    def _key(self, rate: Rate, tool: str, principal: str) -> str:
        """rate_key, made once per (window, tool, principal) in use (admit looks it up first):
        formatting it was most of what an admitted call cost with the memory store."""
        if len(self._keys) >= MAX_KEYS:  # (bounded whatever principals come and go)
            self._keys.clear()
        key = self._keys[(rate.period, tool, principal)] = rate_key(rate, tool, principal)
        return key

    async def _ask(self, execution: Checked, key: str, rate: Rate, principal: str) -> None:
        try:
            with anyio.fail_after(STORE_WAIT):
                wait = await self.store.take(key, rate.calls, rate.period)
        except Exception as exc:  # the store's trouble must not fail the call (nor the host)
            self._unchecked(exc)
            wait = 0.0
        else:
            if self._store_down:
                self._store_down = False
                self.report("protomcp: rate limits are counted again")
        if not execution.finished:  # (cancelled while the store answered: nothing to do)
            self._decided(execution, rate, principal, wait)

    def _decided(self, execution: Checked, rate: Rate, principal: str, wait: float) -> None:
        if wait <= 0.0:
            execution.start()
            return
        tool = execution.call.tool.name
        metrics.rate_limit_refused(tool)
        self._log.refused(tool, principal, rate, wait)
        execution.finish(refusal(tool, rate, wait), None)

    def _unchecked(self, exc: BaseException) -> None:
        if not self._store_down:
            self._store_down = True
            why = str(exc) or f"no answer within {STORE_WAIT:g}s"
            self.report(
                f"protomcp: rate limits are not counted while the store cannot answer ({why}): calls go on"
            )


class RefusalLog:
    """Refused calls on stderr: the first REPORT_BURST of each window one line each, the rest
    summed by tool in one line when the window ends (a flood costs a few lines a minute)."""

    def __init__(self, log: Callable[[str], None], clock: Callable[[], float] = time.monotonic) -> None:
        self.log = log
        self.clock = clock
        self._window_start = float("-inf")
        self._written = 0
        self._held: Counter[str] = Counter()
        self._timer: asyncio.TimerHandle | None = None

    def refused(self, tool: str, principal: str, rate: Rate, wait: float) -> None:
        now = self.clock()
        if now - self._window_start >= REPORT_EVERY:
            self.flush()
            self._window_start = now
        if self._written < REPORT_BURST:
            self._written += 1
            self.log(
                f"protomcp: rate limit {rate} of tool '{tool}' refused a call of {principal} "
                f"(retry in {retry_text(wait)}s)"
            )
            return
        self._held[tool] += 1
        if self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop (a unit test): the next refusal after the window flushes
                return
            self._timer = loop.call_later(self._window_start + REPORT_EVERY - now, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._held:
            tools = ", ".join(f"{count} of '{tool}'" for tool, count in self._held.most_common())
            total = sum(self._held.values())
            self.log(f"protomcp: rate limits refused {total} more calls in {REPORT_EVERY:g}s: {tools}")
        self._held.clear()
        self._written = 0
        self._window_start = float("-inf")
