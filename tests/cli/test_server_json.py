"""The server.json builder (protomcp_host/cli/server_json.py): the registry's rules on names,
versions and URLs, its README marker, and the vendored schema the documents are checked with."""

from __future__ import annotations

import fnmatch
import hashlib
import tomllib
from pathlib import Path

import orjson
import pytest
from jsonschema import Draft7Validator

from protomcp_host.cli import server_json as doc

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "protomcp_host" / "cli" / "registry_schema" / "server.schema.json"


def test_the_vendored_schema_is_the_version_the_documents_name() -> None:
    schema = orjson.loads(SCHEMA_FILE.read_bytes())
    assert schema["$id"] == doc.SCHEMA_URL == doc.schema()["$id"]
    assert "2025-12-11" in doc.SCHEMA_URL
    Draft7Validator.check_schema(schema)


def test_the_schema_is_packaged() -> None:
    """An installed protomcp (not this checkout) carries the schema: package-data names it."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert any(fnmatch.fnmatch("cli/registry_schema/server.schema.json", p) for p in data["protomcp_host"])


@pytest.mark.parametrize(
    "name",
    ["io.github.octo/weather", "com.example/my_server.v2", "io.github.Octo-Cat/w", "ai.example.mcp/x1"],
)
def test_names_the_registry_takes(name: str) -> None:
    assert doc.check_name(name) == name


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("weather", "NAMESPACE/NAME"),
        ("io.github.octo/weather/extra", "NAMESPACE/NAME"),
        ("octo/weather", "reverse DNS"),  # no dot: no namespace the registry can verify
        ("io.github.octo/", "the name ''"),
        ("-io.github.octo/weather", "reverse DNS"),
        ("io.github.octo/wea ther", "the name 'wea ther'"),
        ("io.github.octo/-weather", "the name '-weather'"),
        ("io.github.oc_to/weather", "reverse DNS"),
        ("io.github.octo/" + "w" * 200, "3 to 200"),
    ],
)
def test_names_the_registry_refuses(name: str, says: str) -> None:
    with pytest.raises(doc.RegistryError, match="--name") as refused:
        doc.check_name(name)
    assert says in str(refused.value)


@pytest.mark.parametrize("version", ["1.0.2", "2.1.0-alpha", "0.1.0+build.5", "v1"])
def test_versions_the_registry_takes(version: str) -> None:
    assert doc.check_version(version) == version


@pytest.mark.parametrize(
    "version", ["latest", "^1.2.3", "~1.2", ">=1.0.0", "1.x", "1.2.*", "1 - 2", "1 || 2", ""]
)
def test_versions_the_registry_refuses(version: str) -> None:
    with pytest.raises(doc.RegistryError, match="one specific version"):
        doc.check_version(version)


def test_mcpb_urls() -> None:
    release = "https://github.com/octo/weather-mcp/releases/download/v1.0.0/weather.mcpb"
    assert doc.check_mcpb_url(release) == []
    with pytest.raises(doc.RegistryError, match="https://"):
        doc.check_mcpb_url(release.replace("https", "http"))
    with pytest.raises(doc.RegistryError, match="'mcp'"):
        doc.check_mcpb_url("https://github.com/octo/weather/releases/download/v1/weather.zip")
    (warning,) = doc.check_mcpb_url("https://downloads.example.com/weather.mcpb")
    assert "GitHub and GitLab releases only" in warning


def test_remote_and_repository_urls() -> None:
    assert doc.check_remote_url("https://mcp.example.com/mcp") == "https://mcp.example.com/mcp"
    for url in ("http://mcp.example.com/mcp", "https://localhost:8000/mcp", "https://127.0.0.1/mcp"):
        with pytest.raises(doc.RegistryError, match="--remote"):
            doc.check_remote_url(url)
    assert doc.repository("https://github.com/octo/weather.git") == {
        "url": "https://github.com/octo/weather",
        "source": "github",
    }
    assert doc.repository("https://gitlab.com/group/sub/proj")["source"] == "gitlab"
    for url in ("https://example.com/octo/weather", "https://github.com/octo", "git@github.com:o/w"):
        with pytest.raises(doc.RegistryError, match="--repository"):
            doc.repository(url)


def test_description_bounds() -> None:
    assert doc.check_description("  Weather by city. ") == "Weather by city."
    with pytest.raises(doc.RegistryError, match="at most 100"):
        doc.check_description("x" * 101)
    with pytest.raises(doc.RegistryError, match="empty"):
        doc.check_description(" ")


def test_the_readme_marker_is_matched_as_the_registry_matches_it() -> None:
    name = "io.github.octo/weather"
    assert doc.readme_declares(f"# Weather\n\n<!-- mcp-name: {name} -->\n", name)
    assert doc.readme_declares(f"mcp-name: {name}", name)
    assert doc.readme_declares(f"- `mcp-name: {name}`\n", name)
    assert not doc.readme_declares(f"mcp-name: {name}-evil\n", name)  # a longer name
    assert not doc.readme_declares(f"Our name is mcp-name: {name}.", name)  # glued to a period
    assert not doc.readme_declares(f"mcp-name:{name}\n", name)
    assert not doc.readme_declares(f"<!-- mcp-name: {name}-->", name)  # '-' continues a name
    assert doc.readme_declares(f"mcp-name: {name}-evil and mcp-name: {name}\n", name)


def test_environment_variables_from_declared_ones() -> None:
    variables = [
        {"name": "API_KEY", "description": "The key", "required": True, "secret": True, "default": None},
        {"name": "UNITS", "description": "", "required": False, "secret": False, "default": "metric"},
    ]
    assert doc.environment_variables(variables) == [
        {"name": "API_KEY", "description": "The key", "isRequired": True, "isSecret": True},
        {
            "name": "UNITS",
            "description": "The environment variable UNITS",
            "isRequired": False,
            "isSecret": False,
            "default": "metric",
        },
    ]


def test_a_full_document_validates_and_a_broken_one_does_not(tmp_path: Path) -> None:
    bundle = tmp_path / "weather.mcpb"
    bundle.write_bytes(b"not really a zip")
    variables = [{"name": "K", "description": "k", "required": True, "secret": True, "default": None}]
    document = doc.server_json(
        "io.github.octo/weather",
        "Weather by city.",
        "1.0.0",
        packages=[
            doc.mcpb_package(
                "https://github.com/octo/w/releases/download/v1/weather.mcpb", bundle, variables
            ),
            doc.pypi_package("octo-weather", "1.0.0", variables),
        ],
        remotes=["https://mcp.example.com/mcp"],
        repository=doc.repository("https://github.com/octo/w"),
    )
    assert doc.schema_errors(document) == []
    assert document["packages"][0]["fileSha256"] == hashlib.sha256(b"not really a zip").hexdigest()
    broken = {**document, "description": "x" * 101, "packages": [{"registryType": "mcpb"}]}
    problems = doc.schema_errors(broken)
    assert any(p.startswith("description:") for p in problems)
    assert any("'identifier' is a required property" in p for p in problems)
