"""The 2026-07-28 input-required round trip (MRTR) on the host's side.

In the modern era a tool's ``ctx.sample`` / ``ctx.elicit`` / ``ctx.list_roots`` does not become
a request to the client: the requests a call makes in one moment (``ROUND_WINDOW``) are
gathered into an ``InputRequiredResult`` that ends the client's request, and the call stays
suspended in its tool process. The result carries a ``requestState`` sealed with AES-GCM: it
binds the principal, the method, the tool name, a digest of the arguments and an expiry, names
the suspension, and carries the answers given so far (bounded). When the client retries with
``inputResponses`` and that state, the suspended call is found (``Rounds``, held.py), re-attached
to the new request and its requests are answered by key; one still unanswered (or a new one)
makes another round. A retry that finds no suspended call here (a restart, another host) re-runs
the tool with every answer known so far: the tool process answers requests with a known key
itself. An answer is used once: a call that asks again under the same key asks the client again.

A requestState is used once (used_states.py): a second use gets the first use's answer, or a
refusal saying it was used, never a second run.

``InputRounds`` is the Router's strategy for requests to the client on a modern-era connection
(calls.router.ClientRequests); everything else a call does (progress, logs, answers) goes the
Router's way.
"""

from __future__ import annotations

import asyncio
import base64
import os
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import orjson

from protomcp_host.calls.execution import Execution
from protomcp_host.calls.held import HOLD, MAX_SUSPENDED, Ask, Round, Rounds, digest
from protomcp_host.calls.router import Router
from protomcp_host.calls.used_states import ClaimUnchecked, Use
from protomcp_host.processes.events import Reply
from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.features import Forward
from protomcp_host.protocol.methods import METHODS
from protomcp_host.protocol.modern import ModernEra
from protomcp_host.protocol.request_meta import Retry, valid_answer
from protomcp_host.protocol.session import Call
from protomcp_sdk.wire.toollist import ToolListChange

STATE_TTL = 600.0  # seconds a requestState stays valid (a retry after HOLD re-runs the call)
ROUND_WINDOW = 0.02  # seconds the requests a call makes at once gather into one round
MAX_ANSWERS = 64 * 1024  # bytes of answers a requestState carries (beyond: not carried)
INVALID_STATE = "Invalid or expired requestState"
_ANSWER = b'{"jsonrpc":"2.0","id":'

Go = Callable[[Round | None, dict[str, Any], dict[str, Any]], None]


def _request(owner: Any) -> tuple[bytes, str, str, Any, Any]:
    """The request an owner serves now: id, method, target (name or URI), arguments, router."""
    if isinstance(owner, Execution):
        call = owner.call
        return call.id, "tools/call", call.tool.name, call.arguments, owner.sink
    forward: Forward = owner.forward
    target = forward.params.get("uri") or forward.params.get("name") or ""
    return forward.id, forward.method, target, forward.params.get("arguments", {}), owner.router


def _era(router: Router) -> ModernEra:
    era = router.session.era
    assert isinstance(era, ModernEra)  # (InputRounds is the strategy of modern connections only)
    return era


class InputRounds:
    """A modern-era connection's requests for the client: gathered into input rounds. Its
    router's principal shares its tool list with the principal's other connections (`peers`)."""

    def __init__(
        self,
        rounds: Rounds,
        peers: Callable[[], list[Router]] = list,
        tools_changed: Callable[[str], None] | None = None,
    ) -> None:
        self.rounds = rounds
        self.peers = peers  # every connection of the host (the principal's get its list changes)
        self.tools_changed = tools_changed  # tells other hosts (shared_tools.py)
        self._uses: dict[bytes, str] = {}  # requests in progress that used a state: its id
        self._watching = False  # writes are watched for those requests' answers

    # -- tool-list control: the principal's, so its listen streams everywhere hear of it -------
    def update_tools(self, router: Router, change: ToolListChange) -> None:
        listening = [
            peer
            for peer in self.peers()
            if isinstance(peer.asking, InputRounds)
            and peer is not router
            and peer.principal == router.principal
            and peer.session.era.listens
        ]
        for peer in listening:
            if not peer.session.tool_list.pending:
                peer.session.tool_list.seen = peer.session.tool_list.visible()
        router.list_changes.apply(router, change)
        for peer in listening:
            peer.list_changes.soon(peer)
        if self.tools_changed is not None and router.principal is not None:
            self.tools_changed(router.principal)

    def end_streams(self, router: Router) -> None:
        """The server ends its listen streams gracefully (shutdown)."""
        router.carry_out(list(_era(router).close_listens()))

    def cancelled(self, router: Router, request_id: bytes | None, reason: str) -> None:
        if request_id is None:  # the client went away: its streams end without a word
            _era(router).listens.clear()
            request_ids = list(self._uses)
        else:
            request_ids = [request_id]
        for each in request_ids:
            sid = self._uses.pop(each, None)
            if sid is not None:
                self.rounds.uses.unanswered(sid, reason)

    # -- a request starts: fresh, retried with its suspended owner here, or re-run -----------
    def start(self, router: Router, call: Call) -> None:
        if call.task is not None and router.tasks is not None:  # answered already: runs for its task
            router.tasks.start(call, router)
            return
        retry: Retry | None = call.retry
        if retry is None:
            router.run(call)
            return
        go = partial(self._go, router, call)
        self._retried(router, call.id, "tools/call", call.tool.name, call.arguments, retry, go)

    def _go(
        self,
        router: Router,
        call: Call,
        round_: Round | None,
        answers: dict[str, Any],
        fresh: dict[str, Any],
    ) -> None:
        """A retried call goes on: with its suspended owner here, or run again with its answers."""
        if round_ is not None:
            execution = round_.owner
            execution.call, execution.sink, call.execution = call, router, execution
            self._resume(router, round_, answers, fresh)
            if call.task_later and not round_.pending:  # its questions are answered: a task now
                self._become_task(router, call, execution)
            return
        if answers:
            call.answers = orjson.dumps(answers).decode()
        if call.task_later and router.tasks is not None:  # a re-run with its answers: a task at once
            created = _era(router).become_task(router.session, call)
            if created is not None:
                router._emit(created, call.id)
                router.tasks.start(call, router)
                return
        router.run(call)
        if call.execution is not None and answers:  # (its tool process answers them: used)
            self.rounds.of[call.execution] = Round(call.execution, known=answers, used=set(answers))

    def forward(self, router: Router, forward: Forward) -> None:
        if not METHODS[forward.method].input_required:
            router.forwarder.forward(forward, router)
            return
        forward.params["capabilities"] = router.session.capabilities_json
        retry: Retry | None = forward.retry
        if retry is None:
            router.forwarder.forward(forward, router)
            return
        target = forward.params.get("uri") or forward.params.get("name") or ""
        arguments = forward.params.get("arguments", {})
        go = partial(self._go_forward, router, forward)
        self._retried(router, forward.id, forward.method, target, arguments, retry, go)

    def _go_forward(
        self,
        router: Router,
        forward: Forward,
        round_: Round | None,
        answers: dict[str, Any],
        fresh: dict[str, Any],
    ) -> None:
        if round_ is not None:
            leg = round_.owner
            leg.forward, leg.router, forward.cancel = forward, router, leg.cancel
            self._resume(router, round_, answers, fresh)
            return
        if answers:
            forward.params["answers"] = orjson.dumps(answers).decode()
        leg = router.forwarder.forward(forward, router)
        if leg is not None and answers:
            self.rounds.of[leg] = Round(leg, known=answers, used=set(answers))

    def _retried(
        self,
        router: Router,
        request_id: bytes,
        method: str,
        target: str,
        arguments: Any,
        retry: Retry,
        go: Go,
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
                or claims.get("p") != router.principal
                or claims.get("m") != method
                or (claims.get("t") != target or claims.get("a") != digest(arguments))
            ):
                self._refuse(router, request_id, INVALID_STATE, "invalid_request_state")
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
            self._second_use(router, request_id, sid, use)
            return
        if uses.claim is None or router.dispatcher.spawn is None:
            self._note_answer(router, request_id, sid)
            go(self.rounds.resume(sid), answers, fresh)
            return
        router.idle.mark_busy()  # (the request waits for its claim)
        router.dispatcher.spawn(self._claim, router, request_id, sid, expires, answers, fresh, go)

    async def _claim(
        self,
        router: Router,
        request_id: bytes,
        sid: str,
        expires: float,
        answers: dict[str, Any],
        fresh: dict[str, Any],
        go: Go,
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
            self._refuse(router, request_id, f"requestState not checked: {reason}", "request_state_unchecked")
            return
        session = router.session
        in_progress = request_id in session.in_flight or request_id in session.features.forwarded
        use = uses.used.get(sid)
        if not won:
            if use is None:  # (forgotten meanwhile: the bound)
                self._refuse(router, request_id, "requestState already used", "request_state_used")
            elif in_progress:
                self._second_use(router, request_id, sid, use)
            else:
                router._check_idle()
            return
        uses.won(sid)
        if not in_progress:  # its request ended while it was claimed
            uses.unanswered(sid, "its request was cancelled")
            router._check_idle()
            return
        self._note_answer(router, request_id, sid)
        go(self.rounds.resume(sid), answers, fresh)

    def _note_answer(self, router: Router, request_id: bytes, sid: str) -> None:
        """The answer this request gets is the state's first answer (writes are watched for it
        from the first request that uses a state: the others pay nothing)."""
        if not self._watching:
            self._watching = True
            write, uses, noted = router.write, self.rounds.uses, self._uses

            def noting_answers(data: bytes, related: bytes | None = None) -> None:
                write(data, related)
                if related is not None and related in noted and data.startswith(_ANSWER + related + b","):
                    uses.answered(noted.pop(related), data[len(_ANSWER) + len(related) :])

            router.write = noting_answers
        self._uses[request_id] = sid

    def _refuse(self, router: Router, request_id: bytes, message: str, reason: str) -> None:
        refusal = rpc.error(request_id, rpc.INVALID_PARAMS, message, {"reason": reason})
        router._emit(_era(router).end(router.session, request_id, refusal), request_id)
        router._check_idle()

    def _second_use(self, router: Router, request_id: bytes, sid: str, use: Use) -> None:
        """A requestState used before: the first use's answer, now or once it has one (from
        another host: within the call timeout)."""
        timer: asyncio.TimerHandle | None = None

        def answer(first: bytes | None, reason: str) -> None:
            if timer is not None:
                timer.cancel()
            if answer in use.waiters:
                use.waiters.remove(answer)
            if first is None:
                self._refuse(router, request_id, f"requestState already used: {reason}", "request_state_used")
            else:
                replayed = _ANSWER + request_id + first  # the first use's answer, for this request
                router._emit(_era(router).end(router.session, request_id, replayed), request_id)
                router._check_idle()

        if use.answer is not None or use.ended:
            answer(use.answer, use.ended)
            return
        router.idle.mark_busy()
        use.waiters.append(answer)
        if not use.here:  # its answer comes over the bus (a host that stops sends none)
            if self.rounds.uses.watch is not None:
                self.rounds.uses.watch(sid, use)  # (and is looked for in the shared store)
            wait = router.dispatcher.call_timeout or HOLD
            why = f"its first use, on another host, did not answer within {wait:g}s"
            timer = asyncio.get_running_loop().call_later(wait, answer, None, why)

    def _become_task(self, router: Router, call: Call, execution: Execution) -> None:
        """The call's CreateTaskResult answers the request; it runs on for its task."""
        created = _era(router).become_task(router.session, call) if router.tasks is not None else None
        if created is None:
            return
        assert router.tasks is not None
        self.rounds.release(execution, "the call became a task")
        router._emit(created, call.id)
        router.tasks.adopt(call, execution, router)
        router._check_idle()

    def _resume(self, router: Router, round_: Round, answers: dict[str, Any], fresh: dict[str, Any]) -> None:
        """The suspended owner carries on as this request: its requests get the answers this
        retry brings (an answer the call had already is not given twice)."""
        router.idle.mark_busy()
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
    def ask(
        self,
        router: Router,
        owner: Any,
        method: str,
        params: dict[str, Any],
        timeout: float | None,
        reply: Reply,
        key: str,
    ) -> None:
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
        if not isinstance(router, Router) or not isinstance(router.asking, InputRounds):
            return
        sid = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
        round_.principal = router.principal or ""
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
        router._emit(_era(router).input_required(router.session, request_id, requests, state), request_id)
        router._check_idle()
        if held:
            round_.expiry = asyncio.get_running_loop().call_later(HOLD, self._expire, round_)
        else:  # the host holds all it can: let it go (its retry runs it again)
            round_.owner.cancel(f"the host holds {MAX_SUSPENDED} calls waiting for input already")

    def _expire(self, round_: Round) -> None:
        round_.expiry = None
        self.rounds.drop(round_, f"no retry came within {HOLD:g}s (a later one runs the call again)")

    def released(self, router: Router, owner: Any, reason: str) -> None:
        if self.rounds.of:  # (most calls never asked the client anything)
            self.rounds.release(owner, reason)
