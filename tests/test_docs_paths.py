"""Every path under tests/ that the documentation names exists (docs move with the tests)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # starts no process

ROOT = Path(__file__).resolve().parents[1]
DOCS = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    ROOT / "tests" / "README.md",
    *(ROOT / "docs").rglob("*.md"),
]
TEST_PATH = re.compile(r"(?<![\w/.-])tests/[\w./-]*[\w/]")


def named_test_paths(text: str) -> list[str]:
    """The tests/... paths in `text`, but those npm installs (node_modules) and globs."""
    return [path for path in TEST_PATH.findall(text) if "node_modules" not in path and "*" not in path]


def test_the_pattern_finds_paths_in_prose_and_code() -> None:
    text = "see `tests/scale/test_scale_cluster.py`), or tests/claude_code. Not: ../tests/x, my-tests/y"
    assert named_test_paths(text) == ["tests/scale/test_scale_cluster.py", "tests/claude_code"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: str(doc.relative_to(ROOT)))
def test_every_tests_path_a_doc_names_exists(doc: Path) -> None:
    missing = [
        path for path in named_test_paths(doc.read_text(encoding="utf-8")) if not (ROOT / path).exists()
    ]
    assert not missing, f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"
