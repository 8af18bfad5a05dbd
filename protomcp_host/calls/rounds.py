"""The 2026-07-28 input-required round trip (MRTR) on the host's side.

In the modern era a tool's ``ctx.sample`` / ``ctx.elicit`` / ``ctx.list_roots`` does not become
a request to the client: the requests a call makes in one moment (``ROUND_WINDOW``) are
gathered into an ``InputRequiredResult`` that ends the client's request, and the call stays
suspended in its tool process. The result carries a ``requestState`` sealed with AES-GCM: it
binds the principal, the method, the tool name, a digest of the arguments and an expiry, names
the suspension, and carries the answers given so far (bounded). When the client retries with
``inputResponses`` and that state, the suspended call is found (``Rounds``), re-attached to the
new request and its requests are answered by key; one still unanswered (or a new one) makes
another round. A retry that finds no suspended call here (a restart, another host) re-runs the
tool with every answer known so far: the tool process answers requests with a known key itself.
An answer is used once: a call that asks again under the same key asks the client again.

A suspended call keeps its place in the tool process (a sync tool's thread) only for ``HOLD``
seconds, at most ``MAX_SUSPENDED_EACH`` per principal (its own oldest goes first; never another
principal's) and ``MAX_SUSPENDED`` in all: one let go is cancelled, and its retry re-runs it.
A requestState is used once (used_states.py): a second use gets the first use's answer, or a
refusal saying it was used, never a second run. Hosts sharing a bus (``uses.publish``,
``on_bus``) tell each other of each use, so the host that holds the suspended call lets it go
when its retry was served elsewhere.

``ModernRouter`` is the Router of a modern-era connection; everything else a call does
(progress, logs, answers) goes the Router's way.
"""

from __future__ import annotations

import asyncio
import base64
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import orjson

from protomcp_host.calls.execution import Dispatcher, Execution
from protomcp_host.calls.router import LIST_CHANGED_DELAY, Forwarder, Router, Writer, event_table
from protomcp_host.calls.used_states import ClaimUnchecked, Use, UsedStates
from protomcp_host.processes.events import Reply
from protomcp_host.processes.launch import STATE_KEY_ENV
from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.features import CancelForward, Forward
from protomcp_host.protocol.methods import METHODS
from protomcp_host.protocol.modern import ModernSession, Retry, valid_answer
from protomcp_host.protocol.session import Call, CancelCall, TaskCancel, TaskInput
from protomcp_sdk.wire.toollist import ToolListChange

STATE_TTL = 600.0  # seconds a requestState stays valid (a retry after HOLD re-runs the call)
HOLD = 60.0  # seconds a suspended call keeps its place (and a sync tool its thread) for its retry
ROUND_WINDOW = 0.02  # seconds the requests a call makes at once gather into one round
MAX_SUSPENDED = 1000  # suspended calls per host; beyond it a new one is not held (its retry re-runs)
MAX_SUSPENDED_EACH = 16  # suspended calls per principal (at most --max-in-flight); then its oldest goes
MAX_ANSWERS = 64 * 1024  # bytes of answers a requestState carries (beyond: not carried)
OPENING_KEYS = 4  # requestState keys that open tokens: the one in use and the last ones before it
INVALID_STATE = "Invalid or expired requestState"
_ANSWER = b'{"jsonrpc":"2.0","id":'
_AAD = b"protomcp requestState v1"


class StateCodec:
    """Seals and opens requestState tokens (AES-256-GCM; ``v1.`` + base64url)."""

    def __init__(self, key: bytes | None = None) -> None:
        import hashlib  # (not at import: hashlib costs ~0.6 MB, and only the modern era needs it)

        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        if key is None:
            shared = os.environ.get(STATE_KEY_ENV)
            key = hashlib.sha256(shared.encode()).digest() if shared else os.urandom(32)
        self._aead = AESGCM(key)
        self._keys = [key]  # the one that seals first; the ones before it still open
        self._opening = [self._aead]

    def use(self, key: bytes) -> None:
        """Seal with `key` from now on (the shared store's key changed); tokens sealed with the
        last few keys before it still open until they expire."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        if key == self._keys[0]:
            return
        self._aead = AESGCM(key)
        self._keys = [key, *[k for k in self._keys if k != key]][:OPENING_KEYS]
        self._opening = [AESGCM(k) for k in self._keys]

    def seal(self, claims: dict[str, Any]) -> str:
        nonce = os.urandom(12)
        sealed = self._aead.encrypt(nonce, orjson.dumps(claims), _AAD)
        return "v1." + base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("=")

    def open(self, token: str, now: float) -> dict[str, Any] | None:
        """The claims, or None when the token was not sealed here, was changed or has expired."""
        from cryptography.exceptions import InvalidTag

        if not token.startswith("v1.") or len(token) > 1 << 20:
            return None
        body = token[3:]
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except ValueError:
            return None
        for aead in self._opening:
            try:
                claims = orjson.loads(aead.decrypt(raw[:12], raw[12:], _AAD))
                break
            except (ValueError, InvalidTag, orjson.JSONDecodeError):
                continue
        else:
            return None
        if not isinstance(claims, dict) or not isinstance(claims.get("e"), (int, float)) or claims["e"] < now:
            return None
        return claims


def digest(arguments: Any) -> str:
    """What binds a requestState to the request's arguments."""
    import hashlib

    return hashlib.sha256(orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]


@dataclass(slots=True, eq=False)
class Ask:
    method: str
    params: dict[str, Any]
    reply: Reply


@dataclass(slots=True, eq=False)
class Round:
    """One call's input rounds: what it asked and awaits, what it was answered."""

    owner: Any  # the Execution of a call, or the _ForwardLeg of a read or a prompt
    pending: dict[str, Ask] = field(default_factory=dict)
    known: dict[str, Any] = field(default_factory=dict)  # answers given so far, by key
    used: set[str] = field(default_factory=set)  # keys whose answer the call has had (once each)
    gathering: asyncio.TimerHandle | None = None
    suspension: str | None = None  # its id while the call is held for the client's retry
    principal: str = ""
    expiry: asyncio.TimerHandle | None = None
    asked: int = 0


class Rounds:
    """The host's calls in input rounds, and the ones held until their retry."""

    def __init__(self, codec: StateCodec | None = None, per_principal: int = MAX_SUSPENDED_EACH) -> None:
        self._codec = codec  # made at first use: cryptography is imported only then
        self.key: bytes | None = None  # the shared store's key (--store); else env or random
        self.on_miss: Callable[[], None] | None = None  # a requestState did not open (--store re-reads)
        self.per_principal = per_principal
        self.of: dict[Any, Round] = {}  # by owner
        self.suspended: OrderedDict[str, Round] = OrderedDict()  # held, oldest first
        self.held: dict[str, int] = {}  # principal -> its calls in `suspended`
        self.uses = UsedStates()  # each requestState is used once

    @property
    def codec(self) -> StateCodec:
        if self._codec is None:
            self._codec = StateCodec(self.key)
        return self._codec

    def use_key(self, key: bytes) -> None:
        """The shared store's key, read now: it seals from now on (the ones before still open)."""
        self.key = key
        if self._codec is not None:
            self._codec.use(key)

    # -- held calls ----------------------------------------------------------------------
    def suspend(self, round_: Round, sid: str) -> bool:
        """Hold the round's call for its retry under `sid`; False when the host holds as many
        as it may (the call is then let go: its retry runs it again)."""
        principal = round_.principal
        if self.held.get(principal, 0) >= self.per_principal:
            oldest = next(r for r in self.suspended.values() if r.principal == principal)
            self.drop(oldest, f"{self.per_principal} newer calls of its principal wait for input")
        elif len(self.suspended) >= MAX_SUSPENDED:
            return False
        round_.suspension = sid
        self.suspended[sid] = round_
        self.held[principal] = self.held.get(principal, 0) + 1
        return True

    def _unhold(self, round_: Round) -> None:
        sid, round_.suspension = round_.suspension, None
        if sid is not None and self.suspended.pop(sid, None) is not None:
            left = self.held[round_.principal] - 1
            if left:
                self.held[round_.principal] = left
            else:
                del self.held[round_.principal]
        if round_.expiry is not None:
            round_.expiry.cancel()
            round_.expiry = None

    def drop(self, round_: Round, reason: str) -> None:
        """Let a held call go: it is cancelled (a later retry runs it again)."""
        self._unhold(round_)
        round_.owner.cancel(f"the call waiting for input was let go: {reason}")

    def resume(self, sid: Any) -> Round | None:
        round_ = self.suspended.get(sid) if isinstance(sid, str) else None
        if round_ is None:
            return None
        self._unhold(round_)
        return None if round_.owner.finished else round_

    def release(self, owner: Any, reason: str) -> None:
        """The request ended: its round goes, and requests it still awaits are answered."""
        round_ = self.of.pop(owner, None)
        if round_ is None:
            return
        if round_.gathering is not None:
            round_.gathering.cancel()
        self._unhold(round_)
        pending, round_.pending = round_.pending, {}
        for ask in pending.values():
            ask.reply(None, reason)

    # -- the bus between hosts ------------------------------------------------------------
    def on_bus(self, topic: str, payload: bytes) -> None:
        """Another host used a state (the call held here for it is let go), or says what its
        first use came to."""
        state = self.uses.heard(topic, payload)
        round_ = self.suspended.get(state) if state is not None else None
        if round_ is not None:
            self.drop(round_, "its retry was served by another host")


def _request(owner: Any) -> tuple[bytes, str, str, Any, Any]:
    """The request an owner serves now: id, method, target (name or URI), arguments, router."""
    if isinstance(owner, Execution):
        call = owner.call
        return call.id, "tools/call", call.tool.name, call.arguments, owner.sink
    forward: Forward = owner.forward
    target = forward.params.get("uri") or forward.params.get("name") or ""
    return forward.id, forward.method, target, forward.params.get("arguments", {}), owner.router


class ModernRouter(Router):
    """A modern-era connection: requests for the client become input rounds."""

    session: ModernSession

    def __init__(
        self,
        dispatcher: Dispatcher,
        forwarder: Forwarder,
        session: ModernSession,
        write: Writer,
        rounds: Rounds,
        principal: str,
        peers: Callable[[], list[Router]] = list,
        tasks: Any = None,  # calls.tasks.TaskRunner (which imports this module)
    ) -> None:
        super().__init__(dispatcher, forwarder, session, write)
        self.rounds = rounds
        self.principal = principal
        self.peers = peers  # every connection of the host (the principal's get its list changes)
        self.tasks = tasks  # the host's modern-era tasks (calls/tasks.py)
        self.tools_changed: Callable[[str], None] | None = None  # tells other hosts (shared_tools.py)
        self._uses: dict[bytes, str] = {}  # requests in progress that used a state: its id
        self._watching = False  # writes are watched for those requests' answers

    def _task_input(self, event: TaskInput) -> None:
        self.tasks.answer(event.task, event.responses)

    def _task_cancel(self, event: TaskCancel) -> None:
        self.tasks.cancel(event.task)

    # -- tool-list control: the principal's, so its listen streams everywhere hear of it -------
    def update_tools(self, change: ToolListChange) -> None:
        listening = [
            peer
            for peer in self.peers()
            if isinstance(peer, ModernRouter)
            and peer is not self
            and peer.principal == self.principal
            and peer.session.listens
        ]
        for peer in listening:
            if not peer.session.list_changed_pending:
                peer.session._tools_seen = peer.session.visible_tools()
        super().update_tools(change)
        for peer in listening:
            if peer._flush_timer is None:
                loop = asyncio.get_running_loop()
                peer._flush_timer = loop.call_later(LIST_CHANGED_DELAY, peer.flush_notifications)
        if self.tools_changed is not None:
            self.tools_changed(self.principal)

    def end_streams(self) -> None:
        """The server ends its listen streams gracefully (shutdown)."""
        self.carry_out(list(self.session.close_listens()))

    def cancel_all(self) -> None:
        self.session.listens.clear()  # the client went away: its streams end without a word
        super().cancel_all()
        self._unanswered(list(self._uses), "its request was cancelled (the client went away)")

    def _cancel(self, event: CancelCall) -> None:
        super()._cancel(event)
        self._unanswered([event.call.id], "its request was cancelled")

    def _cancel_forward(self, event: CancelForward) -> None:
        super()._cancel_forward(event)
        self._unanswered([event.forward.id], "its request was cancelled")

    def _unanswered(self, request_ids: list[bytes], reason: str) -> None:
        for request_id in request_ids:
            sid = self._uses.pop(request_id, None)
            if sid is not None:
                self.rounds.uses.unanswered(sid, reason)

    # -- a request starts: fresh, retried with its suspended owner here, or re-run -----------
    def _start(self, call: Call) -> None:
        if call.task is not None and self.tasks is not None:  # answered already: runs for its task
            self.tasks.start(call, self)
            return
        retry: Retry | None = call.retry
        if retry is None:
            super()._start(call)
            return
        self._retried(call.id, "tools/call", call.tool.name, call.arguments, retry, partial(self._go, call))

    def _go(self, call: Call, round_: Round | None, answers: dict[str, Any], fresh: dict[str, Any]) -> None:
        """A retried call goes on: with its suspended owner here, or run again with its answers."""
        if round_ is not None:
            execution = round_.owner
            execution.call, execution.sink, call.execution = call, self, execution
            self._resume(round_, answers, fresh)
            if call.task_later and not round_.pending:  # its questions are answered: a task now
                self._become_task(call, execution)
            return
        if answers:
            call.answers = orjson.dumps(answers).decode()
        if call.task_later and self.tasks is not None:  # a re-run with its answers: a task at once
            created = self.session.become_task(call)
            if created is not None:
                self._emit(created, call.id)
                self.tasks.start(call, self)
                return
        super()._start(call)
        if call.execution is not None and answers:  # (its tool process answers them: used)
            self.rounds.of[call.execution] = Round(call.execution, known=answers, used=set(answers))

    def _forward(self, forward: Forward) -> None:
        if not METHODS[forward.method].input_required:
            super()._forward(forward)
            return
        forward.params["capabilities"] = self.session.capabilities_json
        retry: Retry | None = forward.retry
        if retry is None:
            super()._forward(forward)
            return
        target = forward.params.get("uri") or forward.params.get("name") or ""
        arguments = forward.params.get("arguments", {})
        go = partial(self._go_forward, forward)
        self._retried(forward.id, forward.method, target, arguments, retry, go)

    def _go_forward(
        self, forward: Forward, round_: Round | None, answers: dict[str, Any], fresh: dict[str, Any]
    ) -> None:
        if round_ is not None:
            leg = round_.owner
            leg.forward, leg.router, forward.cancel = forward, self, leg.cancel
            self._resume(round_, answers, fresh)
            return
        if answers:
            forward.params["answers"] = orjson.dumps(answers).decode()
        leg = self.forwarder.forward(forward, self)
        if leg is not None and answers:
            self.rounds.of[leg] = Round(leg, known=answers, used=set(answers))

    def _retried(
        self,
        request_id: bytes,
        method: str,
        target: str,
        arguments: Any,
        retry: Retry,
        go: Callable[[Round | None, dict[str, Any], dict[str, Any]], None],
    ) -> None:
        """`go` gets the suspended round a retry continues (if it is here), every answer known
        and the ones this retry brings, unless the request is answered otherwise: a
        requestState that fails verification, or one used already (the first use's answer, or
        why not). With a shared store, only once the state's use is claimed there."""
        answers: dict[str, Any] = {}
        sid: Any = None
        expires = 0.0
        if retry.state is not None:
            claims = self.rounds.codec.open(retry.state, time.time())
            if claims is None and self.rounds.on_miss is not None:
                self.rounds.on_miss()
            if (
                claims is None
                or claims.get("p") != self.principal
                or claims.get("m") != method
                or (claims.get("t") != target or claims.get("a") != digest(arguments))
            ):
                self._refuse(request_id, INVALID_STATE, "invalid_request_state")
                return
            sid, expires = claims.get("s"), float(claims["e"])
            known = claims.get("r")
            if isinstance(known, dict):
                answers.update(known)
        fresh = {key: value for key, value in retry.responses.items() if isinstance(value, dict)}
        answers.update(fresh)
        answers = {key: value for key, value in answers.items() if isinstance(value, dict)}
        if not isinstance(sid, str):
            go(self.rounds.resume(sid), answers, fresh)
            return
        uses = self.rounds.uses
        use = uses.first_use(sid, expires)
        if use is not None:
            self._second_use(request_id, sid, use)
            return
        if uses.claim is None or self.dispatcher.spawn is None:
            self._note_answer(request_id, sid)
            go(self.rounds.resume(sid), answers, fresh)
            return
        self._mark_busy()  # (the request waits for its claim)
        self.dispatcher.spawn(self._claim, request_id, sid, expires, answers, fresh, go)

    async def _claim(
        self,
        request_id: bytes,
        sid: str,
        expires: float,
        answers: dict[str, Any],
        fresh: dict[str, Any],
        go: Callable[[Round | None, dict[str, Any], dict[str, Any]], None],
    ) -> None:
        """The state's first use here goes on only if it is the first anywhere: claimed in the
        store, which every host sharing it asks (the bus may not have told this host yet)."""
        uses = self.rounds.uses
        assert uses.claim is not None
        try:
            won = await uses.claim(sid, expires)
        except ClaimUnchecked as exc:
            reason = f"the store could not tell whether it was used before ({exc}); retry later"
            uses.abandon(sid, reason)
            self._refuse(request_id, f"requestState not checked: {reason}", "request_state_unchecked")
            return
        in_progress = request_id in self.session.in_flight or request_id in self.session.features.forwarded
        use = uses.used.get(sid)
        if not won:
            if use is None:  # (forgotten meanwhile: the bound)
                self._refuse(request_id, "requestState already used", "request_state_used")
            elif in_progress:
                self._second_use(request_id, sid, use)
            else:
                self._check_idle()
            return
        uses.won(sid)
        if not in_progress:  # its request ended while it was claimed
            uses.unanswered(sid, "its request was cancelled")
            self._check_idle()
            return
        self._note_answer(request_id, sid)
        go(self.rounds.resume(sid), answers, fresh)

    def _note_answer(self, request_id: bytes, sid: str) -> None:
        """The answer this request gets is the state's first answer (writes are watched for it
        from the first request that uses a state: the others pay nothing)."""
        if not self._watching:
            self._watching = True
            write = self.write

            def noting_answers(data: bytes, related: bytes | None = None) -> None:
                write(data, related)
                if (
                    related is not None
                    and related in self._uses
                    and data.startswith(_ANSWER + related + b",")
                ):
                    self.rounds.uses.answered(self._uses.pop(related), data[len(_ANSWER) + len(related) :])

            self.write = noting_answers
        self._uses[request_id] = sid

    def _refuse(self, request_id: bytes, message: str, reason: str) -> None:
        data = {"reason": reason}
        self._emit(self.session.refuse(request_id, rpc.INVALID_PARAMS, message, data), request_id)
        self._check_idle()

    def _second_use(self, request_id: bytes, sid: str, use: Use) -> None:
        """A requestState used before: the first use's answer, now or once it has one (from
        another host: within the call timeout)."""
        timer: asyncio.TimerHandle | None = None

        def answer(first: bytes | None, reason: str) -> None:
            if timer is not None:
                timer.cancel()
            if answer in use.waiters:
                use.waiters.remove(answer)
            if first is None:
                self._refuse(request_id, f"requestState already used: {reason}", "request_state_used")
            else:
                self._emit(self.session.replay(request_id, first), request_id)
                self._check_idle()

        if use.answer is not None or use.ended:
            answer(use.answer, use.ended)
            return
        self._mark_busy()
        use.waiters.append(answer)
        if not use.here:  # its answer comes over the bus (a host that stops sends none)
            if self.rounds.uses.watch is not None:
                self.rounds.uses.watch(sid, use)  # (and is looked for in the shared store)
            wait = self.dispatcher.call_timeout or HOLD
            why = f"its first use, on another host, did not answer within {wait:g}s"
            timer = asyncio.get_running_loop().call_later(wait, answer, None, why)

    def _become_task(self, call: Call, execution: Execution) -> None:
        """The call's CreateTaskResult answers the request; it runs on for its task."""
        created = self.session.become_task(call) if self.tasks is not None else None
        if created is None:
            return
        self.rounds.release(execution, "the call became a task")
        self._emit(created, call.id)
        self.tasks.adopt(call, execution, self)
        self._check_idle()

    def _resume(self, round_: Round, answers: dict[str, Any], fresh: dict[str, Any]) -> None:
        """The suspended owner carries on as this request: its requests get the answers this
        retry brings (an answer the call had already is not given twice)."""
        self._mark_busy()
        round_.known.update(answers)
        for key, ask in list(round_.pending.items()):
            answer = fresh.get(key)
            if valid_answer(ask.method, answer):
                del round_.pending[key]
                round_.used.add(key)
                ask.reply(answer, None)
        if round_.pending:
            self._gather(round_)

    # -- the request asks the client for something ------------------------------------------
    def call_request(
        self,
        execution: Execution,
        method: str,
        params: dict[str, Any],
        timeout: float | None,
        reply: Reply,
        key: str = "",
    ) -> None:
        self._ask(execution, method, params, reply, key)

    def forward_request(
        self, leg: Any, method: str, params: dict[str, Any], timeout: float | None, reply: Reply, key: str
    ) -> None:
        self._ask(leg, method, params, reply, key)

    def _ask(self, owner: Any, method: str, params: dict[str, Any], reply: Reply, key: str) -> None:
        round_ = self.rounds.of.get(owner)
        if round_ is None:
            round_ = self.rounds.of[owner] = Round(owner)
        round_.asked += 1
        if not key:  # a tool process of another SDK: keys by order
            key = f"{method}-{round_.asked}"
        known = round_.known.get(key)
        if key not in round_.used and valid_answer(method, known):  # each answer is used once
            round_.used.add(key)
            reply(known, None)
            return
        if method == "elicitation/create":
            params = {k: v for k, v in params.items() if k != "elicitationId"}  # not in this era
        round_.pending[key] = Ask(method, params, reply)
        self._gather(round_)

    def _gather(self, round_: Round) -> None:
        if round_.gathering is None:
            loop = asyncio.get_running_loop()
            round_.gathering = loop.call_later(ROUND_WINDOW, self._close_round, round_)

    def _close_round(self, round_: Round) -> None:
        """The requests gathered so far go to the client; the owner waits for its retry."""
        round_.gathering = None
        if round_.owner.finished or not round_.pending or round_.suspension is not None:
            return
        request_id, method, target, arguments, router = _request(round_.owner)
        if not isinstance(router, ModernRouter):
            return
        sid = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
        round_.principal = router.principal
        held = self.rounds.suspend(round_, sid)
        claims: dict[str, Any] = {
            "v": 1,
            "p": router.principal,
            "m": method,
            "t": target,
            "a": digest(arguments),
            "e": int(time.time() + STATE_TTL),
            "s": sid,
        }
        if round_.known and len(known := orjson.dumps(round_.known)) <= MAX_ANSWERS:
            claims["r"] = orjson.loads(known)
        state = self.rounds.codec.seal(claims)
        requests = {key: {"method": ask.method, "params": ask.params} for key, ask in round_.pending.items()}
        router._emit(router.session.input_required(request_id, requests, state), request_id)
        router._check_idle()
        if held:
            round_.expiry = asyncio.get_running_loop().call_later(HOLD, self._expire, round_)
        else:  # the host holds all it can: let it go (its retry runs it again)
            round_.owner.cancel(f"the host holds {MAX_SUSPENDED} calls waiting for input already")

    def _expire(self, round_: Round) -> None:
        round_.expiry = None
        self.rounds.drop(round_, f"no retry came within {HOLD:g}s (a later one runs the call again)")

    def call_released(self, execution: Execution, reason: str) -> None:
        if self.rounds.of:  # (most calls never asked the client anything)
            self.rounds.release(execution, reason)
        super().call_released(execution, reason)

    def forward_released(self, leg: Any) -> None:
        self.rounds.release(leg, "the request is over")


ModernRouter._events = {
    **event_table(ModernRouter),
    TaskInput: ModernRouter._task_input,
    TaskCancel: ModernRouter._task_cancel,
}
