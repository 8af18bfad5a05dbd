"""CHANGELOG.md: each entry one line a reader takes in at a glance (the detail is in the docs
and the commit bodies)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # starts no process

CHANGELOG = Path(__file__).resolve().parents[1] / "CHANGELOG.md"
LONGEST = 160


def long_or_wrapped(text: str) -> list[str]:
    """The entries of `text` that wrap onto a second line or run over LONGEST characters."""
    lines = text.splitlines()
    wrong = []
    for number, line in enumerate(lines):
        if not line.startswith("- "):
            continue
        following = lines[number + 1] if number + 1 < len(lines) else ""
        if len(line) > LONGEST or following.startswith(" "):
            wrong.append(line[:60])
    return wrong


def test_the_check_finds_a_wrapped_and_a_long_entry() -> None:
    text = f"### Added\n\n- short\n- wrapped\n  on\n- {'x' * LONGEST}\n"
    assert long_or_wrapped(text) == ["- wrapped", "- " + "x" * 58]


def test_every_entry_is_one_line() -> None:
    wrong = long_or_wrapped(CHANGELOG.read_text(encoding="utf-8"))
    assert not wrong, f"entries to say in one line of at most {LONGEST} characters: {wrong}"
