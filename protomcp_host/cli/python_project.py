"""The Python project tool files belong to: the pyproject.toml beside them or above them (not
beyond the repository's root), read for what `protomcp registry` says about a PyPI package:
its name, version, console scripts and README."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ProjectError(Exception):
    """A pyproject.toml that cannot be read."""


@dataclass(frozen=True)
class PythonProject:
    file: Path  # the pyproject.toml
    name: str | None
    version: str | None  # None: dynamic or missing
    description: str | None
    scripts: frozenset[str]  # [project.scripts] names
    readme: Any  # [project].readme as written (a path, a table or None)

    def runs_as(self, command: str) -> bool:
        """Whether it declares a console script `command` (what `uvx NAME` runs)."""
        return normalized(command) in {normalized(script) for script in self.scripts}

    def readme_text(self) -> tuple[str, str] | None:
        """(where, text) of its README: [project].readme, else a README.md/.rst/.txt beside it."""
        folder = self.file.parent
        if isinstance(self.readme, dict) and isinstance(self.readme.get("text"), str):
            return f"{self.file} [project].readme", self.readme["text"]
        named = self.readme.get("file") if isinstance(self.readme, dict) else self.readme
        candidates = (
            [folder / named]
            if isinstance(named, str)
            else [folder / f"README{suffix}" for suffix in (".md", ".rst", ".txt", "")]
        )
        for path in candidates:
            if path.is_file():
                try:
                    return str(path), path.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    return None
        return None


def normalized(name: str) -> str:
    """A distribution or script name as PyPI compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def find_project(start: Path) -> PythonProject | None:
    """The pyproject.toml in `start` (a folder, or a file's folder) or the nearest above it; the
    search stops at the repository's root (the folder holding .git)."""
    folder = start.resolve()
    if not folder.is_dir():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        file = candidate / "pyproject.toml"
        if file.is_file():
            return read_project(file)
        if (candidate / ".git").exists():
            return None
    return None


def read_project(file: Path) -> PythonProject:
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProjectError(f"{file}: {exc}") from None
    project = data.get("project")
    project = project if isinstance(project, dict) else {}
    scripts = project.get("scripts")
    scripts = scripts if isinstance(scripts, dict) else {}
    name, version, description = project.get("name"), project.get("version"), project.get("description")
    return PythonProject(
        file=file,
        name=name if isinstance(name, str) else None,
        version=version if isinstance(version, str) else None,
        description=description if isinstance(description, str) else None,
        scripts=frozenset(str(script) for script in scripts),
        readme=project.get("readme"),
    )
