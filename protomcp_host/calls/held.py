"""The state behind the 2026-07-28 input rounds (calls/rounds.py): requestState tokens, sealed
with AES-GCM (``StateCodec``), and the host's record of calls in rounds and of the ones held for
their retry (``Rounds``): ``HOLD`` seconds at most, ``MAX_SUSPENDED_EACH`` per principal (its own
oldest goes first; never another principal's) and ``MAX_SUSPENDED`` in all. Each requestState is
used once (used_states.py), and hosts sharing a bus tell each other of each use (``on_bus``).
"""

from __future__ import annotations

import asyncio
import base64
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from protomcp_host.calls.used_states import UsedStates
from protomcp_host.processes.events import Reply
from protomcp_host.processes.launch import STATE_KEY_ENV

HOLD = 60.0  # seconds a suspended call keeps its place (and a sync tool its thread) for its retry
MAX_SUSPENDED = 1000  # suspended calls per host; beyond it a new one is not held (its retry re-runs)
MAX_SUSPENDED_EACH = 16  # suspended calls per principal (at most --max-in-flight); then its oldest goes
OPENING_KEYS = 4  # requestState keys that open tokens: the one in use and the last ones before it
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
