"""`protomcp pack`: MCP Bundles checked with the official `mcpb` CLI (tests/mcpb pins it), and a
python bundle started from its own manifest's mcp_config, as Claude Desktop starts it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from protomcp_host.cli.pack import Bundle, plan, script_dependencies
from tests.cli.test_plugins import plugin_venv  # noqa: F401 (the fixture: a virtualenv with the example plugin)
from tests.support.hosts import HOST
from tests.support.installed import missing

MCPB_DIR = Path(__file__).resolve().parents[1] / "mcpb"
MCPB = MCPB_DIR / "node_modules" / ".bin" / "mcpb"

WEATHER = '''
    """Weather for Claude: current conditions by city."""
    # /// script
    # dependencies = ["tzdata>=2024.1"]
    # ///
    import anyio
    import protomcp_sdk
    from protomcp_sdk import env, prompt, tool

    API_KEY = env("WEATHER_API_KEY", "Your weather.example API key", secret=True)
    UNITS = env("WEATHER_UNITS", "metric or imperial", default="metric")


    @tool
    def forecast(city: str) -> str:
        """The forecast for a city."""
        return f"sunny in {city}, {UNITS}, key {API_KEY}"


    @tool
    def where() -> list[str]:
        """Where protomcp and a dependency were imported from."""
        return [protomcp_sdk.__file__, anyio.__file__]


    @prompt(description="Plan a day out")
    def plan_day(city: str) -> str:
        return f"Plan a day out in {city}."
'''


@pytest.fixture(scope="module")
def mcpb() -> Path:
    """The official CLI, installed from tests/mcpb/package-lock.json when it is not yet."""
    if not MCPB.exists():
        npm = shutil.which("npm")
        if npm is None or shutil.which("node") is None:
            missing("node/npm not installed: the official mcpb CLI cannot run here")
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=MCPB_DIR, check=True, timeout=600
        )
    return MCPB


SMALL = '''
    from protomcp_sdk import tool


    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b
'''


def tool_file(folder: Path) -> Path:
    file = folder / "weather.py"
    file.write_text(textwrap.dedent(WEATHER))
    return file


def pack(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HOST, "pack", *args], cwd=cwd, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL
    )


def unpack(mcpb: Path, bundle: Path, into: Path) -> Path:
    subprocess.run(
        [str(mcpb), "unpack", str(bundle), str(into)], check=True, capture_output=True, timeout=120
    )
    return into


def validate(mcpb: Path, folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(mcpb), "validate", str(folder)], capture_output=True, text=True, timeout=120)


def test_a_uv_bundle_is_valid_and_asks_for_what_the_file_needs(tmp_path: Path, mcpb: Path) -> None:
    tool_file(tmp_path)
    done = pack("weather.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "weather.mcpb (uv bundle: 2 tools, 2 settings)" in done.stdout
    folder = unpack(mcpb, tmp_path / "weather.mcpb", tmp_path / "unpacked")
    checked = validate(mcpb, folder)
    assert checked.returncode == 0 and "validation passes" in checked.stdout, checked.stdout
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    assert manifest["manifest_version"] == "0.4" and manifest["server"]["type"] == "uv"
    assert manifest["description"] == "Weather for Claude: current conditions by city."
    assert [t["name"] for t in manifest["tools"]] == ["forecast", "where"]
    assert manifest["prompts"] == [
        {
            "name": "plan_day",
            "description": "Plan a day out",
            "arguments": ["city"],
            "text": "Plan a day out in ${arguments.city}.",
        }  # the prompt, rendered with placeholders
    ]
    assert manifest["tools_generated"] is False
    assert manifest["user_config"] == {
        "weather_api_key": {
            "type": "string",
            "title": "WEATHER_API_KEY",
            "sensitive": True,
            "description": "Your weather.example API key",
            "required": True,
        },
        "weather_units": {
            "type": "string",
            "title": "WEATHER_UNITS",
            "description": "metric or imperial",
            "required": False,
            "default": "metric",
        },
    }
    assert manifest["server"]["mcp_config"]["env"] == {
        "WEATHER_API_KEY": "${user_config.weather_api_key}",
        "WEATHER_UNITS": "${user_config.weather_units}",
    }
    pyproject = tomllib.loads((folder / "pyproject.toml").read_text())
    [ours, tzdata] = pyproject["project"]["dependencies"]
    assert ours.startswith("protomcp-tools>=") and tzdata == "tzdata>=2024.1"  # its PEP 723 block
    assert (folder / "server" / "tools" / "weather.py").exists() and not (folder / "server" / "lib").exists()
    # protomcp-tools is on no index uv could reach: uv takes it from the wheel the bundle carries
    wheel = pyproject["tool"]["uv"]["sources"]["protomcp-tools"]["path"]
    assert wheel.startswith("wheels/protomcp_tools-") and (folder / wheel).is_file()


def test_the_carried_wheel_installs_protomcp(tmp_path: Path, mcpb: Path) -> None:
    """The wheel is whole: pip installs it (no index) and the installed packages and the
    `protomcp` command serve a tool file."""
    file = tmp_path / "tools.py"
    file.write_text(textwrap.dedent(SMALL))
    assert pack("tools.py", cwd=tmp_path).returncode == 0
    [wheel] = [name for name in zipfile.ZipFile(tmp_path / "tools.mcpb").namelist() if name.endswith(".whl")]
    zipfile.ZipFile(tmp_path / "tools.mcpb").extract(wheel, tmp_path)
    target = tmp_path / "installed"
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"]
    subprocess.run([*install, "--target", str(target), str(tmp_path / wheel)], check=True, timeout=120)
    assert (target / "bin" / "protomcp").exists()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)  # the installed copy, not this checkout
    listed = subprocess.run(
        [sys.executable, "-m", "protomcp_host", "list", str(file), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert listed.returncode == 0, listed.stderr
    assert [tool["name"] for tool in orjson.loads(listed.stdout)["tools"]] == ["add"]
    where = [sys.executable, "-c", "import protomcp_host, protomcp_sdk; print(protomcp_host.__file__)"]
    imported = subprocess.run(
        where, capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path, check=True
    )
    assert Path(imported.stdout.strip()).is_relative_to(target)


def configured(folder: Path, values: dict[str, str], env: dict[str, str]) -> Any:
    """The stdio server a bundle's manifest says to start, as Claude Desktop starts it:
    ${__dirname} and the settings substituted, the config's variables over `env`."""
    from mcp import StdioServerParameters

    values = {"${__dirname}": str(folder), **values}

    def substitute(text: str) -> str:
        for key, value in values.items():
            text = text.replace(key, value)
        return text

    config = orjson.loads((folder / "manifest.json").read_bytes())["server"]["mcp_config"]
    env = env | {key: substitute(value) for key, value in config["env"].items()}
    command = shutil.which(config["command"]) or sys.executable
    args = [substitute(arg) for arg in config["args"]]
    return StdioServerParameters(command=command, args=args, env=env, cwd=str(folder.parent))


async def tools_and_a_call(params: Any, timeout: float = 60) -> tuple[list[str], str]:
    """The tools a stdio server lists, and its answer to add(a=1, b=2)."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    with anyio.fail_after(timeout):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = sorted(tool.name for tool in (await session.list_tools()).tools)
            answer = await session.call_tool("add", {"a": 1, "b": 2})
    return names, answer.content[0].text  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_a_uv_bundle_starts_with_uv_taking_protomcp_from_its_wheel(tmp_path: Path, mcpb: Path) -> None:
    """`uv run` as the manifest says: protomcp-tools from the carried wheel (no index has it), its
    dependencies from the package index."""
    uv = pytest.importorskip("uv", reason="needs uv (the test extra installs it)").find_uv_bin()
    (tmp_path / "tools.py").write_text(textwrap.dedent(SMALL))
    assert pack("tools.py", cwd=tmp_path).returncode == 0
    folder = unpack(mcpb, tmp_path / "tools.mcpb", tmp_path / "installed")
    env = {
        key: value for key, value in os.environ.items() if key != "PYTHONPATH" and not key.startswith("UV_")
    }
    env["PATH"] = os.pathsep.join([str(Path(uv).parent), env.get("PATH", "")])  # the manifest says "uv"
    params = configured(folder, {}, env)
    assert Path(params.command).name == "uv"
    assert await tools_and_a_call(params, timeout=300) == (["add"], "3")  # (a first run downloads)
    [installed] = (folder / ".venv").glob("lib/python*/site-packages/protomcp_tools-*.dist-info")
    source = orjson.loads((installed / "direct_url.json").read_bytes())["url"]
    assert source.startswith("file://") and source.endswith("-py3-none-any.whl")


@pytest.mark.anyio
async def test_a_python_bundle_carries_what_a_stdio_host_needs_and_no_more(
    tmp_path: Path, mcpb: Path
) -> None:
    """At most 6 MB for a small tool file: none of what HTTP, dev or the other commands need; it
    serves from its own lib alone, in an interpreter that sees nothing else (a bare virtualenv,
    -I: no PYTHONPATH, no user site), as must the tool process it starts."""
    (tmp_path / "tools.py").write_text(textwrap.dedent(SMALL))
    done = pack("tools.py", "--type", "python", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "tools.mcpb").stat().st_size <= 6_000_000
    folder = unpack(mcpb, tmp_path / "tools.mcpb", tmp_path / "installed")
    assert validate(mcpb, folder).returncode == 0
    carried = {path.name.lower() for path in (folder / "server" / "lib").iterdir()}
    for http_or_dev in ("uvicorn", "starlette", "cryptography", "rich", "pygments", "watchfiles", "jwt"):
        assert http_or_dev not in carried
    assert await tools_and_a_call(isolated(configured(folder, {}, {}), tmp_path)) == (["add"], "3")


def isolated(params: Any, tmp_path: Path) -> Any:
    """`params` run by an interpreter that sees nothing but the bundle: a virtualenv with no
    packages, -I (no PYTHONPATH, no user site) and no PYTHON* variables."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    params.command, params.args = str(bare / "bin" / "python"), ["-I", *params.args]
    params.env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    return params


SKILLS = Path(__file__).resolve().parents[2] / "examples" / "skills"


@pytest.mark.anyio
async def test_skills_go_into_the_bundle_and_its_manifest_serves_them(tmp_path: Path, mcpb: Path) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    (tmp_path / "tools.py").write_text(textwrap.dedent(SMALL))
    done = pack("tools.py", "--skills", str(SKILLS), "--type", "python", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    folder = unpack(mcpb, tmp_path / "tools.mcpb", tmp_path / "installed")
    assert validate(mcpb, folder).returncode == 0
    assert (folder / "server" / "skills" / "skills" / "adding-a-tool" / "SKILL.md").is_file()
    config = orjson.loads((folder / "manifest.json").read_bytes())["server"]["mcp_config"]
    assert config["args"] == ["${__dirname}/server/main.py", "--skills", "${__dirname}/server/skills/skills"]
    with anyio.fail_after(60):
        params = isolated(configured(folder, {}, {}), tmp_path)  # (YAML for SKILL.md: in the bundle)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert [tool.name for tool in (await session.list_tools()).tools] == ["add"]
            uris = {str(resource.uri) for resource in (await session.list_resources()).resources}
    assert {"skill://adding-a-tool/SKILL.md", "skill://release-notes/SKILL.md"} <= uris


def test_a_uv_bundle_passes_its_skills_and_a_bad_folder_is_not_packed(tmp_path: Path) -> None:
    bundle = plan([], [], "uv", skills=[SKILLS])
    assert bundle.name == "skills"
    assert bundle.manifest()["server"]["mcp_config"]["args"][-2:] == [
        "--skills",
        "${__dirname}/server/skills/skills",
    ]
    (tmp_path / "empty").mkdir()
    (tmp_path / "tools.py").write_text(textwrap.dedent(SMALL))
    done = pack("tools.py", "--skills", "empty", cwd=tmp_path)
    assert done.returncode == 1 and "no skills in it" in done.stderr and "nothing was packed" in done.stderr
    assert not (tmp_path / "tools.mcpb").exists()


def test_the_official_validator_refuses_a_broken_manifest(tmp_path: Path, mcpb: Path) -> None:
    """(so the validations above can fail)"""
    (tmp_path / "manifest.json").write_bytes(orjson.dumps({"manifest_version": "0.4", "name": "x"}))
    assert validate(mcpb, tmp_path).returncode != 0


@pytest.mark.anyio
async def test_a_python_bundle_serves_its_tools_from_its_own_mcp_config(tmp_path: Path, mcpb: Path) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    tool_file(tmp_path)
    done = pack("weather.py", "--type", "python", "-o", "dist/weather.mcpb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    folder = unpack(mcpb, tmp_path / "dist" / "weather.mcpb", tmp_path / "installed")
    checked = validate(mcpb, folder)
    assert checked.returncode == 0, checked.stdout
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    assert manifest["server"]["type"] == "python"
    assert manifest["compatibility"]["runtimes"]["python"].startswith(
        f">={sys.version_info[0]}.{sys.version_info[1]}"
    )
    settings = {"${user_config.weather_api_key}": "k-123", "${user_config.weather_units}": "imperial"}
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    params = configured(folder, settings, env)
    with anyio.fail_after(60):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert sorted(t.name for t in (await session.list_tools()).tools) == ["forecast", "where"]
            answer = await session.call_tool("forecast", {"city": "Oslo"})
            assert answer.content[0].text == "sunny in Oslo, imperial, key k-123"  # type: ignore[union-attr]
            where = await session.call_tool("where", {})
            paths = orjson.loads(where.content[0].text)  # type: ignore[union-attr]
    lib = folder.resolve() / "server" / "lib"
    assert all(Path(path).resolve().is_relative_to(lib) for path in paths), paths  # the bundle's own


def test_a_file_that_fails_to_load_is_not_packed(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("from protomcp_sdk import tool\n\ndef broken(:\n")
    done = pack("broken.py", cwd=tmp_path)
    assert done.returncode == 1 and "broken.py failed to load" in done.stderr and "SyntaxError" in done.stderr
    assert not (tmp_path / "broken.mcpb").exists()


def test_a_folder_is_packed_whole_with_its_helpers(tmp_path: Path) -> None:
    folder = tmp_path / "kit"
    folder.mkdir()
    (folder / "helper.py").write_text("def double(x: int) -> int:\n    return 2 * x\n")
    (folder / "maths.py").write_text(
        "from helper import double\nfrom protomcp_sdk import tool\n\n@tool\ndef twice(x: int) -> int:\n"
        "    return double(x)\n"
    )
    bundle = plan([folder], [], "uv")
    assert [t["name"] for entry in bundle.report["files"] for t in entry["tools"]] == ["twice"]
    assert "TOOLS = ['kit']" in bundle.main_py()
    done = pack(str(folder), "-o", "kit.mcpb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    names = zipfile.ZipFile(tmp_path / "kit.mcpb").namelist()
    assert {"server/tools/kit/helper.py", "server/tools/kit/maths.py", "server/main.py"} <= set(names)


def test_script_dependencies_come_from_the_pep_723_block(tmp_path: Path) -> None:
    file = tmp_path / "t.py"
    file.write_text(
        '# /// script\n# requires-python = ">=3.11"\n# dependencies = [\n#   "httpx>=0.27",\n'
        '#   "rich",\n# ]\n# ///\nimport httpx\n'
    )
    assert script_dependencies(file) == ["httpx>=0.27", "rich"]
    file.write_text('# /// script\n# dependencies = ["protomcp-tools>=0.1", "protomcp_tools_extra"]\n# ///\n')
    bundle = Bundle("t", "1", "", "me", "uv", [file])
    assert bundle.dependencies()[1:] == ["protomcp_tools_extra"]  # protomcp-tools: once, from pack
    file.write_text("import os\n")
    assert script_dependencies(file) == []


def test_env_reads_a_variable_and_declares_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from protomcp_sdk import env
    from protomcp_sdk.authoring.registry import REGISTRY

    REGISTRY.clear()
    try:
        monkeypatch.setenv("PACK_TEST_KEY", "k")
        monkeypatch.setenv("PACK_TEST_EMPTY", "")  # an optional setting left blank in the form
        assert env("PACK_TEST_KEY", "a key", secret=True) == "k"
        assert env("PACK_TEST_EMPTY", default="d") == "d"
        assert env("PACK_TEST_KEY", "read again") == "k"
        declared = list(REGISTRY.env.values())
        assert [(v.name, v.description, v.secret, v.required) for v in declared] == [
            ("PACK_TEST_KEY", "a key", True, True),
            ("PACK_TEST_EMPTY", "", False, False),
        ]
    finally:
        REGISTRY.clear()


def test_a_plugin_is_a_dependency_and_an_argument(
    request: pytest.FixtureRequest, tmp_path: Path, mcpb: Path
) -> None:
    python = request.getfixturevalue("plugin_venv")  # the example plugin installed there
    done = pack("--python", str(python), "--plugin", "unit-converter", "-o", "units.mcpb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    folder = unpack(mcpb, tmp_path / "units.mcpb", tmp_path / "unpacked")
    assert validate(mcpb, folder).returncode == 0
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    assert manifest["name"] == "unit-converter"
    assert [t["name"] for t in manifest["tools"]] == ["convert_length"]
    assert '"protomcp-example-plugin==0.1.0"' in (folder / "pyproject.toml").read_text()
    main = (folder / "server" / "main.py").read_text()
    assert "TOOLS = []" in main and "ARGS = ['--plugin', 'unit-converter']" in main


def test_hidden_tools_are_not_listed_but_announced(tmp_path: Path) -> None:
    file = tmp_path / "admin.py"
    file.write_text(
        "from protomcp_sdk import tool\n\n@tool\ndef status() -> str:\n    return 'ok'\n\n"
        "@tool(hidden=True)\ndef reindex() -> str:\n    return 'done'\n"
    )
    manifest = plan([file], [], "uv").manifest()
    assert [t["name"] for t in manifest["tools"]] == ["status"] and manifest["tools_generated"] is True


APP = '''
    from pathlib import Path

    from protomcp_sdk import resource, tool

    CHART = Path(__file__).parent / "views" / "chart.html"


    @resource("ui://charts/bar", files=["views/chart.html"])
    def chart() -> str:
        """The chart."""
        return CHART.read_text()


    @tool(ui="ui://charts/bar")
    def sales(quarter: str) -> dict:
        """Sales of a quarter."""
        return {"quarter": quarter}
'''


def test_an_apps_html_beside_its_tool_file_goes_into_the_bundle(tmp_path: Path, mcpb: Path) -> None:
    (tmp_path / "views").mkdir()
    (tmp_path / "views" / "chart.html").write_text("<!doctype html><p>chart</p>")
    (tmp_path / "views" / "notes.txt").write_text("not declared: stays out")
    (tmp_path / "charts.py").write_text(textwrap.dedent(APP))
    done = pack("charts.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    folder = unpack(mcpb, tmp_path / "charts.mcpb", tmp_path / "installed")
    assert validate(mcpb, folder).returncode == 0
    tools = folder / "server" / "tools"
    assert (tools / "views" / "chart.html").read_text() == "<!doctype html><p>chart</p>"
    assert not (tools / "views" / "notes.txt").exists()
    read = subprocess.run(
        [*HOST, "call", str(tools / "charts.py"), "ui://charts/bar"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert read.returncode == 0, read.stderr
    assert "<!doctype html><p>chart</p>" in read.stdout  # the unpacked tool file serves its app


def test_a_folders_declared_files_keep_their_place(tmp_path: Path) -> None:
    kit = tmp_path / "kit"
    (kit / "views").mkdir(parents=True)
    (kit / "views" / "chart.html").write_text("<p>chart</p>")
    (kit / "charts.py").write_text(textwrap.dedent(APP))
    done = pack(str(kit), "-o", "kit.mcpb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    names = zipfile.ZipFile(tmp_path / "kit.mcpb").namelist()
    assert {"server/tools/kit/charts.py", "server/tools/kit/views/chart.html"} <= set(names)
