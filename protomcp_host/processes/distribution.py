"""The distribution protomcp is installed as, and how to install it into another interpreter.

The import packages (protomcp_host, protomcp_sdk) and the `protomcp` command keep their
names; only the distribution is called DIST_NAME (the name `protomcp` on PyPI belongs to
an unrelated project, so `pip install protomcp` installs the wrong thing).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from protomcp_sdk.wire.version import DIST_NAME as DIST_NAME  # (re-exported: the host names it here)

_SOURCE = Path(__file__).resolve().parent.parent  # the checkout, when running from one


def source_checkout() -> Path | None:
    """The project folder when this code runs from a clone (editable install or PYTHONPATH)."""
    pyproject = _SOURCE / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return None
    return _SOURCE if f'name = "{DIST_NAME}"' in text else None


def install_command(python: str) -> str:
    """The command that installs protomcp into `python`'s environment."""
    source = source_checkout()
    target = str(source) if source is not None else DIST_NAME
    return f"{shlex.quote(python)} -m pip install {shlex.quote(target)}"
