"""Tool modules named by import path (`protomcp run -m pkg.tools`) and tool plugins that
installed distributions declare in the `protomcp.plugins` entry-point group:

    [project.entry-points."protomcp.plugins"]
    weather = "weather_tools.tools"      # name = the module that holds the @tool functions

Both are looked up in the interpreter that runs the tools (`--python`), by a short helper
process: the host never imports tool code. Each module then runs in its own tool process,
like a file, loaded as a module of its package so relative imports work.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protomcp_host.processes.launch import StartupError, child_environment

GROUP = "protomcp.plugins"

# Runs in the tools' interpreter. Prints {"modules": {name: [file, error]}, "plugins": [...]}.
_HELPER = r"""
import importlib.util, json, sys
from importlib.metadata import entry_points

def origin(module):
    try:
        spec = importlib.util.find_spec(module)
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"
    if spec is None:
        return None, f"no module named {module!r}"
    if not spec.origin or not spec.origin.endswith(".py"):
        return None, f"{module!r} is not a Python source module"
    return spec.origin, ""

request = json.loads(sys.argv[1])
out = {"modules": {m: origin(m) for m in request["modules"]}, "plugins": []}
for ep in entry_points(group=request["group"]):
    dist = ep.dist.name if ep.dist is not None else ""
    version = ep.dist.version if ep.dist is not None else ""
    if ep.attr:
        file, error = None, f"the entry point must name a module, not {ep.value!r}"
    elif request["all"] or ep.name in request["plugins"]:
        file, error = origin(ep.module)
    else:
        file, error = None, ""
    out["plugins"].append([ep.name, ep.value, dist, version, file, error])
print(json.dumps(out))
"""


@dataclass(frozen=True)
class Plugin:
    name: str
    module: str
    distribution: str
    version: str
    file: Path | None
    error: str


def _ask(
    python: str, modules: list[str], plugins: list[str], everything: bool, hidden_env: Collection[str] = ()
) -> dict[str, Any]:
    request = json.dumps({"modules": modules, "plugins": plugins, "all": everything, "group": GROUP})
    try:
        done = subprocess.run(
            [python, "-c", _HELPER, request],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            env=child_environment(hidden_env),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StartupError(f"cannot look up tool modules with {python}: {exc}") from None
    if done.returncode != 0:
        raise StartupError(f"cannot look up tool modules with {python}:\n{done.stderr.strip()}")
    return json.loads(done.stdout)


def installed(python: str) -> list[Plugin]:
    """Every plugin the interpreter's installed distributions declare, with its file."""
    answer = _ask(python, [], [], everything=True)
    return [_plugin(row) for row in answer["plugins"]]


def _plugin(row: list[str]) -> Plugin:
    name, module, dist, version, file, error = row
    return Plugin(name, module, dist, version, Path(file) if file else None, error)


def resolve(
    modules: list[str], plugins: list[str], python: str, hidden_env: Collection[str] = ()
) -> list[Path]:
    """The source files of `-m` modules and `--plugin` names (asked of `python`, without the
    variables `hidden_env` names); StartupError naming every problem."""
    if not modules and not plugins:
        return []
    answer = _ask(python, modules, plugins, everything=False, hidden_env=hidden_env)
    files: list[Path] = []
    problems: list[str] = []
    for module in modules:
        file, error = answer["modules"][module]
        if file:
            files.append(Path(file))
        else:
            problems.append(f"-m {module}: {error}")
    found = {p.name: p for p in map(_plugin, answer["plugins"])}
    for name in plugins:
        plugin = found.get(name)
        if plugin is None:
            known = ", ".join(sorted(found)) or "none are installed"
            problems.append(f"--plugin {name}: no such plugin in {python} ({GROUP}: {known})")
        elif plugin.file is None:
            problems.append(f"--plugin {name} ({plugin.module}): {plugin.error}")
        else:
            files.append(plugin.file)
    if problems:
        raise StartupError("\n".join(problems))
    return files
