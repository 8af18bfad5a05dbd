"""The conformance set-up in tests/conformance/: how run.sh judges the scenarios the suite runs but
does not score (not_scored.py, on recorded output of @modelcontextprotocol/conformance
0.2.0-alpha.12), that the expected-failures files are well formed, and that everything.py serves
the fixtures the scenarios call by name (through the real host and the official client)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.hosts import EXAMPLES, mcp_session

CONFORMANCE = Path(__file__).resolve().parent
RECORDED = CONFORMANCE / "recorded"  # `conformance list --requirements R`; checks of a 2026 run


def _load_not_scored() -> ModuleType:
    spec = importlib.util.spec_from_file_location("not_scored", CONFORMANCE / "not_scored.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


ns = _load_not_scored()

# The not-scored server scenarios of 0.2.0-alpha.12 at 2026-07-28 (brief §12.3).
NOT_SCORED_2026 = {
    **{
        name: "extension"
        for name in (
            "tasks-lifecycle",
            "tasks-capability-negotiation",
            "tasks-wire-fields",
            "tasks-request-state-removal",
            "tasks-mrtr-input",
            "tasks-request-headers",
            "tasks-dispatch-and-envelope",
            "tasks-status-notifications",
            "tasks-required-task-error",
            "tasks-mrtr-composition",
        )
    },
    "json-schema-2020-12": "pending",
    "http-header-validation": "pending",
    "http-custom-header-server-validation": "pending",
}


def results_dir(tmp_path: Path) -> Path:
    """The recorded run's checks laid out as `conformance server -o DIR` writes them (a scenario
    that crashed has its folder but no checks.json)."""
    out = tmp_path / "results"
    for folder, checks in json.loads((RECORDED / "results-2026-07-28.json").read_text()).items():
        (out / folder).mkdir(parents=True)
        if checks is not None:
            (out / folder / "checks.json").write_text(json.dumps(checks))
    return out


def judge(tmp_path: Path, expected_yaml: str) -> int:
    """not_scored.py's exit status on the recorded 2026-07-28 run (its output goes to capsys)."""
    expected = tmp_path / "expected.yml"
    expected.write_text(expected_yaml)
    argv = ["--list", str(RECORDED / "list-2026-07-28.txt"), "--results", str(results_dir(tmp_path))]
    return ns.main([*argv, "--expected", str(expected), "--revision", "2026-07-28"])


def test_the_listing_gives_the_not_scored_server_scenarios_with_their_category() -> None:
    listing = (RECORDED / "list-2026-07-28.txt").read_text()
    assert ns.not_scored_server_scenarios(listing) == NOT_SCORED_2026  # no client scenario
    scored = ns.scored_server_scenarios(listing)
    assert len(scored) == 37 and {"server-stateless", "caching", "tools-list"} <= scored
    assert not scored & set(NOT_SCORED_2026)
    assert ns.not_scored_server_scenarios((RECORDED / "list-2025-11-25.txt").read_text()) == {
        "server-session-lifecycle": "added-after-release",
        "json-schema-2020-12": "pending",
        "server-sse-polling": "pending",
    }


def test_the_results_folder_is_read_per_scenario(tmp_path: Path) -> None:
    results = ns.read_results(results_dir(tmp_path))
    assert "tasks-capability-negotiation" not in results  # crashed: no checks.json
    assert [c["status"] for c in results["tasks-status-notifications"]] == ["SKIPPED"]
    assert {c["status"] for c in results["input-required-result-validate-input"]} == {"SUCCESS"}


def test_an_unlisted_failing_not_scored_scenario_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = "server: []\nnot_scored:\n" + "".join(
        f"  - {name}  # not yet\n"
        for name in NOT_SCORED_2026
        if name not in ("http-header-validation", "tasks-status-notifications")
    )
    status = judge(tmp_path, expected)
    out, err = capsys.readouterr()
    assert status == 1
    # Each failing check once, though the suite recorded one of them twice.
    assert (
        "http-header-validation (pending) fails unexpectedly: sep-2243-server-standard-setup, "
        "sep-2243-server-reject-invalid-headers, sep-2243-server-accepts-whitespace-header-value, "
        "wire-schema-valid"
    ) in err
    assert err.count("fails unexpectedly") == 1 and "warning" not in err
    assert "✓ tasks-status-notifications (extension): 0 passed, 0 failed" in out  # skipped only
    assert "✗ tasks-capability-negotiation (extension): no results; expected to fail: not yet" in out


def test_listed_failures_pass_and_a_listed_scenario_that_passes_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = "server: []\nnot_scored:\n" + "".join(f"  - {name}  # not yet\n" for name in NOT_SCORED_2026)
    status = judge(tmp_path, expected)
    out, err = capsys.readouterr()
    assert status == 0
    assert "tasks-status-notifications (extension) now passes: remove it from not_scored" in err
    assert "fails unexpectedly" not in err
    assert "✗ tasks-lifecycle (extension): 0 passed, 9 failed; expected to fail: not yet" in out


def test_per_check_entries_judge_single_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    others = [n for n in NOT_SCORED_2026 if n not in ("json-schema-2020-12", "tasks-status-notifications")]
    expected = (
        "server: []\nnot_scored:\n"
        + "".join(f"  - {name}  # not yet\n" for name in others)
        + "  - json-schema-2020-12:json-schema-2020-12-error  # modern tools/list refused\n"
        + "  - json-schema-2020-12:some-check-that-passes  # stale\n"
    )
    status = judge(tmp_path, expected)
    _, err = capsys.readouterr()
    assert status == 1  # wire-schema-valid fails too and is not listed
    assert "json-schema-2020-12 (pending) fails unexpectedly: wire-schema-valid" in err
    assert "json-schema-2020-12:some-check-that-passes (pending) now passes" in err


def test_an_unlisted_scenario_without_results_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = "not_scored:\n" + "".join(
        f"  - {name}  # not yet\n"
        for name in NOT_SCORED_2026
        if name not in ("tasks-capability-negotiation", "tasks-status-notifications")
    )
    status = judge(tmp_path, expected)
    assert status == 1
    assert "tasks-capability-negotiation (extension): no results" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("  - tasks-lifecycle\n", "'tasks-lifecycle' has no reason"),
        ("  - tasks-lifecycle  #\n", "'tasks-lifecycle' has no reason"),
        ("  tasks-lifecycle: why\n", "expected `  - scenario  # reason`"),
        ("  - caching  # misfiled\n", "caching: listed under not_scored but is scored for this revision"),
        ("  - no-such-scenario  # typo\n", "is not a not-scored server scenario of this revision"),
        ("  - tasks-lifecycle  # a\n  - tasks-lifecycle  # b\n", "'tasks-lifecycle' is listed twice"),
        (
            "  - tasks-lifecycle  # a\n  - tasks-lifecycle:wire-schema-valid  # b\n",
            "listed as a whole scenario and per check",
        ),
    ],
)
def test_a_malformed_expected_failures_file_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: str, message: str
) -> None:
    status = judge(tmp_path, "server: []\nnot_scored:\n" + entry)
    assert status == 1
    assert message in capsys.readouterr().err


def test_a_scored_entry_needs_a_reason_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = judge(tmp_path, "server:\n  - caching\nnot_scored: []\n")
    assert status == 1
    assert "'caching' has no reason" in capsys.readouterr().err


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_the_expected_failures_files_are_well_formed(revision: str) -> None:
    """Every entry has a reason and sits in the right list: `server:` holds scored scenarios
    (judged by the suite), `not_scored:` the others (judged by not_scored.py)."""
    listing = (RECORDED / f"list-{revision}.txt").read_text()
    text = (CONFORMANCE / f"expected-failures-{revision}.yml").read_text()
    scored = {entry.partition(":")[0] for entry in ns.read_expected(text, "server")}
    not_scored = {entry.partition(":")[0] for entry in ns.read_expected(text)}
    assert scored <= ns.scored_server_scenarios(listing)
    assert not_scored <= set(ns.not_scored_server_scenarios(listing))


def test_run_sh_parses_and_runs_every_revision_it_should() -> None:
    run_sh = CONFORMANCE / "run.sh"
    subprocess.run(["bash", "-n", str(run_sh)], check=True, timeout=30)
    text = run_sh.read_text()
    assert '--expected-failures "$here/expected-failures.yml"' in text  # 0.1.16, as before
    assert "run_requirements 2025-11-25\n" in text
    assert 'if [ "${PROTOMCP_CONFORMANCE_2026:-1}" = 1 ]; then\n  run_requirements 2026-07-28' in text
    package = json.loads((CONFORMANCE / "package.json").read_text())["devDependencies"]
    assert package["@modelcontextprotocol/conformance"] == "0.1.16"
    assert package["conformance-next"] == "npm:@modelcontextprotocol/conformance@0.2.0-alpha.12"


# -- the fixtures in everything.py, through the real host --------------------------------------

NEW_TOOLS = {
    "test_missing_capability",
    "test_streaming_elicitation",
    "test_logging_tool",
    "test_trigger_tool_change",
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
    "test_custom_header",
    "greet",
    "slow_compute",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "multi_input",
    "test_tool_with_task",
}


async def test_everything_serves_the_fixtures_the_scenarios_call() -> None:
    from mcp.types import CreateMessageResult, ElicitResult, ListRootsResult, Root, TextContent

    async def sampling(context: Any, params: Any) -> CreateMessageResult:
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="Hi"), model="test-model"
        )

    async def elicitation(context: Any, params: Any) -> ElicitResult:
        assert params.requested_schema["required"] == ["name"]
        return ElicitResult(action="accept", content={"name": "Alice"})

    async def roots(context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri="file:///test/root", name="Test Root")])

    callbacks = {
        "sampling_callback": sampling,
        "elicitation_callback": elicitation,
        "list_roots_callback": roots,
    }
    async with mcp_session("run", str(EXAMPLES / "everything.py"), **callbacks) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) >= NEW_TOOLS and "test_toggled_tool" not in tools  # hidden at first
        for tool in tools.values():  # the suite's tools-list checks
            assert tool.description and re.fullmatch(r"[A-Za-z0-9_./-]{1,64}", tool.name), tool.name
        support = {name: (t.execution.task_support if t.execution else None) for name, t in tools.items()}
        assert support["slow_compute"] == support["confirm_delete"] == support["multi_input"] == "optional"
        assert support["failing_job"] == support["test_tool_with_task"] == "required"
        assert support["greet"] in (None, "forbidden")
        region = tools["test_custom_header"].input_schema["properties"]["region"]
        assert region["type"] == "string" and region["x-mcp-header"] == "Region"

        resources = (await session.list_resources()).resources
        assert str(resources[0].uri) == "test://static-text"  # the caching scenario reads the first
        prompts = {prompt.name for prompt in (await session.list_prompts()).prompts}
        assert "test_input_required_result_prompt" in prompts

        async def text(name: str, arguments: dict[str, Any] | None = None) -> str:
            result = await session.call_tool(name, arguments or {})
            assert not result.is_error, result.content
            return result.content[0].text

        # The key= guard keeps the input-required fixtures working in the 2025-11-25 era.
        assert await text("test_input_required_result_elicitation") == "Hello, Alice!"
        assert (
            await text("test_input_required_result_multiple_inputs") == "Hi Alice! Roots: file:///test/root"
        )
        assert await text("greet", {"name": "World"}) == "Hello, World!"
        assert await text("test_custom_header", {"region": "eu-west"}) == "Region: eu-west"

        assert await text("test_trigger_tool_change") == "test_toggled_tool is now shown"
        assert "test_toggled_tool" in {tool.name for tool in (await session.list_tools()).tools}
        assert await text("test_trigger_tool_change") == "test_toggled_tool is now hidden"
        assert "test_toggled_tool" not in {tool.name for tool in (await session.list_tools()).tools}
