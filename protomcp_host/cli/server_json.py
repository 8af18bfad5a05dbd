"""The `server.json` of the official MCP Registry (registry.modelcontextprotocol.io): the document
`protomcp registry` writes, the registry's own checks on what goes into it, and the check of the
whole against the registry's published schema (vendored in cli/registry_schema/, see its README).

The rules beyond the schema are the registry's (modelcontextprotocol/registry,
internal/validators): a name `namespace/name` whose namespace is reverse DNS (`io.github.OWNER`
for a GitHub login), versions that are not ranges nor "latest", an HTTPS `.mcpb` download URL
containing "mcp" with its `fileSha256`, and for a PyPI package an `mcp-name: NAME` marker in
its README (the package's PyPI description), which the registry looks for before it publishes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
DESCRIPTION_MAX = 100  # the schema's maxLength
# The registry's grammar (internal/validators/validators.go): namespace/name, each starting and
# ending with a letter or digit; the namespace takes dots and hyphens, the name also underscores.
NAMESPACE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?")
NAME_PART = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9._-]*[a-zA-Z0-9])?")
NAME_BYTE = re.compile(r"[a-zA-Z0-9._/-]")
# What the registry takes for a version range rather than one version: ^1.2, ~1, >=1, 1.x, 1.*, 1 - 2, 1 || 2
VERSION_RANGE = re.compile(r"^\s*(?:\^|~|>|<|=)|\|\||\s-\s|(?:^|\.)[xX*](?:\.|$|-)")
# The forges the official registry takes .mcpb downloads (their releases) and repositories from
FORGES = ("github.com", "gitlab.com")


class RegistryError(Exception):
    """Why no server.json was written."""


def check_name(name: str) -> str:
    """The server name as the registry wants it (io.github.OWNER/NAME, or com.example/NAME for a
    domain the publisher proves), else RegistryError saying what is wrong."""
    example = "e.g. io.github.OWNER/NAME for the GitHub login OWNER, or com.example/NAME for example.com"
    if name.count("/") != 1:
        raise RegistryError(f"--name {name!r}: one namespace and one name, NAMESPACE/NAME ({example})")
    namespace, server = name.split("/")
    if not NAMESPACE.fullmatch(namespace) or "." not in namespace:
        raise RegistryError(
            f"--name {name!r}: the namespace {namespace!r} must be reverse DNS: letters, digits, '.' "
            f"and '-', at least one '.', starting and ending with a letter or digit ({example})"
        )
    if not NAME_PART.fullmatch(server):
        raise RegistryError(
            f"--name {name!r}: the name {server!r} may hold letters, digits, '.', '_' and '-', "
            "starting and ending with a letter or digit"
        )
    if not 3 <= len(name) <= 200:
        raise RegistryError(f"--name {name!r}: 3 to 200 characters")
    return name


def check_version(version: str, what: str = "--version") -> str:
    if version == "latest" or not version.strip() or VERSION_RANGE.search(version) or len(version) > 255:
        raise RegistryError(
            f"{what} {version!r}: the registry wants one specific version such as 1.0.2 "
            '(not a range, not "latest")'
        )
    return version


def check_description(description: str) -> str:
    description = description.strip()
    if not description:
        raise RegistryError("the description is empty: give --description")
    if len(description) > DESCRIPTION_MAX:
        raise RegistryError(
            f"the description is {len(description)} characters; the registry takes at most "
            f"{DESCRIPTION_MAX}: give a shorter one with --description\n  ({description})"
        )
    return description


def check_mcpb_url(url: str) -> list[str]:
    """RegistryError when the registry refuses the URL; else warnings (empty when none)."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.netloc:
        raise RegistryError(f"--mcpb-url {url!r}: an https:// URL where the bundle can be downloaded")
    if "mcp" not in url.lower():
        raise RegistryError(
            f"--mcpb-url {url!r}: the registry wants the string 'mcp' in it (e.g. the .mcpb file name)"
        )
    host = (parts.hostname or "").lower()
    if host not in FORGES:
        return [
            f"--mcpb-url: the official registry takes bundles from GitHub and GitLab releases only "
            f"(e.g. https://github.com/OWNER/REPO/releases/download/v1.0.0/NAME.mcpb), not {host}"
        ]
    return []


def check_remote_url(url: str) -> str:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme != "https" or not host or host in ("localhost", "127.0.0.1", "::1"):
        raise RegistryError(
            f"--remote {url!r}: the public https:// URL of the server's MCP endpoint (e.g. "
            "https://mcp.example.com/mcp)"
        )
    return url


def repository(url: str) -> dict[str, str]:
    """--repository: the source repository entry (GitHub or GitLab, which the registry checks)."""
    parts = urlsplit(url.removesuffix(".git"))
    host = (parts.hostname or "").lower()
    path = parts.path.strip("/")
    if parts.scheme != "https" or host not in FORGES or path.count("/") < 1:
        raise RegistryError(
            f"--repository {url!r}: a repository's https:// address on GitHub or GitLab "
            "(e.g. https://github.com/OWNER/REPO)"
        )
    return {"url": f"https://{host}/{path}", "source": host.split(".")[0]}


def environment_variables(variables: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The variables the tool files declare with env() (cli.pack's Bundle.variables), as the
    registry's KeyValueInput entries: the client asks for them and sets them."""
    entries = []
    for variable in variables:
        entry: dict[str, Any] = {
            "name": variable["name"],
            "description": variable["description"] or f"The environment variable {variable['name']}",
            "isRequired": bool(variable["required"]),
            "isSecret": bool(variable["secret"]),
        }
        if variable["default"] is not None:
            entry["default"] = str(variable["default"])
        entries.append(entry)
    return entries


def sha256(file: Path) -> str:
    digest = hashlib.sha256()
    with file.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def mcpb_package(url: str, bundle: Path, variables: list[dict[str, Any]]) -> dict[str, Any]:
    """The bundle's entry: where it is downloaded from and the sha256 clients check it against."""
    package: dict[str, Any] = {
        "registryType": "mcpb",
        "identifier": url,
        "fileSha256": sha256(bundle),
        "transport": {"type": "stdio"},
    }
    if variables:
        package["environmentVariables"] = environment_variables(variables)
    return package


def pypi_package(name: str, version: str, variables: list[dict[str, Any]]) -> dict[str, Any]:
    """A PyPI distribution's entry: clients run it with `uvx NAME` (its console script NAME)."""
    package: dict[str, Any] = {
        "registryType": "pypi",
        "registryBaseUrl": "https://pypi.org",
        "identifier": name,
        "version": check_version(version, f"the PyPI package {name}'s version"),
        "runtimeHint": "uvx",
        "transport": {"type": "stdio"},
    }
    if variables:
        package["environmentVariables"] = environment_variables(variables)
    return package


def server_json(
    name: str,
    description: str,
    version: str,
    *,
    packages: list[dict[str, Any]],
    remotes: Sequence[str] = (),
    repository: dict[str, str] | None = None,
    title: str | None = None,
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "$schema": SCHEMA_URL,
        "name": check_name(name),
        "description": check_description(description),
        "version": check_version(version),
    }
    if title:
        document["title"] = title
    if repository:
        document["repository"] = repository
    if packages:
        document["packages"] = packages
    if remotes:
        document["remotes"] = [{"type": "streamable-http", "url": check_remote_url(url)} for url in remotes]
    return document


@cache
def schema() -> dict[str, Any]:
    """The vendored schema (its `$id` is SCHEMA_URL)."""
    text = resources.files("protomcp_host.cli").joinpath("registry_schema", "server.schema.json")
    return orjson.loads(text.read_bytes())


def schema_errors(document: dict[str, Any]) -> list[str]:
    """What the registry's schema finds wrong with a document (empty: it validates)."""
    from jsonschema import Draft7Validator

    validator = Draft7Validator(schema(), format_checker=Draft7Validator.FORMAT_CHECKER)
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"
        for error in sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    ]


def readme_declares(text: str, name: str) -> bool:
    """Whether a README holds the registry's ownership marker `mcp-name: NAME` for exactly this
    name: followed by the end or a character a name cannot hold (as the registry matches it)."""
    marker = f"mcp-name: {name}"
    start = text.find(marker)
    while start >= 0:
        end = start + len(marker)
        if end == len(text) or not NAME_BYTE.match(text[end]):
            return True
        start = text.find(marker, start + 1)
    return False


def dumps(document: dict[str, Any]) -> bytes:
    return orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
