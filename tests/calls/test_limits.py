"""calls/limits.py without a host: who a limit counts as one principal, which limit a tool has,
the refusal's wording and _meta, and the bounded refusal lines on stderr."""

from __future__ import annotations

from types import SimpleNamespace

import orjson
import pytest

from protomcp_host.calls import limits
from protomcp_host.calls.limits import ANONYMOUS, RateLimits, RefusalLog, principal_of, refusal
from protomcp_host.store.memory import MemoryStore
from protomcp_sdk.wire.rates import parse_rate

pytestmark = pytest.mark.fast


def test_a_principal_is_the_signed_in_subject_else_anonymous() -> None:
    assert principal_of({"iss": "https://idp", "sub": "alice"}) == "sub https://idp alice"
    assert principal_of({"sub": "alice"}) == "sub  alice"
    assert principal_of({"iss": "https://idp"}) == ANONYMOUS  # (a token without a subject)
    assert principal_of(None) == ANONYMOUS  # stdio, a shared bearer token, no authentication
    assert principal_of({"sub": ANONYMOUS}) != ANONYMOUS  # a user named so is still one user


class Checked:
    """What RateLimits.admit checks: a call of `tool` by `auth`; it starts or ends refused."""

    def __init__(self, tool: str, auth: dict[str, str] | None) -> None:
        self.call = SimpleNamespace(tool=SimpleNamespace(name=tool), auth=auth)
        self.finished = False
        self.started = False

    def start(self) -> None:
        self.started = True

    def finish(self, answer: object, effects: None) -> None:
        self.finished = True


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (("a:i x", None), ("a", {"iss": "i", "sub": "x:anonymous"})),  # tool names may hold ':'
        (("a:sub i x", None), ("a", {"iss": "i", "sub": "x:anonymous"})),
        (("a", {"iss": "i", "sub": "x:sub j y"}), ("a:sub i x", {"iss": "j", "sub": "y"})),
        (("a", {"iss": "i j", "sub": "x"}), ("a", {"iss": "i", "sub": "j x"})),  # spaces in iss
        (("a", {"sub": "anonymous"}), ("a", None)),  # a subject named like the anonymous caller
    ],
)
def test_no_tool_and_principal_share_another_pairs_count(
    first: tuple[str, dict[str, str] | None], second: tuple[str, dict[str, str] | None]
) -> None:
    rates = RateLimits({"*": parse_rate("1/hour")}, MemoryStore(), print)
    one, other = Checked(*first), Checked(*second)
    rates.admit(one, parse_rate("1/hour"), None)
    rates.admit(other, parse_rate("1/hour"), None)
    assert one.started and other.started  # each its own first call: neither is over the limit


def test_a_tools_own_flag_beats_its_decorator_which_beats_the_star() -> None:
    reported: list[str] = []
    given = {"search": parse_rate("5/minute"), "*": parse_rate("1/second")}
    rates = RateLimits(given, MemoryStore(), reported.append)
    assert rates.rate_of("search", "2/hour") == parse_rate("5/minute")
    assert rates.rate_of("other", "2/hour") == parse_rate("2/hour")
    assert rates.rate_of("other", "") == parse_rate("1/second")
    assert RateLimits({}, MemoryStore(), reported.append).rate_of("other", "") is None
    assert rates.rate_of("odd", "lots") == parse_rate("1/second") and "tool 'odd'" in reported[0]


def test_the_refusal_says_which_limit_and_when_to_retry() -> None:
    answer = refusal("search", parse_rate("1/minute"), 41.2)
    text = orjson.loads(answer.content[0])[0]["text"]
    assert (
        text == "Rate limit reached: tool 'search' allows 1 call per minute per caller; retry in 42 seconds."
    )
    assert answer.is_error
    assert orjson.loads(answer.meta) == {
        "protomcp/error": {"code": "rate_limited", "retryable": True, "retryAfter": 42.0}
    }
    quick = orjson.loads(refusal("t", parse_rate("3/second"), 0.03).content[0])[0]["text"]
    assert quick.endswith("retry in 0.1 seconds.")


async def test_a_flood_of_refusals_costs_a_few_lines() -> None:
    lines: list[str] = []
    now = [0.0]
    log = RefusalLog(lines.append, clock=lambda: now[0])
    for _ in range(100):
        log.refused("search", "anonymous", parse_rate("1/minute"), 30.0)
    assert len(lines) == limits.REPORT_BURST
    assert (
        lines[0]
        == "protomcp: rate limit 1/minute of tool 'search' refused a call of anonymous (retry in 30s)"
    )
    now[0] = limits.REPORT_EVERY  # the next window: what was held back is summed first
    log.refused("other", "anonymous", parse_rate("1/minute"), 30.0)
    assert lines[limits.REPORT_BURST] == "protomcp: rate limits refused 90 more calls in 60s: 90 of 'search'"
    assert lines[-1].startswith("protomcp: rate limit 1/minute of tool 'other'")
    log.flush()


def test_a_key_is_formatted_once_per_tool_and_principal_and_the_memo_is_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Formatting the store key was most of an admitted call's cost with the memory store."""
    made: list[str] = []
    real = limits.rate_key
    monkeypatch.setattr(limits, "rate_key", lambda *given: made.append(real(*given)) or made[-1])
    monkeypatch.setattr(limits, "MAX_KEYS", 3, raising=False)
    rates = RateLimits({}, MemoryStore(), print)
    rate = parse_rate("100/hour")
    alice = {"iss": "i", "sub": "alice"}
    for _ in range(3):
        for tool, auth in (("a", None), ("a", alice), ("b", None)):
            checked = Checked(tool, auth)
            rates.admit(checked, rate, None)
            assert checked.started
    assert made == ["rate:3600:1:a:anonymous", "rate:3600:1:a:sub i alice", "rate:3600:1:b:anonymous"]
    rates.admit(Checked("c", None), rate, None)  # a fourth: the memo starts again
    assert len(rates._keys) == 1
    store = MemoryStore()
    rates = RateLimits({}, store, print)
    for _ in range(2):
        rates.admit(Checked("a", None), parse_rate("2/hour"), None)
    refused = Checked("a", None)
    rates.admit(refused, parse_rate("2/hour"), None)
    assert refused.finished and not refused.started  # the memoized key counts on one log
