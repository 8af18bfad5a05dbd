"""For tests that count the modules a process imports: an environment in which coverage does not
measure the process (CI's `--cov` hands subprocesses its config in COVERAGE_PROCESS_CONFIG, and
the tracer would import modules of its own, `pickle` and `hashlib` among them)."""

from __future__ import annotations

import os
from collections.abc import Mapping

COVERAGE_ENV = "COVERAGE_PROCESS_CONFIG"


def unmeasured(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's environment) without coverage's subprocess config."""
    return {key: value for key, value in (os.environ if env is None else env).items() if key != COVERAGE_ENV}
