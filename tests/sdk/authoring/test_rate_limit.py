"""`@tool(rate_limit=...)`: checked when decorated, normalised, carried in the wire definition
(ToolDefinition.rate_limit) and shown by `inspect`. The rate text itself: protomcp_sdk.wire.rates."""

from __future__ import annotations

import pytest

from protomcp_sdk import tool
from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.runtime.inspection import tool_entry
from protomcp_sdk.wire.rates import Rate, parse_rate

pytestmark = [pytest.mark.fast, pytest.mark.usefixtures("clean_registry")]  # starts no process


def test_the_limit_reaches_the_definition() -> None:
    @tool(rate_limit=" 10 / minute ")
    def search() -> str:
        return "x"

    @tool
    def free() -> str:
        return "x"

    assert REGISTRY.tools["search"].definition().rate_limit == "10/minute"
    assert REGISTRY.tools["free"].definition().rate_limit == ""
    assert tool_entry(REGISTRY.tools["search"])["rateLimit"] == "10/minute"
    assert "rateLimit" not in tool_entry(REGISTRY.tools["free"])


@pytest.mark.parametrize(
    "text",
    # A huge N once passed: each principal's log of a tool holds up to N call times (in the
    # host's memory or a Redis sorted set). Digits are ASCII ones.
    [
        "10",
        "10/day",
        "0/second",
        "-1/hour",
        "ten/minute",
        "10/minutes",
        "",
        "1000001/hour",
        "\uff11\uff10/minute",
    ],
)
def test_a_malformed_limit_is_refused_when_decorated(text: str) -> None:
    with pytest.raises(
        ValueError, match=r"tool 'search': rate limit .*: expected N/second, N/minute or N/hour"
    ):

        @tool(rate_limit=text)
        def search() -> str:
            return "x"


def test_the_rate_text() -> None:
    assert parse_rate("1/second") == Rate(1, 1.0, "second")
    assert parse_rate("5/hour") == Rate(5, 3600.0, "hour")
    assert str(parse_rate("10/minute")) == "10/minute"
    assert parse_rate("1000000/hour").calls == 1_000_000
