"""`protomcp install` / `uninstall`: every client, every platform layout, in a temporary home."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from protomcp_host.cli import install as installer
from protomcp_host.cli.install import CONFIG_FILES, InstallError, Place
from tests.support.hosts import EXAMPLES, HOST

HELLO = EXAMPLES / "hello.py"

# Where each client's config lives, relative to the temporary home (APPDATA is home/AppData/Roaming).
EXPECTED = {
    ("claude-desktop", "linux"): ".config/Claude/claude_desktop_config.json",
    ("claude-desktop", "darwin"): "Library/Application Support/Claude/claude_desktop_config.json",
    ("claude-desktop", "win32"): "AppData/Roaming/Claude/claude_desktop_config.json",
    ("cursor", "linux"): ".cursor/mcp.json",
    ("cursor", "darwin"): ".cursor/mcp.json",
    ("cursor", "win32"): ".cursor/mcp.json",
    ("vscode", "linux"): ".config/Code/User/mcp.json",
    ("vscode", "darwin"): "Library/Application Support/Code/User/mcp.json",
    ("vscode", "win32"): "AppData/Roaming/Code/User/mcp.json",
    ("gemini-cli", "linux"): ".gemini/settings.json",
    ("gemini-cli", "darwin"): ".gemini/settings.json",
    ("gemini-cli", "win32"): ".gemini/settings.json",
}


def place_for(platform: str, home: Path) -> Place:
    env = {"APPDATA": str(home / "AppData" / "Roaming")} if platform == "win32" else {}
    return Place(platform, home, env)


@pytest.mark.parametrize(("client", "platform"), sorted(EXPECTED))
def test_install_merges_backs_up_and_uninstalls(tmp_path: Path, client: str, platform: str) -> None:
    home = tmp_path / "home"
    place = place_for(platform, home)
    path = home / EXPECTED[client, platform]
    assert CONFIG_FILES[client].path(place) == path
    key = CONFIG_FILES[client].key
    other = {"command": "/usr/bin/other-server", "args": ["--flag"]}
    original = {"theme": "dark", key: {"other": other}}
    path.parent.mkdir(parents=True)
    path.write_bytes(orjson.dumps(original))

    message = installer.install(client, [HELLO], env={"TOKEN": "x"}, place=place)
    assert str(path) in message
    config = orjson.loads(path.read_bytes())
    assert config["theme"] == "dark" and config[key]["other"] == other
    entry = config[key]["hello"]
    assert Path(entry["command"]).is_absolute() and Path(entry["command"]).exists()
    assert entry["args"][-2:] == ["run", str(HELLO.resolve())]
    assert entry["env"] == {"TOKEN": "x"}
    assert ("type" in entry) == (client == "vscode")
    assert orjson.loads(path.with_name(path.name + ".bak").read_bytes()) == original

    # The same entry again is a no-op; a different one needs --force.
    assert "already installed" in installer.install(client, [HELLO], env={"TOKEN": "x"}, place=place)
    with pytest.raises(InstallError, match="--force"):
        installer.install(client, [HELLO], dev=True, place=place)
    assert orjson.loads(path.read_bytes())[key]["hello"] == entry
    installer.install(client, [HELLO], dev=True, force=True, place=place)
    assert orjson.loads(path.read_bytes())[key]["hello"]["args"][-2] == "dev"

    # uninstall removes ours only, and refuses someone else's entry without --force.
    with pytest.raises(InstallError, match="not installed by protomcp"):
        installer.uninstall(client, "other", place=place)
    installer.uninstall(client, "hello", place=place)
    assert orjson.loads(path.read_bytes()) == original


def test_install_creates_a_missing_config_and_refuses_broken_json(tmp_path: Path) -> None:
    place = place_for("linux", tmp_path)
    installer.install("cursor", [HELLO], name="greeter", place=place)
    path = tmp_path / ".cursor" / "mcp.json"
    assert list(orjson.loads(path.read_bytes())["mcpServers"]) == ["greeter"]
    assert not path.with_name("mcp.json.bak").exists()  # nothing to back up
    path.write_text("{not json")
    with pytest.raises(InstallError, match="not valid JSON"):
        installer.install("cursor", [HELLO], name="other", place=place)
    assert path.read_text() == "{not json"


def test_xdg_config_home_is_respected_on_linux(tmp_path: Path) -> None:
    place = Place("linux", tmp_path / "home", {"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert CONFIG_FILES["vscode"].path(place) == tmp_path / "xdg" / "Code" / "User" / "mcp.json"


def test_env_file_and_env_options(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("# comment\nexport A=1\nB = 'two words'\n\nC=\"3\"\n")
    assert installer.parse_env(["C=override", "D=x=y"], env_file) == {
        "A": "1",
        "B": "two words",
        "C": "override",
        "D": "x=y",
    }
    with pytest.raises(InstallError, match="KEY=VALUE"):
        installer.parse_env(["novalue"])


def test_claude_code_prints_the_command_without_the_cli(tmp_path: Path) -> None:
    message = installer.install("claude-code", [HELLO], env={"K": "secret"}, which=lambda name: None)
    command = message.splitlines()[1]
    assert command.strip() == "claude mcp add-json --scope user hello - <<'EOF'" and "secret" not in command
    assert '"env":{"K":"secret"}' in message and f'"run","{HELLO.resolve()}"' in message
    removal = installer.uninstall("claude-code", "hello", which=lambda name: None)
    assert "claude mcp remove hello --scope user" in removal


def test_claude_code_runs_its_cli_when_present_with_the_secrets_off_its_command_line(
    tmp_path: Path,
) -> None:
    """The entry, env secrets included, reaches `claude mcp add-json NAME -` on standard input."""
    record = tmp_path / "argv.json"
    fake = tmp_path / "claude"
    fake.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(record)!r}, 'w').write(json.dumps([sys.argv[1:], sys.stdin.read()]))\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    message = installer.install("claude-code", [HELLO], env={"TOKEN": "s3cret"}, which=lambda name: str(fake))
    assert "added 'hello'" in message
    argv, stdin = orjson.loads(record.read_bytes())
    assert argv == ["mcp", "add-json", "--scope", "user", "hello", "-"]
    server = orjson.loads(stdin)
    assert server["type"] == "stdio" and server["env"] == {"TOKEN": "s3cret"}
    assert server["args"][-2:] == ["run", str(HELLO.resolve())]


def test_mcp_json_prints_a_portable_entry() -> None:
    printed = orjson.loads(installer.install("mcp-json", [HELLO], dev=True))
    entry = printed["mcpServers"]["hello"]
    assert entry["args"][-2:] == ["dev", str(HELLO.resolve())]


def test_missing_tool_file_is_refused_and_folders_are_fine(tmp_path: Path) -> None:
    with pytest.raises(InstallError, match="no such tool file"):
        installer.install("cursor", [tmp_path / "nope.py"], place=place_for("linux", tmp_path))
    installer.install("cursor", [EXAMPLES], name="examples", place=place_for("linux", tmp_path))  # a folder
    entry = orjson.loads((tmp_path / ".cursor" / "mcp.json").read_bytes())["mcpServers"]["examples"]
    assert entry["args"][-1] == str(EXAMPLES.resolve())


async def test_installed_claude_desktop_entry_answers_tools_list(tmp_path: Path) -> None:
    """The CLI writes the entry; started exactly as Claude Desktop would, it serves the tools."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {k: v for k, v in os.environ.items() if k != "XDG_CONFIG_HOME"} | {"HOME": str(tmp_path)}
    done = subprocess.run(
        [*HOST, "install", "claude-desktop", str(HELLO), "--env", "GREETING=hi"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    relative = EXPECTED["claude-desktop", "darwin" if sys.platform == "darwin" else "linux"]
    entry = orjson.loads((tmp_path / relative).read_bytes())["mcpServers"]["hello"]
    # The client starts the command in its own folder, with the entry's env over its own.
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env={**os.environ, **entry["env"]}, cwd="/"
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
    assert [t.name for t in tools.tools] == ["hello"]


def test_banner_prints_the_entry_install_writes(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from protomcp_host.cli.banner import stdio_banner as banner

    catalog = type("Catalog", (), {"__len__": lambda self: 1, "names": lambda self: ["hello"]})()
    host = SimpleNamespace(files=[HELLO.resolve()], catalog=catalog, features=SimpleNamespace(skills=None))
    for dev in (False, True):
        printed = banner(host, dev)  # type: ignore[arg-type]
        line = next(line for line in printed.splitlines() if '"mcpServers"' in line)
        written = orjson.loads(installer.install("mcp-json", [HELLO], dev=dev))
        assert orjson.loads(line) == written


@pytest.fixture
def claude_on_path(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose PATH has a `claude` that parses arguments as Claude Code's does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    fake = Path(__file__).resolve().parent / "fake_claude.py"
    claude.write_text(f'#!/bin/sh\nexec {sys.executable} {fake} "$@"\n')
    claude.chmod(0o755)
    store = tmp_path / "claude.json"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "FAKE_CLAUDE_CONFIG": str(store),
    }
    return env, store


def protomcp(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HOST, *args], capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL
    )


def test_install_claude_code_with_env_and_force_through_its_cli(
    claude_on_path: tuple[dict[str, str], Path],
) -> None:
    env, store = claude_on_path
    first = protomcp(env, "install", "claude-code", str(HELLO), "--env", "GREETING=hi")
    assert first.returncode == 0, first.stderr
    server = orjson.loads(store.read_bytes())["user"]["hello"]
    assert server["env"] == {"GREETING": "hi"} and server["args"][-1] == str(HELLO.resolve())
    again = protomcp(env, "install", "claude-code", str(HELLO), "--env", "GREETING=hey")
    assert again.returncode != 0 and "already exists" in again.stderr and "--force" in again.stderr
    forced = protomcp(env, "install", "claude-code", str(HELLO), "--env", "GREETING=hey", "--force")
    assert forced.returncode == 0, forced.stderr
    assert orjson.loads(store.read_bytes())["user"]["hello"]["env"] == {"GREETING": "hey"}
    removed = protomcp(env, "uninstall", "claude-code", "hello")
    assert removed.returncode == 0, removed.stderr
    assert orjson.loads(store.read_bytes())["user"] == {}


def test_printed_claude_code_commands_work_when_pasted(claude_on_path: tuple[dict[str, str], Path]) -> None:

    env, store = claude_on_path
    for force in (False, True):
        message = installer.install(
            "claude-code", [HELLO], env={"K": "v", "L": "w x"}, force=force, which=lambda name: None
        )
        pasted = "\n".join(line.strip() for line in message.splitlines()[1:]) + "\n"
        done = subprocess.run(  # as the user would paste them into a shell
            ["sh", "-e"], input=pasted, capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert orjson.loads(store.read_bytes())["user"]["hello"]["env"] == {"K": "v", "L": "w x"}


VSCODE_JSONC = """{
  // my servers; VS Code accepts comments and trailing commas here
  "servers": {
    /* a server someone else added */
    "other": {"type": "stdio", "command": "/usr/bin/other", "args": ["a // b", "c,"],},
  },
}
"""


def test_vscode_config_with_comments_and_trailing_commas(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "XDG_CONFIG_HOME"} | {"HOME": str(tmp_path)}
    relative = EXPECTED["vscode", "darwin" if sys.platform == "darwin" else "linux"]
    config = tmp_path / relative
    config.parent.mkdir(parents=True)
    config.write_text(VSCODE_JSONC)
    doctor = subprocess.run(
        [*HOST, "doctor"], capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL
    )
    assert doctor.returncode == 0 and "No problems found." in doctor.stdout, doctor.stdout
    done = subprocess.run(
        [*HOST, "install", "vscode", str(HELLO)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert "comments and trailing commas are not kept" in done.stdout
    servers = orjson.loads(config.read_bytes())["servers"]
    assert servers["other"]["args"] == ["a // b", "c,"] and "hello" in servers
    assert config.with_name("mcp.json.bak").read_text() == VSCODE_JSONC
    doctor = subprocess.run(
        [*HOST, "doctor"], capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL
    )
    assert doctor.returncode == 0 and "No problems found." in doctor.stdout, doctor.stdout


def test_strip_jsonc_keeps_strings_and_rejects_what_is_not_json() -> None:
    text = '{"a": "x // y /* z */", "b": [1, 2, /* c */ ], // d\n "e": "\\",",}'
    assert orjson.loads(installer.strip_jsonc(text)) == {"a": "x // y /* z */", "b": [1, 2], "e": '",'}
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(installer.strip_jsonc('{"a": 1 "b": 2}'))


def test_a_file_that_does_not_load_is_not_installed_and_doctor_says_so(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "XDG_CONFIG_HOME"} | {"HOME": str(tmp_path)}
    broken = tmp_path / "broken.py"
    broken.write_text("from protomcp_sdk import tool\nimport no_such_module_here\n")
    needs_key = tmp_path / "needs_key.py"
    needs_key.write_text(
        "import os\nfrom protomcp_sdk import tool\nKEY = os.environ['API_KEY']\n\n"
        "@tool\ndef key() -> str:\n    return KEY\n"
    )
    config = tmp_path / ".cursor" / "mcp.json"

    def protomcp(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*HOST, *args], capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL
        )

    refused = protomcp("install", "cursor", str(broken))
    assert refused.returncode == 1 and not config.exists()
    assert "does not load" in refused.stderr and "No module named 'no_such_module_here'" in refused.stderr
    assert protomcp("install", "cursor", str(needs_key)).returncode == 1  # KeyError without the key
    with_key = protomcp("install", "cursor", str(needs_key), "--env", "API_KEY=k")  # loads with it
    assert with_key.returncode == 0, with_key.stderr
    forced = protomcp("install", "cursor", str(broken), "--no-check")
    assert forced.returncode == 0, forced.stderr
    doctor = protomcp("doctor")  # no FILES: it loads what the clients would start
    assert doctor.returncode == 1, doctor.stdout
    assert f"Cursor 'broken' ({config}): {broken} does not load" in doctor.stdout
    assert "No module named 'no_such_module_here'" in doctor.stdout
    assert "1 problem found." in doctor.stdout  # needs_key loads with its entry's env


def test_install_passes_run_options_on_to_the_entry(tmp_path: Path) -> None:
    """Issue 30: `install` could not say `--discovery search`, `--call-timeout`, tags..."""
    from click.testing import CliRunner

    from protomcp_host.cli.doctor import _entry_files
    from protomcp_host.cli.main import main

    options = [
        "--discovery",
        "search",
        "--call-timeout",
        "60",
        "--startup-timeout",
        "90",
        "--processes",
        "2",
        "--rate-limit",
        "*=30/minute",
        "--rate-limit",
        "search=5/second",
        "--include-tag",
        "a",
        "--include-tag",
        "b",
        "--exclude-tag",
        "admin",
        "--instructions",
        "Be brief.",
    ]
    done = CliRunner().invoke(main, ["install", "mcp-json", str(HELLO), "--no-check", *options])
    assert done.exit_code == 0, done.output
    entry = orjson.loads(done.output)["mcpServers"]["hello"]
    assert entry["args"][-len(options) - 2 :] == ["run", str(HELLO.resolve()), *options]
    assert _entry_files(entry) == [str(HELLO.resolve())]  # doctor does not take "search" for a file
    served = subprocess.run(  # the entry starts as the client would start it
        [entry["command"], *entry["args"]],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert served.returncode == 0, served.stderr


def test_install_refuses_a_malformed_rate_limit() -> None:
    """A --rate-limit the entry's host would refuse at every client start is refused here."""
    from click.testing import CliRunner

    from protomcp_host.cli.main import main

    done = CliRunner().invoke(
        main, ["install", "mcp-json", str(HELLO), "--no-check", "--rate-limit", "*=lots"]
    )
    assert done.exit_code == 2, done.output
    assert "--rate-limit '*=lots'" in done.output


GOOSE_CONFIG = """# my goose settings
GOOSE_MODE: smart_approve
extensions:
  developer:
    bundled: true
    enabled: true
    name: developer
    timeout: 300
    type: builtin
"""


@pytest.mark.parametrize(
    ("platform", "relative"),
    [
        ("linux", ".config/goose/config.yaml"),
        ("darwin", ".config/goose/config.yaml"),
        ("win32", "AppData/Roaming/Block/goose/config/config.yaml"),
    ],
)
def test_install_goose_writes_an_extension_and_keeps_the_rest(
    tmp_path: Path, platform: str, relative: str
) -> None:
    yaml = pytest.importorskip("yaml")
    place = place_for(platform, tmp_path)
    config = tmp_path / relative
    config.parent.mkdir(parents=True)
    config.write_text(GOOSE_CONFIG)
    message = installer.install("goose", [HELLO], name="Hello.Tools", env={"K": "v"}, place=place)
    assert "Goose: added" in message and "comments are not kept" in message and "restart Goose" in message
    written = yaml.safe_load(config.read_text())
    assert (
        written["GOOSE_MODE"] == "smart_approve" and written["extensions"]["developer"]["type"] == "builtin"
    )
    extension = written["extensions"]["hello_tools"]  # goose's own key for the name
    command = installer.protomcp_command()
    assert extension == {
        "enabled": True,
        "type": "stdio",
        "name": "Hello.Tools",
        "description": "",
        "cmd": command[0],
        "args": [*command[1:], "run", str(HELLO.resolve())],
        "envs": {"K": "v"},
        "env_keys": [],
        "timeout": 300,
    }
    assert (config.parent / "config.yaml.bak").read_text() == GOOSE_CONFIG
    from protomcp_host.cli.doctor import _entry_files

    assert _entry_files(CONFIG_FILES["goose"].entry(extension)) == [str(HELLO.resolve())]
    removed = installer.uninstall("goose", "Hello.Tools", place=place)
    assert "removed" in removed
    assert set(yaml.safe_load(config.read_text())["extensions"]) == {"developer"}


def test_doctor_checks_goose_extensions(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    from tests.cli.test_doctor import installed_findings

    broken = tmp_path / "broken.py"
    broken.write_text("import not_a_module_anywhere\n")
    installer.install("goose", [HELLO], place=Place("linux", tmp_path, {}))
    installer.install("goose", [broken], place=Place("linux", tmp_path, {}))
    findings = installed_findings(Place("linux", tmp_path, {}))
    assert any(f.ok and "Goose 'hello'" in f.text for f in findings)
    assert any(not f.ok and "Goose 'broken'" in f.text and "does not load" in f.text for f in findings)


@pytest.mark.parametrize("name", ["a;rm -rf ~", "x$(id)", "two words", "-flag", "a|b", "tick`s"])
def test_server_names_with_shell_metacharacters_are_refused(tmp_path: Path, name: str) -> None:
    for client in ("claude-code", "cursor", "goose"):
        with pytest.raises(InstallError, match="use 1-64 letters, digits"):
            installer.install(
                client, [HELLO], name=name, which=lambda _: None, place=place_for("linux", tmp_path)
            )
    with pytest.raises(InstallError, match="use 1-64 letters, digits"):
        installer.uninstall("claude-code", name, which=lambda _: None)


def test_a_file_name_with_odd_characters_gives_a_safe_default_name(tmp_path: Path) -> None:
    odd = tmp_path / "my tools;v2.py"
    odd.write_text(HELLO.read_text())
    printed = orjson.loads(installer.install("mcp-json", [odd]))
    assert list(printed["mcpServers"]) == ["my-tools-v2"]


SKILLS = EXAMPLES.parent / "skills"


async def test_install_skills_puts_the_folder_on_the_entrys_command_line(tmp_path: Path) -> None:
    """`install --skills DIR`: the folder (absolute) is served by the entry, beside the tools;
    the client sees the skills' files as resources (what Claude Code reads of them)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from protomcp_host.cli.doctor import _entry_files

    relative = os.path.relpath(SKILLS, tmp_path)
    done = subprocess.run(
        [*HOST, "install", "mcp-json", str(HELLO), "--skills", relative],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    entry = orjson.loads(done.stdout)["mcpServers"]["hello"]
    assert entry["args"][-4:] == ["run", str(HELLO.resolve()), "--skills", str(SKILLS.resolve())]
    assert _entry_files(entry) == [str(HELLO.resolve())]  # doctor takes the folder for no tool file
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env=dict(os.environ), cwd="/"
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        assert [t.name for t in (await session.list_tools()).tools] == ["hello"]
        uris = {str(r.uri) for r in (await session.list_resources()).resources}
    assert {"skill://adding-a-tool/SKILL.md", "skill://release-notes/SKILL.md"} <= uris


def test_install_skills_alone_and_a_bad_folder(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from protomcp_host.cli.main import main

    done = CliRunner().invoke(main, ["install", "mcp-json", "--skills", str(SKILLS)])
    assert done.exit_code == 0, done.output
    entry = orjson.loads(done.output)["mcpServers"]["skills"]  # named for what it serves
    assert entry["args"][-3:] == ["run", "--skills", str(SKILLS.resolve())]
    (tmp_path / "empty").mkdir()
    refused = CliRunner().invoke(
        main, ["install", "mcp-json", str(HELLO), "--skills", str(tmp_path / "empty")]
    )
    assert refused.exit_code != 0 and "no skills in it" in refused.output  # run would refuse it
    with pytest.raises(InstallError, match="--skills: no such folder"):
        installer.install("mcp-json", [HELLO], skills=[tmp_path / "nope"])


def test_doctor_takes_no_option_value_for_a_tool_file() -> None:
    """`doctor` read `http` in `run --transport http FILE` as a tool file (its list of valued
    options was a second copy of run's, and it had drifted); every valued option of `run` and
    `dev` is now read from the commands themselves."""
    from protomcp_host.cli.doctor import _entry_files

    args = ["run", "--transport", "http", "--port", "8000", "--call-timeout", "60", str(HELLO)]
    assert _entry_files({"command": "protomcp", "args": args}) == [str(HELLO)]
    dev_args = ["dev", "--transport", "http", "--host", "0.0.0.0", str(HELLO), "--store", "memory://"]
    assert _entry_files({"command": "protomcp", "args": dev_args}) == [str(HELLO)]
