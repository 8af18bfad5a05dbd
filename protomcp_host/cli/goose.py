"""Goose (block/goose) keeps its MCP servers as "extensions" in a YAML file:
~/.config/goose/config.yaml ($XDG_CONFIG_HOME on Linux), %APPDATA%\\Block\\goose\\config on
Windows. Each is `{enabled, type: stdio, name, description, cmd, args, envs, env_keys, timeout}`
under a key made from its name (goose's name_to_key)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Protocol

TIMEOUT = 300  # seconds, goose's default for an extension


class _Place(Protocol):  # (install.Place; read-only here, as there)
    @property
    def kind(self) -> str: ...
    @property
    def home(self) -> Path: ...
    def appdata(self) -> Path: ...
    def xdg_config(self) -> Path: ...


def config_path(place: _Place) -> Path:
    if place.kind == "windows":
        return place.appdata() / "Block" / "goose" / "config" / "config.yaml"
    folder = place.xdg_config() if place.kind == "linux" else place.home / ".config"
    return folder / "goose" / "config.yaml"


def key_of(name: str) -> str:
    """goose's name_to_key: whitespace dropped, other characters but [A-Za-z0-9_-] made '_', lowercased."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", re.sub(r"\s", "", name)).lower()


def extension(name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """An `mcpServers` entry as a goose stdio extension."""
    return {
        "enabled": True,
        "type": "stdio",
        "name": name,
        "description": "",
        "cmd": entry["command"],
        "args": list(entry["args"]),
        "envs": dict(entry.get("env") or {}),
        "env_keys": [],
        "timeout": TIMEOUT,
    }


def as_entry(extension: Any) -> Any:
    """A goose extension as an `mcpServers` entry (for doctor); anything else as it is."""
    if not isinstance(extension, dict) or extension.get("type") != "stdio":
        return extension
    entry: dict[str, Any] = {"command": extension.get("cmd"), "args": extension.get("args") or []}
    if extension.get("envs"):
        entry["env"] = extension["envs"]
    return entry


def load(text: str) -> Any:
    import yaml  # (a dependency: --skills reads YAML too)

    return yaml.safe_load(text)


def dump(config: dict[str, Any]) -> bytes:
    import yaml

    return yaml.safe_dump(config, sort_keys=False, default_flow_style=False, allow_unicode=True).encode()
