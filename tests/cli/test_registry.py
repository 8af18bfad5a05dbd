"""`protomcp registry`: the server.json it writes validates against the registry's schema
(vendored: protomcp_host/cli/registry_schema/), lists the bundle it builds with that file's
sha256, the PyPI package of the project, and the variables the tool files declare."""

from __future__ import annotations

import hashlib
import subprocess
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft7Validator

from tests.cli.test_pack import mcpb, unpack, validate  # noqa: F401 (mcpb: the official CLI's fixture)
from tests.support.hosts import HOST, ROOT

SCHEMA = orjson.loads(
    (ROOT / "protomcp_host" / "cli" / "registry_schema" / "server.schema.json").read_bytes()
)
NAME = "io.github.octo/weather"
URL = "https://github.com/octo/weather-mcp/releases/download/v1.2.0/weather.mcpb"

WEATHER = '''
    """Weather for Claude: current conditions by city."""
    from protomcp_sdk import env, tool

    API_KEY = env("WEATHER_API_KEY", "Your weather.example API key", secret=True)
    UNITS = env("WEATHER_UNITS", "metric or imperial", default="metric")


    @tool
    def forecast(city: str) -> str:
        """The forecast for a city."""
        return f"sunny in {city}, {UNITS}"
'''


def registry(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HOST, "registry", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def tool_file(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    file = folder / "weather.py"
    file.write_text(textwrap.dedent(WEATHER))
    return file


def valid(document: dict[str, Any]) -> None:
    """Checked against the vendored schema file directly (not through protomcp's own check)."""
    errors = [e.message for e in Draft7Validator(SCHEMA).iter_errors(document)]
    assert errors == [], errors


def project(folder: Path, readme: str | None, scripts: bool = True) -> None:
    text = '[project]\nname = "octo-weather"\nversion = "1.2.0"\nreadme = "README.md"\n'
    text += 'description = "Forecasts by city, from weather.example."\n'
    if scripts:
        text += '\n[project.scripts]\nocto-weather = "octo_weather:main"\n'
    (folder / "pyproject.toml").write_text(text)
    if readme is not None:
        (folder / "README.md").write_text(readme)


def test_a_bundle_entry_with_its_sha256_and_the_declared_variables(tmp_path: Path) -> None:
    tool_file(tmp_path)
    done = registry(
        "weather.py",
        "--name",
        NAME,
        "--version",
        "1.2.0",
        "--mcpb",
        "dist/weather.mcpb",
        "--mcpb-url",
        URL,
        "--remote",
        "https://mcp.example.com/mcp",
        "--repository",
        "https://github.com/octo/weather-mcp",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "wrote server.json (io.github.octo/weather 1.2.0: mcpb, remote; 2 environment variables)"
        in done.stdout
    )
    assert f"upload dist/weather.mcpb to {URL}" in done.stdout
    assert "mcp-publisher login github" in done.stdout
    document = orjson.loads((tmp_path / "server.json").read_bytes())
    valid(document)
    assert document["$schema"] == SCHEMA["$id"]
    assert document["name"] == NAME and document["version"] == "1.2.0"
    assert document["description"] == "Weather for Claude: current conditions by city."  # the docstring
    assert document["repository"] == {"url": "https://github.com/octo/weather-mcp", "source": "github"}
    assert document["remotes"] == [{"type": "streamable-http", "url": "https://mcp.example.com/mcp"}]
    (package,) = document["packages"]
    bundle = tmp_path / "dist" / "weather.mcpb"
    assert package["registryType"] == "mcpb" and package["identifier"] == URL
    assert package["fileSha256"] == hashlib.sha256(bundle.read_bytes()).hexdigest()
    assert package["transport"] == {"type": "stdio"}
    assert package["environmentVariables"] == [
        {
            "name": "WEATHER_API_KEY",
            "description": "Your weather.example API key",
            "isRequired": True,
            "isSecret": True,
        },
        {
            "name": "WEATHER_UNITS",
            "description": "metric or imperial",
            "isRequired": False,
            "isSecret": False,
            "default": "metric",
        },
    ]
    with zipfile.ZipFile(bundle) as archive:  # the bundle pack builds, of the same version
        manifest = orjson.loads(archive.read("manifest.json"))
    assert manifest["version"] == "1.2.0" and manifest["name"] == "weather"
    assert set(manifest["user_config"]) == {"weather_api_key", "weather_units"}


def test_the_listed_bundle_passes_the_official_mcpb_validator(tmp_path: Path, mcpb: Path) -> None:  # noqa: F811
    tool_file(tmp_path)
    done = registry(
        "weather.py",
        "--name",
        NAME,
        "--version",
        "1.2.0",
        "--mcpb",
        "w.mcpb",
        "--mcpb-url",
        URL,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    checked = validate(mcpb, unpack(mcpb, tmp_path / "w.mcpb", tmp_path / "unpacked"))
    assert checked.returncode == 0 and "validation passes" in checked.stdout, checked.stdout


def test_a_pypi_package_from_the_project_and_its_readme_marker(tmp_path: Path) -> None:
    tool_file(tmp_path / "octo_weather")
    project(tmp_path, readme=f"# Weather\n\n<!-- mcp-name: {NAME} -->\n")
    done = registry(
        "octo_weather/weather.py", "--name", NAME, "--pypi", "-o", "out/server.json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
    assert f"README.md holds `mcp-name: {NAME}`" in done.stdout
    assert f"(the version of {tmp_path / 'pyproject.toml'})" in done.stdout
    document = orjson.loads((tmp_path / "out" / "server.json").read_bytes())
    valid(document)
    assert document["version"] == "1.2.0"  # the pyproject's
    assert document["packages"] == [
        {
            "registryType": "pypi",
            "registryBaseUrl": "https://pypi.org",
            "identifier": "octo-weather",
            "version": "1.2.0",
            "runtimeHint": "uvx",
            "transport": {"type": "stdio"},
            "environmentVariables": document["packages"][0]["environmentVariables"],
        }
    ]
    assert [v["name"] for v in document["packages"][0]["environmentVariables"]] == [
        "WEATHER_API_KEY",
        "WEATHER_UNITS",
    ]


def test_the_description_falls_back_to_the_project_s(tmp_path: Path) -> None:
    undocumented = textwrap.dedent(WEATHER).replace(
        '"""Weather for Claude: current conditions by city."""', ""
    )
    (tmp_path / "weather.py").write_text(undocumented)
    project(tmp_path, readme=None)
    done = registry("weather.py", "--name", NAME, "--remote", "https://mcp.example.com/mcp", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    document = orjson.loads((tmp_path / "server.json").read_bytes())
    assert document["description"] == "Forecasts by city, from weather.example."
    assert document["version"] == "1.2.0" and "packages" not in document
    valid(document)


def test_a_readme_without_the_marker_no_console_script_and_two_versions_are_warned_of(tmp_path: Path) -> None:
    tool_file(tmp_path)
    project(tmp_path, readme="# Weather\n\nmcp-name: io.github.octo/weather-two\n", scripts=False)
    done = registry("weather.py", "--name", NAME, "--pypi", "--version", "1.3.0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    warnings = " ".join(done.stderr.split())
    assert "the server's version is 1.3.0 and the package's 1.2.0" in warnings
    assert f"README.md lacks the line <!-- mcp-name: {NAME} -->" in warnings
    assert "`uvx octo-weather`" in warnings and "[project.scripts]" in warnings
    valid(orjson.loads((tmp_path / "server.json").read_bytes()))


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--name", "weather", "--version", "1.0.0", "--remote", "https://mcp.example.com/mcp"],
            "NAMESPACE/NAME",
        ),
        (
            ["--name", "octo/weather", "--version", "1", "--remote", "https://mcp.example.com/mcp"],
            "reverse DNS",
        ),
        (["--name", NAME, "--version", "1.0.0", "--mcpb", "w.mcpb"], "--mcpb and --mcpb-url go together"),
        (
            ["--name", NAME, "--version", "1.0.0", "--mcpb", "w.mcpb", "--mcpb-url", URL.replace("mcp", "")],
            "'mcp'",
        ),
        (
            ["--name", NAME, "--version", "latest", "--remote", "https://mcp.example.com/mcp"],
            "one specific version",
        ),
        (["--name", NAME, "--remote", "https://mcp.example.com/mcp"], "give --version"),
        (["--name", NAME, "--version", "1.0.0"], "nothing runs the server"),
        (["--name", NAME, "--version", "1.0.0", "--pypi"], "no pyproject.toml"),
        (["--name", NAME, "--version", "1.0.0", "--remote", "http://localhost/mcp"], "--remote"),
        (
            [
                "--name",
                NAME,
                "--version",
                "1",
                "--remote",
                "https://m.example.com/mcp",
                "--description",
                "x" * 101,
            ],
            "at most 100",
        ),
    ],
)
def test_what_the_registry_would_refuse_is_refused_before_anything_is_written(
    tmp_path: Path, args: list[str], says: str
) -> None:
    (tmp_path / ".git").mkdir()  # (the search for a pyproject.toml stops here)
    tool_file(tmp_path)
    done = registry("weather.py", *args, cwd=tmp_path)
    assert done.returncode != 0
    assert says in " ".join(done.stderr.split()), done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [".git", "weather.py"]


def test_help() -> None:
    done = subprocess.run([*HOST, "registry", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    for option in ("--name NAMESPACE/NAME", "--mcpb OUT.mcpb", "--mcpb-url URL", "--pypi", "--remote URL"):
        assert option in done.stdout
    listed = subprocess.run([*HOST, "--help"], capture_output=True, text=True, timeout=60)
    assert "registry" in listed.stdout
