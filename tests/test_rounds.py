"""bridge/rounds.py without I/O: the requestState codec and the shape checks of answers."""

from __future__ import annotations

import pytest

from protomcp_host.bridge.rounds import StateCodec, digest, valid_answer


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
