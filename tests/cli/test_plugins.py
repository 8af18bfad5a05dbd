"""Tool modules inside packages, `-m MODULE`, and plugins installed as distributions."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import orjson
import pytest

from protomcp_sdk.testing import Client, ClientError
from tests.support.hosts import HOST, ROOT

PLUGIN = ROOT / "examples" / "plugin"


def make_package(root: Path, name: str, value: str) -> Path:
    """root/name/{__init__,helpers,tools}.py, where tools.py imports helpers relatively."""
    package = root / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text(f"VALUE = {value!r}\n")
    (package / "tools.py").write_text(
        "from protomcp_sdk import tool\n"
        "from .helpers import VALUE\n\n"
        f"@tool\ndef {name}_value() -> str:\n    return VALUE\n"
    )
    return package / "tools.py"


def env_with_path(*folders: Path) -> dict[str, str]:
    paths = [*map(str, folders), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


async def test_package_files_and_modules_use_relative_imports(tmp_path: Path) -> None:
    first = make_package(tmp_path, "alpha", "from alpha")
    make_package(tmp_path / "more", "beta", "from beta")
    # Two tools.py files: one by path, one by module name; each in its own tool process.
    async with Client(first, options=("-m", "beta.tools"), env=env_with_path(tmp_path / "more")) as c:
        assert sorted(t["name"] for t in await c.list_tools()) == ["alpha_value", "beta_value"]
        assert (await c.call("alpha_value")).text == "from alpha"
        assert (await c.call("beta_value")).text == "from beta"


def test_unknown_module_and_plugin_are_clear_errors(tmp_path: Path) -> None:
    done = subprocess.run(
        [*HOST, "run", "-m", "no_such_module_here.tools", "--plugin", "no-such-plugin"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert "-m no_such_module_here.tools: ModuleNotFoundError: No module named" in done.stderr
    assert "--plugin no-such-plugin: no such plugin" in done.stderr


@pytest.fixture(scope="module")
def plugin_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv with the example plugin installed, made from what this test run has alone.

    Nothing is built: no pip, setuptools or wheel is asked for (the base interpreter of a test
    virtualenv may lack them). The plugin's files go where an installer puts them, beside the
    `.dist-info` an installer writes (metadata and entry points read from the example's
    pyproject.toml), and a .pth file lets the new environment see this run's own packages
    (protomcp_sdk and its dependencies)."""
    root = tmp_path_factory.mktemp("plugin")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    where = [sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
    ours = {subprocess.run(where, capture_output=True, text=True, check=True).stdout.strip()}
    ours.update(p for p in sys.path if p.endswith("-packages"))
    site_packages = Path(
        subprocess.run([str(python), *where[1:]], capture_output=True, text=True, check=True).stdout.strip()
    )
    site_packages.mkdir(parents=True, exist_ok=True)
    # addsitedir, not a bare path: the .pth files there (editable installs) are read too.
    lines = [f"import site; site.addsitedir({folder!r})" for folder in sorted(ours)]
    (site_packages / "zz_test_run_packages.pth").write_text("\n".join(lines) + "\n")
    install_plugin(PLUGIN, site_packages)
    return python


def install_plugin(source: Path, site_packages: Path) -> None:
    """What `pip install` leaves for a pure-Python distribution: its package, and a .dist-info
    with METADATA, entry_points.txt, INSTALLER and RECORD."""
    pyproject = tomllib.loads((source / "pyproject.toml").read_text())
    project, packages = pyproject["project"], pyproject["tool"]["setuptools"]["packages"]
    for package in packages:
        shutil.copytree(source / package, site_packages / package)
    name, version = project["name"], project["version"]
    info = site_packages / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: {project['description']}\n"
    )
    groups = project.get("entry-points", {})
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in entries.items()) + "\n"
            for group, entries in groups.items()
        )
    )
    (info / "INSTALLER").write_text("protomcp-tests\n")
    files = [p.relative_to(site_packages) for p in site_packages.rglob("*") if p.is_file()]
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files if f.parts[0] in (*packages, info.name)))


def test_plugins_lists_the_installed_plugin(plugin_venv: Path) -> None:
    done = subprocess.run(
        [*HOST, "plugins", "--python", str(plugin_venv)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("unit-converter"))
    assert "protomcp_example_plugin.tools" in line and "protomcp-example-plugin 0.1.0" in line
    assert line.endswith(str(Path("protomcp_example_plugin") / "tools.py"))


async def test_installed_plugin_is_served_beside_a_file(plugin_venv: Path, tmp_path: Path) -> None:
    file = tmp_path / "extra.py"
    file.write_text("from protomcp_sdk import tool\n\n@tool\ndef ping() -> str:\n    return 'pong'\n")
    options = ("--python", str(plugin_venv), "--plugin", "unit-converter")
    async with Client(file, options=options) as c:
        assert sorted(t["name"] for t in await c.list_tools()) == ["convert_length", "ping"]
        result = await c.call("convert_length", value=1, from_unit="km", to_unit="m")
        assert result.structured == {"result": 1000.0}
        assert (await c.call("ping")).text == "pong"
    # Not installed in this interpreter: the same name is an error.
    with pytest.raises(ClientError, match="no such plugin"):
        async with Client(file, options=("--plugin", "unit-converter")):
            pass


def test_list_call_doctor_and_install_take_modules(tmp_path: Path) -> None:
    make_package(tmp_path / "more", "beta", "from beta")
    home = tmp_path / "home"
    env = {k: v for k, v in env_with_path(tmp_path / "more").items() if k != "XDG_CONFIG_HOME"}
    env["HOME"] = str(home)

    def protomcp(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*HOST, *args], capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL
        )

    listed = protomcp("list", "-m", "beta.tools")
    assert listed.returncode == 0 and listed.stdout.startswith("beta_value()"), listed.stderr
    called = protomcp("call", "-m", "beta.tools", "beta_value")
    assert called.returncode == 0 and called.stdout == "from beta\n", called.stderr
    doctor = protomcp("doctor", "-m", "beta.tools")
    assert doctor.returncode == 0 and "1 tool loaded" in doctor.stdout, doctor.stdout
    installed = protomcp("install", "cursor", "-m", "beta.tools", "--env", f"PYTHONPATH={tmp_path / 'more'}")
    assert installed.returncode == 0, installed.stderr
    entry = orjson.loads((home / ".cursor" / "mcp.json").read_bytes())["mcpServers"]["beta"]
    assert entry["args"][-3:] == ["run", "-m", "beta.tools"]
    doctor = protomcp("doctor")  # the entry's module is no tool file
    assert doctor.returncode == 0 and "No problems found." in doctor.stdout, doctor.stdout
    missing = protomcp("list", "-m", "no_such_module_here.tools")
    assert missing.returncode == 1 and "No module named" in missing.stderr


def test_list_call_and_install_take_plugins(plugin_venv: Path) -> None:
    def protomcp(*args: str, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [python, "-m", "protomcp_host", *args],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

    plugin = ("--python", str(plugin_venv), "--plugin", "unit-converter")
    listed = protomcp("list", *plugin)
    assert listed.returncode == 0 and listed.stdout.startswith("convert_length("), listed.stderr
    called = protomcp("call", *plugin, "convert_length", "value=1", "from_unit=km", "to_unit=m")
    assert called.returncode == 0 and "1000" in called.stdout, called.stderr
    printed = protomcp("install", "mcp-json", "--plugin", "unit-converter", python=str(plugin_venv))
    assert printed.returncode == 0, printed.stderr
    entry = orjson.loads(printed.stdout)["mcpServers"]["unit-converter"]
    assert entry["args"][-3:] == ["run", "--plugin", "unit-converter"]
