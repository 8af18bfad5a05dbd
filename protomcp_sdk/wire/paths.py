"""Where a tool file lives in Python's import system: one answer for the host (naming and
starting tool processes) and the tool process (importing the file)."""

from __future__ import annotations

from pathlib import Path


def package_of(file: Path) -> tuple[Path, str] | None:
    """(import root, dotted module name) for a file inside a package (a folder with
    __init__.py); None for a stand-alone file."""
    if not (file.parent / "__init__.py").is_file():
        return None
    parts = [] if file.name == "__init__.py" else [file.stem]
    folder = file.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    return folder, ".".join(parts)
