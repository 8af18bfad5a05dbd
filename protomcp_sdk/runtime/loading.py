"""Importing the user's tool file, and reporting what its code raised in the user's own frames."""

from __future__ import annotations

import contextlib
import importlib
import os
import runpy
import sys
import traceback
from pathlib import Path

from protomcp_sdk.authoring.arguments import ArgumentError
from protomcp_sdk.authoring.registry import REGISTRY
from protomcp_sdk.authoring.results import ToolError
from protomcp_sdk.runtime.context import Context
from protomcp_sdk.wire.paths import package_of

_SDK = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # protomcp_sdk/


def load_tool_file(path: str) -> str:
    """Import the user's tool file; return "" or the traceback text of the failure."""
    REGISTRY.clear()
    file = Path(path).resolve()
    package = package_of(file)
    sys.path.insert(0, str(package[0] if package else file.parent))
    try:
        if package:  # a module of its package, so relative imports work
            importlib.import_module(package[1])
        else:
            runpy.run_path(str(file), run_name="__protomcp_tools__")
    except BaseException as exc:  # SyntaxError, ImportError, SystemExit in a tool file...
        REGISTRY.clear()
        return user_traceback(exc)
    return ""


def report_failure(exc: BaseException, ctx: Context) -> None:
    """Where an unexpected exception came from, in the user's own frames: once on stderr (the
    host shows it; the calling session gets it as one debug log message). ToolError and bad
    arguments are answers, not bugs."""
    if isinstance(exc, (ToolError, ArgumentError)):
        return
    text = f"tool '{ctx.tool_name}' raised:\n{user_traceback(exc)}"
    block = getattr(sys.stderr, "block", None)  # output.CallOutput: the call's output
    if block is not None:
        with contextlib.suppress(Exception):  # nothing about reporting may change the answer
            block(text, "debug")
    else:
        print(text, end="", file=sys.stderr, flush=True)


def user_traceback(exc: BaseException) -> str:
    """The traceback without the frames of runpy and of the SDK itself: the user's code only."""
    report = traceback.TracebackException.from_exception(exc)
    report.stack = traceback.StackSummary.from_list(
        [
            f
            for f in report.stack
            if not f.filename.startswith((_SDK, "<frozen importlib")) and "runpy" not in f.filename
        ]
    )
    return "".join(report.format())
