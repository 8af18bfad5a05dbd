"""Tests that need a component .ci/run installs (Debian packages, pinned npm projects, playwright)."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def missing(what: str) -> NoReturn:
    """Skip: `what` is not installed here. Under CI, fail instead: .ci/run installs every component
    the tests need, so a skip there would hide a test that never ran."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} (.ci/run installs it)")
    pytest.skip(what)
