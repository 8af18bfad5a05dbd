"""The version of protomcp (the ``protomcp-tools`` distribution), which the tool process reports in
Hello and both packages expose as ``__version__``.

pyproject.toml holds the one written copy. It is read from the installed package's metadata, on
first use only: importing ``importlib.metadata`` costs milliseconds that a process starting up
should not pay before it needs the answer.
"""

from __future__ import annotations

import functools
from pathlib import Path

SDK_NAME = "protomcp_sdk"
DIST_NAME = "protomcp-tools"
UNKNOWN_VERSION = "0+unknown"

_PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"  # in a source checkout


@functools.cache
def installed_version() -> str:
    """The installed distribution's version; from a source tree that was never installed (run
    with PYTHONPATH), its pyproject.toml's; else ``0+unknown``."""
    import importlib.metadata

    try:
        return importlib.metadata.version(DIST_NAME)
    except importlib.metadata.PackageNotFoundError:
        return _checkout_version() or UNKNOWN_VERSION


def _checkout_version() -> str | None:
    import tomllib

    try:
        project = tomllib.loads(_PYPROJECT.read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    version = project.get("version") if project.get("name") == DIST_NAME else None
    return version if isinstance(version, str) else None
