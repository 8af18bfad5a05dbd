"""Newline framing for MCP over stdio (protomcp_host.transports.lines.LineSplitter)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protomcp_host.transports.lines import MAX_LINE, LineSplitter

pytestmark = pytest.mark.fast  # starts no process


def feed_all(splitter: LineSplitter, *chunks: bytes) -> list[bytes | None]:
    out: list[bytes | None] = []
    for chunk in chunks:
        out.extend(splitter.feed(chunk))
    return out


def test_default_limit() -> None:
    assert LineSplitter().max_line == MAX_LINE == 256 * 1024 * 1024


def test_lines_in_one_chunk() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b'{"a":1}\n{"b":2}\n') == [b'{"a":1}', b'{"b":2}']
    assert splitter.tail() == b""


def test_line_split_across_chunks() -> None:
    splitter = LineSplitter()
    assert feed_all(splitter, b'{"jsonrpc":', b'"2.0",', b'"id":1}') == []
    assert splitter.feed(b"\n") == [b'{"jsonrpc":"2.0","id":1}']


def test_line_split_byte_by_byte() -> None:
    splitter = LineSplitter()
    data = b"first\nsecond\n"
    assert feed_all(splitter, *(data[i : i + 1] for i in range(len(data)))) == [b"first", b"second"]


def test_crlf_and_surrounding_whitespace_are_trimmed() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"one\r\n  two \t\r\n\tthree\n") == [b"one", b"two", b"three"]


def test_cr_split_from_its_lf() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"one\r") == []
    assert splitter.feed(b"\ntwo\n") == [b"one", b"two"]


def test_blank_lines_are_skipped() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"\n\n   \n\r\na\n\n\nb\n \t \n") == [b"a", b"b"]


def test_over_long_line_gives_none_once_and_the_next_line_is_intact() -> None:
    splitter = LineSplitter(max_line=10)
    assert splitter.feed(b"x" * 11) == [None]
    assert splitter.feed(b"x" * 50) == []  # still the same over-long line: no second None
    assert splitter.feed(b"xxx\nok\n") == [b"ok"]
    assert splitter.feed(b"next\n") == [b"next"]


def test_over_long_line_completed_in_one_chunk_is_refused_too() -> None:
    splitter = LineSplitter(max_line=10)
    assert splitter.feed(b"y" * 11 + b"\nok\n") == [None, b"ok"]


def test_over_long_line_completed_by_a_later_chunk_is_refused() -> None:
    splitter = LineSplitter(max_line=10)
    assert splitter.feed(b"z" * 8) == []
    assert splitter.feed(b"zzzz\nok\n") == [None, b"ok"]


def test_line_exactly_at_the_limit_is_accepted() -> None:
    splitter = LineSplitter(max_line=10)
    assert splitter.feed(b"a" * 10 + b"\n") == [b"a" * 10]
    assert splitter.feed(b"b" * 5) == []
    assert splitter.feed(b"b" * 5 + b"\n") == [b"b" * 10]


def test_tail_is_the_last_line_without_newline() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"a\n  last line \r") == [b"a"]
    assert splitter.tail() == b"last line"


def test_tail_after_an_over_long_unterminated_line_is_empty() -> None:
    splitter = LineSplitter(max_line=4)
    assert splitter.feed(b"a\n123456") == [b"a", None]
    assert splitter.tail() == b""


def test_empty_feed() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"") == []
    assert splitter.tail() == b""


_line = st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"").strip())


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(_line, max_size=10), data=st.data())
def test_any_chunking_gives_the_same_lines(lines: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(line + b"\n" for line in lines)
    cuts = sorted(data.draw(st.sets(st.integers(min_value=0, max_value=len(stream)), max_size=10)))
    splitter = LineSplitter(max_line=20)
    out: list[bytes | None] = []
    start = 0
    for end in [*cuts, len(stream)]:
        out.extend(splitter.feed(stream[start:end]))
        start = end
    expected = [line if len(line) <= 20 else None for line in lines if line]
    assert out == expected
    assert splitter.tail() == b""
