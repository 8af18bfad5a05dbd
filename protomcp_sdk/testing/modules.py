"""Tool files imported as fresh modules, for unit tests that call their functions directly."""

from __future__ import annotations

import copy
import importlib.util
import itertools
import os
import sys
import types
from pathlib import Path

from protomcp_sdk.authoring.registry import REGISTRY


def load_tool_module(path: str | os.PathLike[str]) -> types.ModuleType:
    """Import a tool file as a fresh module, to call its functions directly in unit tests.

    Each call gives a new module (fresh module state); the tools it defines are not kept in
    this process's tool registry, so a file can be loaded by many tests.
    """
    file = Path(path).resolve()
    name = f"_protomcp_test_{file.stem}_{next(_modules)}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file} as a module")
    module = importlib.util.module_from_spec(spec)
    kept = ("tools", "resources", "templates", "prompts", "completions", "middleware", "roots_hooks")
    before = {field: copy.copy(getattr(REGISTRY, field)) for field in kept}
    lifespan = REGISTRY.lifespan
    sys.modules[name] = module  # dataclasses and pydantic look their module up while the file runs
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    finally:  # what the file registered (tools, resources, middleware...) is not kept
        for field, value in before.items():
            current = getattr(REGISTRY, field)
            current.clear()  # in place: others may hold these dicts and lists
            current.update(value) if isinstance(current, dict) else current.extend(value)
        REGISTRY.lifespan = lifespan
    return module


_modules = itertools.count(1)
