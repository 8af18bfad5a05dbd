"""`protomcp pack`: an MCP Bundle (.mcpb, manifest 0.4) of tool files, which Claude Desktop
installs by double-click, with a settings form for the variables the files declare (`env()`).

The bundle (a zip):
  manifest.json     server, tools[], prompts[], user_config (one setting per declared variable)
  pyproject.toml    depends on protomcp-tools, the files' own dependencies (PEP 723 `# /// script`
                    blocks) and the plugins' distributions; uv takes protomcp-tools from wheels/
  wheels/           --type uv: protomcp as it runs here, as a wheel (it is on no package index)
  server/main.py    the entry: `protomcp run` on the tool files beside it
  server/tools/     the tool files (a folder given whole, so its helper modules come along) and
                    the files their resources declare they serve from (an app's HTML)
  server/skills/    --skills: each folder of skills, whole (the manifest's args pass it as --skills)
  server/lib/       --type python only: protomcp and what a stdio host needs, installed for this
                    platform and this Python version (for clients that run no `uv`)
"""

from __future__ import annotations

import getpass
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from protomcp_host import __version__
from protomcp_host.processes.distribution import DIST_NAME

MANIFEST_VERSION = "0.4"
SKIP = {"__pycache__", ".venv", "venv", ".git", "node_modules", ".mypy_cache", ".pytest_cache"}
SCRIPT_BLOCK = re.compile(r"(?m)^# /// script\s*$\n((?:^#(?:| .*)$\n)+?)^# ///\s*$")
# What `protomcp run` over stdio imports, in the host and in its tool processes (see
# tests/cli/test_lean_start.py): a python bundle carries these of protomcp's dependencies, not
# those of HTTP, dev and the other commands (uvicorn, starlette, cryptography, rich, watchfiles...).
STDIO_NEEDS = frozenset({"protobuf", "anyio", "click", "jsonschema", "pydantic", "orjson"})
MAIN = '''"""Serves this bundle's tools: `protomcp run` on the tool files beside this file."""

import os
import sys
from pathlib import Path

TOOLS = {tools!r}
ARGS = {args!r}

if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    lib = here / "lib"
    if lib.is_dir():  # a python bundle: what it carries, for this process and its tool processes
        sys.path.insert(0, str(lib))
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(lib), os.environ.get("PYTHONPATH")]))
    from protomcp_host.cli.entry import main

    tools = [str(here / "tools" / name) for name in TOOLS]
    sys.argv = ["protomcp", "run", *tools, *ARGS, *sys.argv[1:]]  # (the manifest's: --skills)
    main()
'''


class PackError(Exception):
    """Why no bundle was made."""


@dataclass
class Bundle:
    """What goes into the bundle, gathered before anything is written."""

    name: str
    version: str
    description: str
    author: str
    kind: str  # "uv" or "python"
    sources: list[Path]  # the FILE arguments (files or folders)
    skills: list[Path] = field(default_factory=list)  # --skills folders
    plugins: list[Any] = field(default_factory=list)  # cli.plugins.Plugin
    report: dict[str, Any] = field(default_factory=dict)  # cli.inspection's
    prompt_texts: dict[str, str] = field(default_factory=dict)  # with ${arguments.NAME} placeholders

    # -- what the manifest says -------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        files = self.report["files"]
        every = [t for f in files for t in f["tools"]]
        tools = [
            {"name": t["name"], "description": first_line(t["description"])} for t in every if not t["hidden"]
        ]
        prompts = [
            {
                "name": p["name"],
                "description": first_line(p["description"]),
                "arguments": [a["name"] for a in p["arguments"]],
                "text": self.prompt_texts.get(p["name"]) or p["description"] or p["name"],
            }
            for f in files
            for p in f["prompts"]
        ]
        variables = self.variables()
        env = {
            variable["name"]: f"${{user_config.{setting_key(variable['name'])}}}" for variable in variables
        }
        skills = [
            word
            for folder in self.skills
            for word in ("--skills", f"${{__dirname}}/server/skills/{folder.name}")
        ]
        if self.kind == "python":  # (server/main.py puts server/lib on the path)
            config: dict[str, Any] = {"command": "python", "args": ["${__dirname}/server/main.py", *skills]}
        else:
            config = {
                "command": "uv",
                "args": ["run", "--project", "${__dirname}", "${__dirname}/server/main.py", *skills],
            }
        config["env"] = env
        manifest: dict[str, Any] = {
            "manifest_version": MANIFEST_VERSION,
            "name": self.name,
            "display_name": self.name,
            "version": self.version,
            "description": self.description,
            "author": {"name": self.author},
            "server": {"type": self.kind, "entry_point": "server/main.py", "mcp_config": config},
            "tools": tools,
            "prompts": prompts,
            "tools_generated": len(tools) < len(every),  # hidden tools a call may reveal
            "compatibility": {"runtimes": {"python": f">={python_floor()}"}},
        }
        if self.kind == "python":  # compiled dependencies: this platform and Python version only
            major, minor = sys.version_info[:2]
            manifest["compatibility"] = {
                "platforms": [sys.platform if sys.platform in ("darwin", "win32") else "linux"],
                "runtimes": {"python": f">={major}.{minor}.0 <{major}.{minor + 1}.0"},
            }
        if variables:
            manifest["user_config"] = {setting_key(v["name"]): setting(v) for v in variables}
        return manifest

    def variables(self) -> list[dict[str, Any]]:
        """The environment variables the files declare (env()), each once."""
        seen: dict[str, dict[str, Any]] = {}
        for entry in self.report["files"]:
            for variable in entry.get("env", []):
                seen.setdefault(variable["name"], variable)
        return list(seen.values())

    def dependencies(self) -> list[str]:
        """protomcp-tools (this version or later; a script block's own requirement of it is
        dropped), the files' script dependencies, the plugins' distributions."""
        found = [f"{DIST_NAME}>={__version__}"]
        ours = re.compile(rf"^\s*{DIST_NAME.replace('-', '[-_.]')}\b(?!-)", re.IGNORECASE)
        for source in self.sources:
            for file in [source] if source.is_file() else sorted(python_files(source)):
                found += [d for d in script_dependencies(file) if d not in found and not ours.match(d)]
        found += [f"{p.distribution}=={p.version}" for p in self.plugins if p.distribution]
        return found

    def pyproject(self, wheel: str | None = None) -> str:
        """The bundle's project; `wheel`: protomcp's, carried in the bundle, for uv to install."""
        dependencies = "".join(f"    {toml_string(d)},\n" for d in self.dependencies())
        text = (
            "[project]\n"
            f"name = {toml_string(self.name)}\n"
            f"version = {toml_string(self.version)}\n"
            f"description = {toml_string(self.description)}\n"
            f'requires-python = ">={python_floor()}"\n'
            f"dependencies = [\n{dependencies}]\n"
        )
        if wheel is not None:
            text += f"\n[tool.uv.sources]\n{DIST_NAME} = {{ path = {toml_string(wheel)} }}\n"
        return text

    def main_py(self) -> str:
        args = [arg for plugin in self.plugins for arg in ("--plugin", plugin.name)]
        return MAIN.format(tools=[source.name for source in self.sources], args=args)


def requirement_name(requirement: str) -> str:
    """The distribution a requirement names, normalized: "PyJWT[crypto]>=2.8" -> "pyjwt"."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return re.sub(r"[-_.]+", "-", match.group(1)).lower() if match else ""


def setting_key(variable: str) -> str:
    """The user_config key of a variable: WEATHER_API_KEY -> weather_api_key."""
    return re.sub(r"[^a-z0-9_]", "_", variable.lower())


def setting(variable: dict[str, Any]) -> dict[str, Any]:
    option: dict[str, Any] = {
        "type": "string",
        "title": variable["name"],
        "description": variable["description"] or f"The environment variable {variable['name']}",
        "required": variable["required"],
    }
    if variable["secret"]:
        option["sensitive"] = True
    if variable["default"] is not None:
        option["default"] = variable["default"]
    return option


def first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else ""


def python_floor() -> str:
    """The oldest Python protomcp runs on (its own requires-python)."""
    try:
        wanted = (importlib.metadata.metadata(DIST_NAME).get_all("Requires-Python") or [""])[0]
    except importlib.metadata.PackageNotFoundError:
        wanted = ""
    match = re.search(r">=\s*([\d.]+)", wanted)
    return match.group(1) if match else "3.11"


def toml_string(text: str) -> str:
    return orjson.dumps(text).decode()  # a JSON string is a TOML basic string


def python_files(folder: Path) -> list[Path]:
    return [
        path
        for path in folder.rglob("*.py")
        if not any(part in SKIP or part.startswith(".") for part in path.relative_to(folder).parts)
    ]


def script_dependencies(file: Path) -> list[str]:
    """The `dependencies` of a file's PEP 723 inline metadata block (`# /// script`)."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    match = SCRIPT_BLOCK.search(text)
    if match is None:
        return []
    body = "".join(
        line[2:] if line.startswith("# ") else line[1:] for line in match.group(1).splitlines(True)
    )
    try:
        return [str(d) for d in tomllib.loads(body).get("dependencies", [])]
    except tomllib.TOMLDecodeError as exc:
        raise PackError(f"{file}: its `# /// script` block is not valid TOML: {exc}") from None


# -- making it --------------------------------------------------------------------------------


def plan(
    sources: list[Path],
    plugin_names: list[str],
    kind: str,
    python: str = sys.executable,
    *,
    name: str | None = None,
    version: str = "0.1.0",
    author: str | None = None,
    description: str | None = None,
    skills: list[Path] | None = None,
    fallback_description: str | None = None,
) -> Bundle:
    """Check the sources and the skills folders, load every tool file (its tools, prompts and
    variables). The description: `description`, else the first tool file docstring's first line,
    else `fallback_description`, else one made of the name."""
    from protomcp_host.cli.inspection import inspect_files
    from protomcp_host.cli.install import default_name
    from protomcp_host.processes.launch import StartupError, module_docstring, tool_files

    sources = [source.resolve() for source in sources]
    names = [source.name for source in sources]
    if len(set(names)) != len(names):
        raise PackError("two FILES have the same name: " + ", ".join(sorted(names)))
    skills = [folder.resolve() for folder in skills or []]
    _check_skills(skills)
    try:
        files = tool_files(sources)
        plugins = _plugins(plugin_names, python)
    except StartupError as exc:
        raise PackError(str(exc)) from None
    loaded = [*files, *(p.file for p in plugins)]
    report = inspect_files(loaded, python)
    if not report["ok"]:
        failed = [f"{e['label']} failed to load:\n{e['error']}" for e in report["files"] if not e["ok"]]
        raise PackError("\n".join(failed + report["problems"]) + "\nnothing was packed")
    docs = [first_line(module_docstring(file)) for file in files]
    name = name or (default_name(sources, plugins=plugin_names) if sources or plugins else "skills")
    return Bundle(
        name=name,
        version=version,
        description=description or next((d for d in docs if d), fallback_description or f"MCP tools: {name}"),
        author=author or getpass.getuser(),
        kind=kind,
        sources=sources,
        skills=skills,
        plugins=plugins,
        report=report,
        prompt_texts=prompt_texts(loaded, python, report),
    )


def _check_skills(folders: list[Path]) -> None:
    """--skills: folders `run` would serve (so the bundle starts), of distinct names (each is
    server/skills/NAME in the bundle)."""
    if not folders:
        return
    names = [folder.name for folder in folders]
    if len(set(names)) != len(names):
        raise PackError("two --skills folders have the same name: " + ", ".join(sorted(names)))
    from protomcp_host.skillfolder import SkillError, load_skills

    try:
        load_skills(folders)
    except (SkillError, OSError) as exc:
        raise PackError(f"{exc}\nnothing was packed") from None


def prompt_texts(files: list[Path], python: str, report: dict[str, Any]) -> dict[str, str]:
    """Each prompt's text as the manifest wants it: the prompt got through the real host with
    `${arguments.NAME}` as each argument (a prompt that cannot render so keeps its description)."""
    prompts = [p for entry in report["files"] for p in entry["prompts"]]
    if not prompts:
        return {}
    import anyio

    from protomcp_host.app import Host
    from protomcp_host.settings import RunSettings
    from protomcp_host.transports.direct import RequestFailed, direct_client

    texts: dict[str, str] = {}

    async def render() -> None:
        host = Host(files, RunSettings(python=python, call_timeout=30.0), stderr=lambda _: None)
        async with direct_client(host) as request:
            for prompt in prompts:
                arguments = {a["name"]: f"${{arguments.{a['name']}}}" for a in prompt["arguments"]}
                try:
                    result = await request("prompts/get", {"name": prompt["name"], "arguments": arguments})
                except RequestFailed:
                    continue
                parts = [
                    str(message["content"].get("text"))
                    for message in result.get("messages") or []
                    if isinstance(message.get("content"), dict) and message["content"].get("type") == "text"
                ]
                if parts:
                    texts[prompt["name"]] = "\n\n".join(parts)

    from protomcp_host.processes.launch import StartupError

    try:
        anyio.run(render, backend="asyncio")
    except StartupError:
        return {}  # (loaded a moment ago: the descriptions stand in)
    return texts


def _plugins(names: list[str], python: str) -> list[Any]:
    if not names:
        return []
    from protomcp_host.cli.plugins import installed

    found = {plugin.name: plugin for plugin in installed(python)}
    missing = [name for name in names if name not in found or found[name].file is None]
    if missing:
        raise PackError(f"--plugin {', '.join(missing)}: not installed for {python} (see `protomcp plugins`)")
    return [found[name] for name in names]


def write(bundle: Bundle, out: Path, say: Any = None) -> Path:
    """Lay the bundle out in a temporary folder and zip it to `out`."""
    with tempfile.TemporaryDirectory(prefix="protomcp-pack-") as tmp:
        root = Path(tmp)
        tools = root / "server" / "tools"
        tools.mkdir(parents=True)
        for source in bundle.sources:
            if source.is_dir():
                for file in python_files(source):
                    target = tools / source.name / file.relative_to(source)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(file, target)
            else:
                shutil.copy2(source, tools / source.name)
        for file, place in declared_files(bundle):  # an app's HTML beside its tool file, say
            (tools / place).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, tools / place)
        for folder in bundle.skills:  # whole, as `run --skills` reads it (hidden files are not served)
            shutil.copytree(folder, root / "server" / "skills" / folder.name, ignore=_hidden)
        (root / "server" / "main.py").write_text(bundle.main_py(), encoding="utf-8")
        wheel = None
        if bundle.kind == "uv":
            from protomcp_host.cli.wheel import WheelError, build_wheel

            try:
                wheel = build_wheel(root / "wheels").relative_to(root).as_posix()
            except WheelError as exc:
                raise PackError(str(exc)) from None
        (root / "pyproject.toml").write_text(bundle.pyproject(wheel), encoding="utf-8")
        (root / "manifest.json").write_bytes(orjson.dumps(bundle.manifest(), option=orjson.OPT_INDENT_2))
        if bundle.kind == "python":
            if say is not None:
                say(
                    "installing protomcp and the dependencies into server/lib (this platform, this Python)..."
                )
            vendor(bundle, root / "server" / "lib")
        out.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(root.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    archive.write(path, path.relative_to(root).as_posix())
    return out


def declared_files(bundle: Bundle) -> list[tuple[Path, Path]]:
    """The files the tool files' resources declare they serve from (``@resource(files=...)``:
    beside the tool file or below it), each with its place under server/tools, where it keeps
    its place relative to the tool file. A plugin's come with its distribution."""
    placed: dict[Path, Path] = {}
    for entry in bundle.report["files"]:
        declared = [
            Path(name)
            for resource in (*entry["resources"], *entry["resourceTemplates"])
            for name in resource.get("files", [])
        ]
        base = _base_of(Path(entry["file"]), bundle.sources)
        if base is None:
            continue
        folder, under = base
        for file in declared:
            place = under / file.relative_to(folder)
            other = placed.setdefault(place, file)
            if other != file:
                raise PackError(f"{other} and {file} would both be server/tools/{place} in the bundle")
    return [(file, place) for place, file in placed.items()]


def _base_of(tool_file: Path, sources: list[Path]) -> tuple[Path, Path] | None:
    """The folder a tool file's neighbours are taken from, and where it is under server/tools."""
    for source in sources:
        if source.is_dir() and tool_file.is_relative_to(source):
            return source, Path(source.name)
        if source == tool_file:
            return source.parent, Path()
    return None


def _hidden(folder: str, names: list[str]) -> list[str]:
    return [name for name in names if name.startswith(".") or name == "__pycache__"]


def vendor(bundle: Bundle, lib: Path) -> None:
    """--type python: protomcp as it runs here (its packages copied: it need not be on an index)
    and, with pip, what its stdio host needs and the bundle's other dependencies, for this platform."""
    from protomcp_host.cli.wheel import PACKAGES, package_files

    for package in PACKAGES:  # (found, not imported: the host uses only the wire)
        for arcname, path in package_files(package):
            target = lib / arcname
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    try:
        own = importlib.metadata.requires(DIST_NAME) or []
    except importlib.metadata.PackageNotFoundError:
        raise PackError(f"--type python needs {DIST_NAME} installed (pip install -e .)") from None
    needs = STDIO_NEEDS | ({"pyyaml"} if bundle.skills else set())  # SKILL.md front matter is YAML
    wanted = [r for r in own if "extra ==" not in r and requirement_name(r) in needs]
    wanted += [d for d in bundle.dependencies() if not d.startswith(f"{DIST_NAME}>=")]
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-compile",  # the bundle leaves __pycache__ out: compiling would be wasted time
        "--disable-pip-version-check",
        "--no-warn-conflicts",
        "--target",
        str(lib),
        *wanted,
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=os.environ.copy()
    )
    if done.returncode != 0:
        raise PackError(f"pip could not install the dependencies into the bundle:\n{done.stderr.strip()}")
