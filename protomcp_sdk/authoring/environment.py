"""An environment variable a tool file declares it needs (`env(NAME, ...)` in decorators.py):
`protomcp inspect` lists it and `protomcp pack` asks for it in the bundle's settings form
(`user_config`; a `secret=True` one is masked by Claude Desktop)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EnvSpec:
    name: str
    description: str = ""
    secret: bool = False
    default: str | None = None

    @property
    def required(self) -> bool:
        return self.default is None
