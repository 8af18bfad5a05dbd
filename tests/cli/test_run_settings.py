"""RunSettings: what the click commands make of their options, and the secret variables a
run keeps out of the processes it starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from protomcp_host.settings import DevSettings, RunSettings


def settings_of(args: list[str], monkeypatch: pytest.MonkeyPatch) -> RunSettings:
    """The RunSettings `protomcp ARGS...` would serve."""
    from click.testing import CliRunner

    from protomcp_host.cli import serving
    from protomcp_host.cli.main import main

    seen: list[RunSettings] = []
    monkeypatch.setattr(serving, "serve", seen.append)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return seen[0]


def test_the_secret_variables_are_kept_from_the_processes_a_run_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from protomcp_host.processes.launch import STATE_KEY_ENV, child_environment

    for name in ("CLIENT_TOKEN", "PEER_TOKEN", "BRIDGE_TOKEN", "UPSTREAM_TOKEN", STATE_KEY_ENV, "OTHER"):
        monkeypatch.setenv(name, name.lower())
    settings = settings_of(
        [
            *("run", "tools.py", "--transport", "http", "--auth-token-env", "CLIENT_TOKEN"),
            *("--agent-id", "a", "--peer-token-env", "PEER_TOKEN", "--bridge-token-env", "BRIDGE_TOKEN"),
            *("--upstream", "remote=http://127.0.0.1:1/mcp", "--upstream-token-env", "remote=UPSTREAM_TOKEN"),
        ],
        monkeypatch,
    )
    hidden = settings.hidden_env
    assert hidden == {"CLIENT_TOKEN", "PEER_TOKEN", "BRIDGE_TOKEN", "UPSTREAM_TOKEN"}
    environment = child_environment(hidden)
    assert environment["OTHER"] == "other"
    assert not (hidden | {STATE_KEY_ENV}) & environment.keys()  # the requestState key: always kept
    assert RunSettings().hidden_env == frozenset()  # a plain run reads no secret


def test_dev_options_make_dev_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_of(["dev", "tools.py", "--watch", "*.json", "--ui", "--ui-port", "0"], monkeypatch)
    assert settings.dev == DevSettings(reload=True, watch=("*.json",), ui=True, ui_port=0) and settings.reload
    settings = settings_of(["dev", "tools.py", "--no-reload"], monkeypatch)
    assert settings.dev == DevSettings(reload=False) and not settings.reload
    assert settings_of(["run", "tools.py"], monkeypatch).dev is None


def test_options_given_reach_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_of(
        [
            *("run", "a.py", "--call-timeout", "0", "--max-in-flight", "7", "--include-tag", "x"),
            *("--transport", "sse", "--port", "0", "--name", "box", "--discovery", "search"),
        ],
        monkeypatch,
    )
    assert settings.files == (Path("a.py"),) and settings.call_timeout == 0.0
    assert settings.max_in_flight == 7 and settings.include_tags == ("x",)
    assert settings.server_name == "box" and settings.discovery == "search"
    assert settings.http is not None and settings.http.transport == "sse" and settings.http.port == 0
    assert settings.http.host == "127.0.0.1" and settings.http.path == "/mcp"  # HttpSettings' defaults
