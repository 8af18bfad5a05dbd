"""Putting a tool file into an AI client's configuration: where each client keeps its MCP
servers (per platform), the entry protomcp writes, and a merge that keeps everything else.

Locations, from the clients' documentation:
- Claude Desktop: `claude_desktop_config.json`, key "mcpServers", in ~/Library/Application
  Support/Claude (macOS), %APPDATA%\\Claude (Windows), ~/.config/Claude (Linux builds).
- Cursor: ~/.cursor/mcp.json (global), key "mcpServers".
- VS Code: the user profile's mcp.json (~/Library/Application Support/Code/User, %APPDATA%\\Code\\User,
  ~/.config/Code/User), key "servers", entries with "type": "stdio".
- Gemini CLI: ~/.gemini/settings.json, key "mcpServers".
- Goose: ~/.config/goose/config.yaml (YAML), key "extensions" (see goose.py).
- Claude Code: configured through its own CLI (`claude mcp add-json --scope user NAME -`, the
  entry on standard input).

The platform, home folder and environment are parameters (`Place`), so tests lay out a
temporary home for each platform.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from protomcp_host.cli import goose

CLIENT_NAMES = ("claude-desktop", "claude-code", "cursor", "vscode", "gemini-cli", "goose", "mcp-json")


class InstallError(Exception):
    """The config cannot be changed as asked; the message says why and what to do."""


@dataclass(frozen=True)
class Place:
    """Where we are: the platform ("linux", "darwin", "win32"), the home folder, the environment."""

    platform: str
    home: Path
    env: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def current(cls) -> Place:
        return cls(sys.platform, Path.home(), dict(os.environ))

    @property
    def kind(self) -> str:
        if self.platform.startswith("win"):
            return "windows"
        return "macos" if self.platform == "darwin" else "linux"

    def appdata(self) -> Path:
        return Path(self.env.get("APPDATA") or self.home / "AppData" / "Roaming")

    def xdg_config(self) -> Path:
        value = self.env.get("XDG_CONFIG_HOME", "")
        return Path(value) if value and Path(value).is_absolute() else self.home / ".config"


@dataclass(frozen=True)
class ConfigFile:
    """A client that keeps its MCP servers in a JSON file (or YAML: Goose)."""

    name: str
    title: str
    key: str  # the object that maps server names to entries
    locate: Callable[[Place], Path]
    stdio_type: bool = False  # VS Code wants "type": "stdio" in each entry
    yaml: bool = False  # Goose: the file is YAML, its entries are goose extensions

    def path(self, place: Place) -> Path:
        return self.locate(place)

    def shape(self, name: str, entry: dict[str, Any]) -> dict[str, Any]:
        if self.yaml:
            return goose.extension(name, entry)
        return {"type": "stdio", **entry} if self.stdio_type else dict(entry)

    def server_key(self, name: str) -> str:
        return goose.key_of(name) if self.yaml else name

    def entry(self, stored: Any) -> Any:
        """A stored server as an `mcpServers` entry (command, args, env)."""
        return goose.as_entry(stored) if self.yaml else stored


def _claude_desktop(place: Place) -> Path:
    folder = {
        "macos": place.home / "Library" / "Application Support" / "Claude",
        "windows": place.appdata() / "Claude",
        "linux": place.xdg_config() / "Claude",
    }[place.kind]
    return folder / "claude_desktop_config.json"


def _vscode(place: Place) -> Path:
    folder = {
        "macos": place.home / "Library" / "Application Support" / "Code" / "User",
        "windows": place.appdata() / "Code" / "User",
        "linux": place.xdg_config() / "Code" / "User",
    }[place.kind]
    return folder / "mcp.json"


CONFIG_FILES: dict[str, ConfigFile] = {
    "claude-desktop": ConfigFile("claude-desktop", "Claude Desktop", "mcpServers", _claude_desktop),
    "cursor": ConfigFile("cursor", "Cursor", "mcpServers", lambda p: p.home / ".cursor" / "mcp.json"),
    "vscode": ConfigFile("vscode", "VS Code", "servers", _vscode, stdio_type=True),
    "gemini-cli": ConfigFile(
        "gemini-cli", "Gemini CLI", "mcpServers", lambda p: p.home / ".gemini" / "settings.json"
    ),
    "goose": ConfigFile("goose", "Goose", "extensions", goose.config_path, yaml=True),
}

_SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def check_server_name(name: str) -> str:
    """A server name reaches client CLIs and the commands printed to paste into a shell: only
    letters, digits, '_', '-' and '.'."""
    if not _SERVER_NAME.fullmatch(name):
        raise InstallError(
            f"server name {name!r}: use 1-64 letters, digits, '_', '-' or '.' (starting with a letter or "
            "digit); it is passed to the client's CLI and shown in commands to paste into a shell"
        )
    return name


# ---- the entry ---------------------------------------------------------------------


def protomcp_command(python: str = sys.executable) -> list[str]:
    """How a client starts this installation of protomcp: the `protomcp` script next to this
    interpreter (absolute, symlinks kept so a virtualenv stays a virtualenv), or
    `python -m protomcp_host` when there is no script (running from a checkout)."""
    interpreter = Path(python).absolute()
    names = ("protomcp.exe", "protomcp") if sys.platform.startswith("win") else ("protomcp",)
    folders = [interpreter.parent]
    if Path(python) == Path(sys.executable):
        folders.append(Path(sysconfig.get_path("scripts")))
    for folder in folders:
        for name in names:
            script = folder / name
            if script.is_file():
                return [str(script)]
    return [str(interpreter), "-m", "protomcp_host"]


def server_entry(
    files: list[Path],
    *,
    dev: bool = False,
    ui: bool = False,
    env: Mapping[str, str] | None = None,
    command: list[str] | None = None,
    modules: Sequence[str] = (),
    plugins: Sequence[str] = (),
    upstreams: Sequence[Any] = (),
    skills: Sequence[Path] = (),
    options: Sequence[str] = (),
) -> dict[str, Any]:
    """The portable `mcpServers` entry: absolute command and absolute tool files; modules and
    plugins by name (the client's protomcp finds them in its interpreter); upstreams
    (upstream.spec.UpstreamSpec) as their --upstream options; skills folders (absolute) as
    --skills; then `options` (cli/options.py's run_arguments: run options passed on)."""
    argv = command or protomcp_command()
    sources = [*(str(f.resolve()) for f in files)]
    sources += [word for module in modules for word in ("-m", module)]
    sources += [word for plugin in plugins for word in ("--plugin", plugin)]
    sources += [word for spec in upstreams for word in spec.argv()]
    sources += [word for folder in skills for word in ("--skills", str(folder.resolve()))]
    verb = "dev" if dev else "run"
    entry: dict[str, Any] = {"command": argv[0], "args": [*argv[1:], verb, *sources, *options]}
    if ui:  # dev's playground: any free port when 6280 is taken; `protomcp logs` prints its URL
        entry["args"].append("--ui")
    if env:
        entry["env"] = dict(env)
    return entry


def default_name(files: list[Path], modules: Sequence[str] = (), plugins: Sequence[str] = ()) -> str:
    """A file's stem, a module's top-level package, a plugin's name; "tools" for several.
    Characters a server name may not have (check_server_name) become '-'."""
    names = [f.stem for f in files] + [m.split(".")[0] for m in modules] + list(plugins)
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", names[0]).strip("-._")[:64] if len(names) == 1 else ""
    return name or "tools"


def parse_env(pairs: tuple[str, ...] | list[str], env_file: Path | None = None) -> dict[str, str]:
    """`--env K=V` options and an optional dotenv-style file (the options win)."""
    env: dict[str, str] = {}
    if env_file is not None:
        try:
            lines = env_file.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise InstallError(f"cannot read {env_file}: {exc.strerror}") from None
        for number, line in enumerate(lines, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, value = _pair(line.removeprefix("export "), f"{env_file}:{number}")
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            env[key] = value
    for pair in pairs:
        key, value = _pair(pair, "--env")
        env[key] = value
    return env


def _pair(text: str, where: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key or any(c.isspace() for c in key):
        raise InstallError(f"{where}: expected KEY=VALUE, got {text!r}")
    return key, value


# ---- merging into a config file ----------------------------------------------------


@dataclass
class Outcome:
    path: Path
    backup: Path | None
    message: str


def strip_jsonc(text: str) -> str:
    """JSON with comments (`//`, `/* */`) and trailing commas, as VS Code's settings files allow,
    turned into plain JSON. Strings are kept as they are; line numbers do not change."""
    out: list[str] = []
    i, n = 0, len(text)
    pending_comma = -1  # index in `out` of a comma that may turn out to be trailing
    while i < n:
        c = text[i]
        if c == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            pending_comma = -1
            i = end + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end == -1 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            comment = text[i : n if end == -1 else end + 2]
            out.append("\n" * comment.count("\n"))
            i += len(comment)
        elif c == ",":
            pending_comma = len(out)
            out.append(c)
            i += 1
        elif c in "}]" and pending_comma != -1:
            out[pending_comma] = ""
            pending_comma = -1
            out.append(c)
            i += 1
        else:
            if not c.isspace():
                pending_comma = -1
            out.append(c)
            i += 1
    return "".join(out)


def load_config(path: Path, yaml: bool = False) -> tuple[dict[str, Any], bool]:
    """The config as a dict ({} when the file does not exist) and whether it had comments or
    trailing commas (JSONC, which VS Code, Cursor and Gemini CLI accept; comments in YAML);
    InstallError if it is not JSON (YAML) even so."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}, False
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror}") from None
    if not data.strip():
        return {}, False
    if yaml:
        return _load_yaml(path, data)
    lenient = False
    try:
        config = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        try:
            config = orjson.loads(strip_jsonc(data.decode("utf-8", errors="replace")))
            lenient = True
        except orjson.JSONDecodeError:
            raise InstallError(
                f"{path} is not valid JSON ({exc}); fix it by hand (protomcp will not overwrite it)"
            ) from None
    if not isinstance(config, dict):
        raise InstallError(f"{path} does not hold a JSON object; fix it by hand")
    return config, lenient


def _load_yaml(path: Path, data: bytes) -> tuple[dict[str, Any], bool]:
    try:
        config = goose.load(data.decode("utf-8", errors="replace"))
    except ImportError as exc:
        raise InstallError(str(exc)) from None
    except Exception as exc:  # yaml.YAMLError (PyYAML is imported only here)
        raise InstallError(f"{path} is not valid YAML ({exc}); fix it by hand") from None
    if not isinstance(config, dict):
        raise InstallError(f"{path} does not hold a YAML mapping; fix it by hand")
    return config, b"#" in data


def read_config(path: Path, yaml: bool = False) -> dict[str, Any]:
    """The config as a dict (see load_config)."""
    return load_config(path, yaml)[0]


_DROPPED = " (its comments and trailing commas are not kept: the file is rewritten as plain JSON)"
_DROPPED_YAML = " (its comments are not kept: the file is rewritten)"


def _dropped(client: ConfigFile) -> str:
    return _DROPPED_YAML if client.yaml else _DROPPED


def add_server(client: ConfigFile, place: Place, name: str, entry: dict[str, Any], *, force: bool) -> Outcome:
    """Write `name` into the client's config, keeping every other setting and server."""
    path = client.path(place)
    config, lenient = load_config(path, client.yaml)
    servers = config.setdefault(client.key, {})
    if servers is None:  # YAML: `extensions:` with nothing under it
        servers = config[client.key] = {}
    if not isinstance(servers, dict):
        raise InstallError(f'{path}: "{client.key}" is not an object; fix it by hand')
    shaped = client.shape(name, entry)
    name = client.server_key(name)
    existing = servers.get(name)
    if existing == shaped:
        return Outcome(path, None, f"{client.title}: '{name}' is already installed in {path}")
    if existing is not None and not force:
        raise InstallError(
            f"{path} already has a server named '{name}'; pass --force to replace it, "
            "or --name to install under another name"
        )
    servers[name] = shaped
    backup = _write(path, config, client.yaml)
    verb = "replaced" if existing is not None else "added"
    return Outcome(
        path, backup, f"{client.title}: {verb} '{name}' in {path}" + (_dropped(client) if lenient else "")
    )


def remove_server(client: ConfigFile, place: Place, name: str, *, force: bool) -> Outcome:
    path = client.path(place)
    config, lenient = load_config(path, client.yaml)
    servers = config.get(client.key)
    name = client.server_key(name)
    if not isinstance(servers, dict) or name not in servers:
        raise InstallError(f"{path}: no server named '{name}'")
    if not force and not is_protomcp_entry(client.entry(servers[name])):
        raise InstallError(
            f"{path}: the server '{name}' was not installed by protomcp; pass --force to remove it anyway"
        )
    del servers[name]
    backup = _write(path, config, client.yaml)
    return Outcome(
        path, backup, f"{client.title}: removed '{name}' from {path}" + (_dropped(client) if lenient else "")
    )


def is_protomcp_entry(entry: Any) -> bool:
    """True for entries that start protomcp (the script, or `python -m protomcp_host`)."""
    if not isinstance(entry, dict):
        return False
    command = entry.get("command")
    args = entry.get("args") or []
    if not isinstance(command, str) or not isinstance(args, list):
        return False
    return Path(command).stem == "protomcp" or args[:2] == ["-m", "protomcp_host"]


def _write(path: Path, config: dict[str, Any], yaml: bool = False) -> Path | None:
    """Write atomically; keep the previous file as `<name>.bak`. Returns the backup path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if path.exists():
        backup = path.with_name(path.name + ".bak")
        shutil.copy2(path, backup)
    temporary = path.with_name(f".{path.name}.protomcp-tmp")
    text = goose.dump(config) if yaml else orjson.dumps(config, option=orjson.OPT_INDENT_2) + b"\n"
    temporary.write_bytes(text)
    os.replace(temporary, path)
    return backup


# ---- Claude Code: configured through its own CLI -----------------------------------


def claude_code_add(name: str) -> list[str]:
    """`claude mcp add-json NAME -`: the entry comes on standard input (claude_code_json), so the
    secrets in its env never appear on a command line (`ps`, shell history)."""
    return ["claude", "mcp", "add-json", "--scope", "user", name, "-"]


def claude_code_json(entry: dict[str, Any]) -> str:
    """The server as `claude mcp add-json` reads it."""
    server = {"type": "stdio", "command": entry["command"], "args": entry["args"]}
    if entry.get("env"):
        server["env"] = entry["env"]
    return orjson.dumps(server).decode()


def claude_code_remove(name: str) -> list[str]:
    return ["claude", "mcp", "remove", name, "--scope", "user"]


NOT_THERE = ("no mcp server named", "no mcp server found", "not found")  # (Claude Code's words)


def _claude_code_install(
    name: str, entry: dict[str, Any], *, force: bool, which: Callable[[str], str | None]
) -> str:
    """`claude mcp add-json`; with `force`, `claude mcp remove` first (Claude Code has no replace)."""
    add, remove, server = claude_code_add(name), claude_code_remove(name), claude_code_json(entry)
    if which(add[0]) is None:
        steps = [_printable(remove)] if force else []
        steps.append(f"{_printable(add)} <<'EOF'\n{server}\nEOF")  # (a heredoc: not in argv either)
        commands = "\n".join(f"  {step}" for step in "\n".join(steps).splitlines())
        return f"The claude command is not on PATH; run this to add '{name}' to Claude Code:\n{commands}"
    replaced = ""
    if force:
        try:
            run_client_cli(remove, which)
            replaced = " (replaced the previous entry)"
        except InstallError as exc:
            if not any(words in str(exc).lower() for words in NOT_THERE):
                raise
    try:
        _, output = run_client_cli(add, which, stdin=server)
    except InstallError as exc:
        if "already exists" in str(exc):
            raise InstallError(f"{exc}\npass --force to replace it") from None
        raise
    added = f"Claude Code: added '{name}' (claude mcp add-json --scope user){replaced}"
    return added + (f"\n{output}" if output else "")


def _printable(argv: list[str]) -> str:
    return subprocess.list2cmdline(argv) if sys.platform.startswith("win") else _shell(argv)


def run_client_cli(
    argv: list[str], which: Callable[[str], str | None] = shutil.which, stdin: str | None = None
) -> tuple[bool, str]:
    """Run the client's own CLI if it is installed, with `stdin` as its standard input (none by
    default). Returns (ran, output or the command to run)."""
    executable = which(argv[0])
    if executable is None:
        return False, _printable(argv)
    given: dict[str, Any] = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    try:
        done = subprocess.run([executable, *argv[1:]], capture_output=True, text=True, timeout=60, **given)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InstallError(f"`{_shell(argv)}` failed: {exc}") from None
    if done.returncode != 0:
        raise InstallError(f"`{_shell(argv)}` failed:\n{(done.stderr or done.stdout).strip()}")
    return True, (done.stdout or done.stderr).strip()


def _shell(argv: list[str]) -> str:
    import shlex

    return shlex.join(argv)


def portable_json(name: str, entry: dict[str, Any]) -> str:
    return orjson.dumps({"mcpServers": {name: entry}}, option=orjson.OPT_INDENT_2).decode()


# ---- the commands ------------------------------------------------------------------


def install(
    client: str,
    files: list[Path],
    *,
    name: str | None = None,
    env: Mapping[str, str] | None = None,
    dev: bool = False,
    ui: bool = False,
    force: bool = False,
    place: Place | None = None,
    which: Callable[[str], str | None] = shutil.which,
    modules: Sequence[str] = (),
    plugins: Sequence[str] = (),
    upstreams: Sequence[Any] = (),
    skills: Sequence[Path] = (),
    options: Sequence[str] = (),
) -> str:
    """Install `files` (and tool modules and plugins, by name, upstream MCP servers and folders
    of skills) into `client`, served with the run `options` (cli/options.py's run_arguments); returns what to
    tell the user. Raises InstallError."""
    missing = [str(f) for f in files if not f.exists()]  # files, or folders of tool files
    if missing:
        raise InstallError("no such tool file or folder: " + ", ".join(missing))
    not_folders = [str(folder) for folder in skills if not folder.is_dir()]
    if not_folders:
        raise InstallError("--skills: no such folder: " + ", ".join(not_folders))
    if not (files or modules or plugins or upstreams or skills):
        raise InstallError(
            "nothing to install: give tool FILES, -m MODULE, --plugin NAME, --upstream or --skills DIR"
        )
    name = name or default_name(files, modules, plugins) if (files or modules or plugins) else name
    alone = upstreams[0].name if len(upstreams) == 1 else "skills" if skills and not upstreams else "tools"
    name = check_server_name(name or alone)
    entry = server_entry(
        files,
        dev=dev,
        ui=ui,
        env=env,
        modules=modules,
        plugins=plugins,
        upstreams=upstreams,
        skills=skills,
        options=options,
    )
    if client == "mcp-json":
        return portable_json(name, entry)
    if client == "claude-code":
        return _claude_code_install(name, entry, force=force, which=which)
    outcome = add_server(CONFIG_FILES[client], place or Place.current(), name, entry, force=force)
    lines = [outcome.message]
    if outcome.backup is not None:
        lines.append(f"  previous config kept as {outcome.backup}")
    lines.append(f"  restart {CONFIG_FILES[client].title} to load it")
    return "\n".join(lines)


def uninstall(
    client: str,
    name: str,
    *,
    force: bool = False,
    place: Place | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> str:
    if client == "mcp-json":
        raise InstallError("mcp-json only prints an entry; there is nothing to uninstall")
    check_server_name(name)
    if client == "claude-code":
        ran, output = run_client_cli(claude_code_remove(name), which)
        if ran:
            return f"Claude Code: removed '{name}'" + (f"\n{output}" if output else "")
        return f"The claude command is not on PATH; run this to remove '{name}' from Claude Code:\n  {output}"
    outcome = remove_server(CONFIG_FILES[client], place or Place.current(), name, force=force)
    backup = f"\n  previous config kept as {outcome.backup}" if outcome.backup else ""
    return outcome.message + backup
