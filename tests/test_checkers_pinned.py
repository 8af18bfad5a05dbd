"""The checkers CI runs are pinned exactly, so a release elsewhere never fails a clean run."""

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKERS = ("mypy", "ruff", "types-")

pytestmark = pytest.mark.fast


def test_checkers_and_their_stubs_are_pinned_to_exact_versions() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    test_extra = project["optional-dependencies"]["test"]
    checkers = [req for req in test_extra if req.lower().startswith(CHECKERS)]
    assert {re.split(r"[=<>!~\[]", req)[0] for req in checkers} >= {"mypy", "ruff"}
    loose = [req for req in checkers if not re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", req)]
    assert not loose, f"pin these with == (upgrading a checker is a deliberate commit): {loose}"
