"""What `--upstream NAME=CMD|URL` (and its companion options) mean, before anything connects.

Light on imports: the CLI, `doctor` and `install` read upstream specs without the `mcp`
library, which is imported only when an upstream is actually served (it is slow to import)."""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
EXTRA_HINT = "pip install 'protomcp-tools[upstream]'"


class SpecError(ValueError):
    """A malformed --upstream (or --upstream-token-env / --upstream-prefix) value."""


@dataclass(frozen=True, slots=True)
class UpstreamSpec:
    """One upstream MCP server: a stdio command, or a Streamable HTTP URL."""

    name: str
    command: tuple[str, ...] = ()  # stdio: the server's command line
    url: str = ""  # Streamable HTTP: the MCP endpoint
    token_env: str = ""  # HTTP: send 'Authorization: Bearer $token_env'
    prefix: str | None = None  # None: NAME_

    @property
    def label(self) -> str:
        """How messages (and the catalog) name it."""
        return f"upstream {self.name}"

    @property
    def namespace(self) -> str:
        return f"{self.name}_" if self.prefix is None else self.prefix

    @property
    def is_http(self) -> bool:
        return bool(self.url)

    def absolute(self) -> UpstreamSpec:
        """The same upstream for a client that starts protomcp elsewhere: a stdio command's
        program found on PATH and its arguments that name existing files made absolute."""
        if not self.command:
            return self
        program, *args = self.command
        found = shutil.which(program)
        absolute = [str(Path(found).absolute()) if found else program]
        absolute += [
            str(Path(a).resolve()) if not a.startswith("-") and Path(a).exists() else a for a in args
        ]
        return replace(self, command=tuple(absolute))

    def argv(self) -> list[str]:
        """The spec as run options again (install writes them into a client's config)."""
        target = self.url or shlex.join(self.command)
        args = ["--upstream", f"{self.name}={target}"]
        if self.token_env:
            args += ["--upstream-token-env", f"{self.name}={self.token_env}"]
        if self.prefix is not None:
            args += ["--upstream-prefix", f"{self.name}={self.prefix}"]
        return args


def _split(value: str, what: str) -> tuple[str, str]:
    name, sep, rest = value.partition("=")
    name = name.strip()
    if not sep or not NAME.match(name):
        raise SpecError(f"{what} {value!r}: expected NAME=..., NAME a letter then letters, digits, _ or -")
    return name, rest


def parse_specs(
    upstreams: tuple[str, ...] | list[str],
    token_envs: tuple[str, ...] | list[str] = (),
    prefixes: tuple[str, ...] | list[str] = (),
) -> list[UpstreamSpec]:
    """Turn the option values into specs; raises SpecError naming the bad value."""
    targets: dict[str, str] = {}
    for value in upstreams:
        name, target = _split(value, "--upstream")
        if name in targets:
            raise SpecError(f"--upstream {name}: given twice")
        if not target.strip():
            raise SpecError(f"--upstream {value!r}: give a command or an http(s):// URL after '='")
        targets[name] = target.strip()
    tokens: dict[str, str] = {}
    for value in token_envs:
        name, env = _split(value, "--upstream-token-env")
        if name not in targets:
            raise SpecError(f"--upstream-token-env {value!r}: no --upstream named {name}")
        if not _is_url(targets[name]):
            raise SpecError(f"--upstream-token-env {value!r}: {name} is not an http(s) upstream")
        if not env:
            raise SpecError(f"--upstream-token-env {value!r}: name an environment variable")
        tokens[name] = env
    chosen: dict[str, str] = {}
    for value in prefixes:
        name, prefix = _split(value, "--upstream-prefix")
        if name not in targets:
            raise SpecError(f"--upstream-prefix {value!r}: no --upstream named {name}")
        chosen[name] = prefix
    specs = []
    for name, target in targets.items():
        if _is_url(target):
            specs.append(
                UpstreamSpec(name, url=target, token_env=tokens.get(name, ""), prefix=chosen.get(name))
            )
        else:
            try:
                command = tuple(shlex.split(target))
            except ValueError as exc:
                raise SpecError(f"--upstream {name}: {exc}") from None
            specs.append(UpstreamSpec(name, command=command, prefix=chosen.get(name)))
    return specs


def _is_url(target: str) -> bool:
    return target.startswith(("http://", "https://"))
