"""The version of protomcp (the ``protomcp-tools`` distribution), which the tool process reports in
Hello and both packages expose as ``__version__``.

pyproject.toml holds the one written copy. It is read from the installed package's metadata, on
first use only, and from the name of its metadata folder (``protomcp_tools-0.1.0.dist-info``, as
the installer names it): importing ``importlib.metadata`` costs milliseconds that a process starting up
should not pay before it needs the answer.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

SDK_NAME = "protomcp_sdk"
DIST_NAME = "protomcp-tools"
UNKNOWN_VERSION = "0+unknown"

_PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"  # in a source checkout


@functools.cache
def installed_version() -> str:
    """The installed distribution's version; from a source tree that was never installed (run
    with PYTHONPATH), its pyproject.toml's; else ``0+unknown``."""
    return _dist_info_version(sys.path) or _checkout_version() or UNKNOWN_VERSION


def _dist_info_version(entries: list[str]) -> str | None:
    """The version in the name of the first ``protomcp_tools-VERSION.dist-info`` folder on the path
    (the one ``importlib.metadata.version`` reads, found without importing it)."""
    prefix, suffix = DIST_NAME.replace("-", "_") + "-", ".dist-info"
    for entry in entries:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.startswith(prefix) and name.endswith(suffix):
                return name[len(prefix) : -len(suffix)]
    return None


def _checkout_version() -> str | None:
    import tomllib

    try:
        project = tomllib.loads(_PYPROJECT.read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    version = project.get("version") if project.get("name") == DIST_NAME else None
    return version if isinstance(version, str) else None
