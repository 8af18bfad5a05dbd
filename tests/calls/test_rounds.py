"""calls/rounds.py without I/O: the requestState codec and the shape checks of answers."""

from __future__ import annotations

import pytest

from protomcp_host.calls.held import StateCodec, digest
from protomcp_host.protocol.request_meta import valid_answer

pytestmark = pytest.mark.fast  # starts no process


def test_state_round_trips_and_rejects_tampering_expiry_and_other_keys() -> None:
    codec = StateCodec(b"k" * 32)
    token = codec.seal({"p": "local", "e": 100, "r": {"a": {"action": "accept"}}})
    assert token.startswith("v1.") and token != codec.seal({"p": "local", "e": 100})
    assert codec.open(token, now=50) == {"p": "local", "e": 100, "r": {"a": {"action": "accept"}}}
    assert codec.open(token, now=101) is None  # expired
    assert codec.open(token + "A", now=50) is None
    assert codec.open(token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1], now=50) is None
    assert codec.open("v2." + token[3:], now=50) is None
    assert StateCodec(b"x" * 32).open(token, now=50) is None  # another host's key


def test_a_new_shared_key_seals_and_the_ones_before_still_open() -> None:
    codec = StateCodec(b"1" * 32)
    old = codec.seal({"e": 100})
    codec.use(b"2" * 32)  # another host made the store's key anew
    new = codec.seal({"e": 100})
    assert StateCodec(b"2" * 32).open(new, now=50) == {"e": 100}
    assert codec.open(old, now=50) == codec.open(new, now=50) == {"e": 100}
    for i in range(3, 3 + 4):  # only the last few keys open
        codec.use(bytes([i]) * 32)
    assert codec.open(old, now=50) is None and codec.open(codec.seal({"e": 9}), now=5) == {"e": 9}


def test_shared_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROTOMCP_STATE_KEY", "secret")
    token = StateCodec().seal({"e": 10})
    assert StateCodec().open(token, now=1) == {"e": 10}


def test_digest_ignores_key_order() -> None:
    assert digest({"a": 1, "b": 2}) == digest({"b": 2, "a": 1}) != digest({"a": 2, "b": 1})


def test_answer_shapes() -> None:
    assert valid_answer("elicitation/create", {"action": "accept", "content": {"x": 1}})
    assert not valid_answer("elicitation/create", {"action": "maybe"})
    assert not valid_answer("elicitation/create", 12345)
    assert valid_answer(
        "sampling/createMessage", {"role": "assistant", "content": {"type": "text", "text": "hi"}}
    )
    assert not valid_answer("sampling/createMessage", {"role": "assistant"})
    assert valid_answer("roots/list", {"roots": []}) and not valid_answer("roots/list", {})


class _Owner:
    """What a Round holds (an Execution), as far as Rounds looks at it."""

    def __init__(self) -> None:
        self.finished = False
        self.reason = ""

    def cancel(self, reason: str) -> None:
        self.finished, self.reason = True, reason


def test_held_calls_are_bounded_per_principal_and_never_evict_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from protomcp_host.calls import held as module
    from protomcp_host.calls.held import Round, Rounds

    monkeypatch.setattr(module, "MAX_SUSPENDED", 4)
    rounds = Rounds(per_principal=2)
    other = Round(_Owner(), principal="bob")
    assert rounds.suspend(other, "bob-1")
    mine = [Round(_Owner(), principal="ann") for _ in range(3)]
    for n, round_ in enumerate(mine):
        assert rounds.suspend(round_, f"ann-{n}")
    assert mine[0].owner.finished and "2 newer calls of its principal" in mine[0].owner.reason
    assert not any(r.owner.finished for r in [other, *mine[1:]])
    assert rounds.held == {"bob": 1, "ann": 2} and list(rounds.suspended) == ["bob-1", "ann-1", "ann-2"]
    third = Round(_Owner(), principal="cy")
    assert rounds.suspend(third, "cy-1")
    late = Round(_Owner(), principal="dee")
    assert not rounds.suspend(late, "dee-1")  # the host is full: not held (its retry re-runs it)
    assert not other.owner.finished and len(rounds.suspended) == 4
    assert rounds.resume("ann-1") is mine[1] and rounds.held["ann"] == 1


def test_a_state_used_on_another_host_lets_the_held_call_go() -> None:
    import orjson

    from protomcp_host.calls.held import Round, Rounds
    from protomcp_host.calls.used_states import ROUND_ANSWERED, ROUND_USED

    here, there = Rounds(), Rounds()
    told: list[tuple[str, bytes]] = []
    there.uses.publish = lambda topic, payload: told.append((topic, payload))
    held = Round(_Owner(), principal="ann")
    assert here.suspend(held, "s1")
    assert there.uses.first_use("s1", 2e9) is None  # the retry reached the other host: it runs there
    there.uses.answered("s1", b',"result":{}}')
    for topic, payload in told:
        here.on_bus(topic, payload)
        there.on_bus(topic, payload)  # its own messages are not for it
    assert [topic for topic, _ in told] == [ROUND_USED, ROUND_ANSWERED]
    assert held.owner.finished and "served by another host" in held.owner.reason
    assert not here.suspended and here.held == {}
    use = here.uses.first_use("s1", 2e9)  # a second use here gets the first answer
    assert use is not None and use.answer == b',"result":{}}'
    assert there.uses.used["s1"].here and orjson.loads(told[0][1])["s"] == "s1"


def test_used_states_keep_answers_within_a_budget_and_forget_expired_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from protomcp_host.calls import used_states

    monkeypatch.setattr(used_states, "REPLAY_BYTES", 10)
    uses = used_states.UsedStates()
    assert uses.first_use("a", 2e9) is None and uses.first_use("b", 2e9) is None
    second = uses.first_use("b", 2e9)  # running: a second use waits for the answer
    assert second is not None and second.answer is None and not second.ended
    heard: list[tuple[bytes | None, str]] = []
    second.waiters.append(lambda answer, why: heard.append((answer, why)))
    uses.answered("a", b"123456")
    uses.answered("b", b"abcdef")  # over the budget: the oldest answer goes
    assert heard == [(b"abcdef", "")]
    assert uses.used["a"].answer is None and "no longer kept" in uses.used["a"].ended
    assert uses.used["b"].answer == b"abcdef" and uses.kept == 6
    fresh = used_states.UsedStates()
    assert fresh.first_use("old", 1.0) is None  # (expired at once)
    assert fresh.first_use("new", 2e9) is None and list(fresh.used) == ["new"]


async def test_with_a_store_a_use_is_told_only_once_claimed_and_one_claim_wins() -> None:
    from protomcp_host.calls.used_states import ROUND_USED, UsedStates
    from protomcp_host.shared.uses import SharedUses
    from protomcp_host.store.memory import MemoryStore

    store = MemoryStore()
    claim = SharedUses(store, UsedStates()).claim
    assert await claim("s1", 2e9) and not await claim("s1", 2e9)  # the second use anywhere loses
    uses = UsedStates()
    told: list[str] = []
    uses.publish = lambda topic, payload: told.append(topic)
    uses.claim = claim
    assert uses.first_use("s2", 2e9) is None and told == []  # a candidate until claimed
    assert not uses.used["s2"].here
    uses.won("s2")
    assert told == [ROUND_USED] and uses.used["s2"].here
    assert uses.first_use("s3", 2e9) is None
    second = uses.first_use("s3", 2e9)  # a second use here waits for the first
    assert second is not None
    why: list[str] = []
    second.waiters.append(lambda answer, reason: why.append(reason))
    uses.abandon("s3", "the store could not tell")  # (its claim failed): unused, waiters told
    assert why == ["the store could not tell"] and "s3" not in uses.used


async def test_a_claim_whose_answer_was_lost_wins_when_sent_again() -> None:
    """The store wrote the claim but its answer did not come (a dropped connection): the retry
    of that use, on this host, writes the same value and so still wins; another use loses."""
    from protomcp_host.calls.used_states import ClaimUnchecked, UsedStates
    from protomcp_host.shared.uses import SharedUses
    from protomcp_host.store.base import StoreError
    from protomcp_host.store.memory import MemoryStore

    class LosesAnswers(MemoryStore):
        lose = True

        async def put(self, key: str, value: bytes, ttl: float, *, final: bool = False) -> bytes | None:
            kept = await super().put(key, value, ttl, final=final)
            if self.lose:
                self.lose = False
                raise StoreError("the connection dropped before the answer")
            return kept

    store = LosesAnswers()
    here, there = SharedUses(store, UsedStates()), SharedUses(store, UsedStates())
    with pytest.raises(ClaimUnchecked):
        await here.claim("s1", 2e9)
    assert not await there.claim("s1", 2e9)
    assert await here.claim("s1", 2e9)
