"""protomcp as it runs here, as a wheel: what `pack` carries in a bundle, since protomcp-tools
is on no package index that the bundle's installer (uv) could reach.

Made from the import packages this process imports (protomcp_host, protomcp_sdk: the same files,
whether installed from a wheel, editable or from a checkout) and the installed distribution's
metadata (its name, version, dependencies and the `protomcp` command).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import zipfile
from pathlib import Path

from protomcp_host.processes.distribution import DIST_NAME

PACKAGES = ("protomcp_host", "protomcp_sdk")
WHEEL = "Wheel-Version: 1.0\nGenerator: protomcp pack\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


class WheelError(Exception):
    """Why no wheel could be made."""


def package_folder(package: str) -> Path:
    """Where an import package's files are (found, not imported)."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise WheelError(f"{package} is not importable here")
    return Path(spec.origin).parent


def package_files(package: str) -> list[tuple[str, Path]]:
    """(path in the wheel, file) for each file of the package, bytecode caches left out."""
    folder = package_folder(package)
    return [
        (f"{package}/{path.relative_to(folder).as_posix()}", path)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    ]


def build_wheel(folder: Path) -> Path:
    """Write protomcp's wheel into `folder`; returns its path."""
    try:
        dist = importlib.metadata.distribution(DIST_NAME)
    except importlib.metadata.PackageNotFoundError:
        raise WheelError(f"{DIST_NAME} is not installed (pip install -e .)") from None
    name = DIST_NAME.replace("-", "_")
    info = f"{name}-{dist.version}.dist-info"
    metadata = "".join(
        line  # (the license file itself is not carried: its name must not be announced)
        for line in (dist.read_text("METADATA") or "").splitlines(True)
        if not line.startswith("License-File:")
    )
    written: list[tuple[str, bytes]] = []
    for package in PACKAGES:
        written += [(arcname, path.read_bytes()) for arcname, path in package_files(package)]
    written.append((f"{info}/METADATA", metadata.encode()))
    written.append((f"{info}/WHEEL", WHEEL.encode()))
    entry_points = dist.read_text("entry_points.txt")
    if entry_points:
        written.append((f"{info}/entry_points.txt", entry_points.encode()))
    record = "".join(f"{arcname},{_digest(data)},{len(data)}\n" for arcname, data in written)
    record += f"{info}/RECORD,,\n"
    wheel = folder / f"{name}-{dist.version}-py3-none-any.whl"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for arcname, data in written:
            archive.writestr(arcname, data)
        archive.writestr(f"{info}/RECORD", record)
    return wheel


def _digest(data: bytes) -> str:
    raw = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
