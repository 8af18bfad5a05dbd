"""Upstream MCP servers served through a protomcp host (`--upstream NAME=CMD|URL`): an official
SDK server over stdio, and a protomcp host over Streamable HTTP, each reached with the
official SDK client through the real host."""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.hosts import TOOLS, mcp_session
from tests.support.http import HttpHost, http_session
from tests.support.ports import free_port

pytest.importorskip("mcp")

SERVER = TOOLS / "upstream_server.py"
POLICY = TOOLS / "upstream_policy.py"
REMOTE = TOOLS / "upstream_tools.py"


def upstream_arg(name: str = "ex") -> str:
    return f"{name}={sys.executable} {SERVER}"


async def wait_for_file(path: Path, timeout: float = 20) -> None:
    """Wait (bounded) for a mark a tool process leaves."""
    with anyio.fail_after(timeout):
        while not path.exists():
            await anyio.sleep(0.02)


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content]


@pytest.fixture
def marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("UPSTREAM_MARKS", str(tmp_path))
    return tmp_path


async def test_stdio_upstream_list_call_progress_resources_prompts(marks: Path) -> None:
    async with mcp_session("run", str(POLICY), "--upstream", upstream_arg()) as session:
        names = [tool.name for tool in (await session.list_tools()).tools]
        assert "local_hello" in names
        assert {
            "ex_add",
            "ex_count",
            "ex_wait_forever",
            "ex_crash",
            "ex_ask_name",
            "ex_grow",
            "ex_ask_model",
        } <= set(names)
        result = await session.call_tool("ex_add", {"a": 1, "b": 2})
        assert result.structured_content == {"result": 3}
        assert texts(result) == ["3 [checked]"]  # the local middleware ran around the upstream tool

        seen: list[tuple[float, float | None, str | None]] = []

        async def progress(value: float, total: float | None, message: str | None) -> None:
            seen.append((value, total, message))

        result = await session.call_tool("ex_count", {"n": 3}, progress_callback=progress)
        assert texts(result) == ["counted to 3"]
        assert seen[-1] == (3.0, 3.0, "step 3")

        resources = (await session.list_resources()).resources
        assert [str(r.uri) for r in resources] == ["memo://upstream/readme"]
        read = await session.read_resource("memo://upstream/readme")
        assert read.contents[0].text == "read me from upstream"
        prompt = await session.get_prompt("ex_greet", {"who": "Ada"})
        assert prompt.messages[0].content.text == "Say hello to Ada."


async def test_stdio_upstream_list_change_is_forwarded(marks: Path) -> None:
    changed = anyio.Event()

    async def message(notification: Any) -> None:
        from mcp import types

        if isinstance(getattr(notification, "root", notification), types.ToolListChangedNotification):
            changed.set()

    async with mcp_session(
        "run", str(POLICY), "--upstream", upstream_arg(), message_handler=message
    ) as session:
        assert "ex_extra" not in {tool.name for tool in (await session.list_tools()).tools}
        assert texts(await session.call_tool("ex_grow", {})) == ["grown"]
        with anyio.fail_after(20):
            await changed.wait()
        assert "ex_extra" in {tool.name for tool in (await session.list_tools()).tools}
        assert texts(await session.call_tool("ex_extra", {})) == ["extra"]


async def test_stdio_upstream_middleware_rejects_and_bad_arguments(marks: Path) -> None:
    async with mcp_session("run", str(POLICY), "--upstream", upstream_arg()) as session:
        refused = await session.call_tool("ex_add", {"a": 13, "b": 1})
        assert refused.is_error and "13 is not allowed here" in texts(refused)[0]
        bad = await session.call_tool("ex_add", {"a": "x", "b": 1})
        assert bad.is_error  # the host validates against the upstream's inputSchema


async def test_stdio_upstream_cancel_reaches_the_upstream(marks: Path) -> None:
    async with mcp_session("run", str(POLICY), "--upstream", upstream_arg()) as session:
        with anyio.move_on_after(30) as scope:
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    await session.call_tool("ex_wait_forever", {})

                tg.start_soon(call)
                await wait_for_file(marks / "waiting")
                tg.cancel_scope.cancel()  # the SDK client sends notifications/cancelled
        assert not scope.cancelled_caught
        await wait_for_file(marks / "cancelled")
        assert texts(await session.call_tool("ex_add", {"a": 2, "b": 2})) == ["4 [checked]"]


async def test_stdio_upstream_crash_fails_the_call_and_restarts(marks: Path) -> None:
    async with mcp_session("run", str(POLICY), "--upstream", upstream_arg()) as session:
        crashed = await session.call_tool("ex_crash", {})
        assert crashed.is_error and "upstream ex went away" in texts(crashed)[0]
        again = await session.call_tool("ex_add", {"a": 20, "b": 22})  # waits for the restart
        assert again.structured_content == {"result": 42}
        assert len((marks / "started").read_text().split()) == 2
        assert texts(await session.call_tool("local_hello", {})) == ["hello"]


async def test_stdio_upstream_elicitation_reaches_the_client(marks: Path) -> None:
    from mcp import types

    async def elicit(context: Any, params: Any) -> Any:
        assert params.message == "What is your name?"
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async with mcp_session(
        "run", str(POLICY), "--upstream", upstream_arg(), elicitation_callback=elicit
    ) as session:
        result = await session.call_tool("ex_ask_name", {})
        assert texts(result) == ["hello Ada"]


async def test_stdio_upstream_sampling_reaches_the_client(marks: Path) -> None:
    from mcp import types

    async def sample(context: Any, params: Any) -> Any:
        assert params.messages[0].content.text == "Say hi"
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="hi there"), model="test-model"
        )

    async with mcp_session(
        "run", str(POLICY), "--upstream", upstream_arg(), sampling_callback=sample
    ) as session:
        assert texts(await session.call_tool("ex_ask_model", {})) == ["model said: hi there"]


async def test_an_upstream_request_for_the_client_is_refused_when_calls_overlap(marks: Path) -> None:
    """With two calls in flight the upstream's elicitation cannot be told apart: refused, never
    sent to a client that may not be the caller's."""
    from mcp import types

    asked: list[Any] = []

    async def elicit(context: Any, params: Any) -> Any:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async with mcp_session(
        "run", str(POLICY), "--upstream", upstream_arg(), elicitation_callback=elicit
    ) as session:
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.call_tool, "ex_wait_forever", {})
            await wait_for_file(marks / "waiting")
            refused = await session.call_tool("ex_ask_name", {})
            tg.cancel_scope.cancel()
        assert refused.is_error and "2 requests are running" in texts(refused)[0]
        assert asked == []


async def test_an_upstream_request_is_refused_when_requests_of_other_kinds_overlap(marks: Path) -> None:
    """User B's resources/read asks for a PIN while user A's tool call is the only call in
    flight: over stdio nothing says which request it belongs to, so it is refused; A is never
    asked and A's answer never becomes B's result."""
    from mcp import types
    from mcp.shared.exceptions import MCPError

    asked_a: list[Any] = []

    async def elicit_a(context: Any, params: Any) -> Any:
        asked_a.append(params)
        return types.ElicitResult(action="accept", content={"pin": "A's secret"})

    async def elicit_b(context: Any, params: Any) -> Any:
        return types.ElicitResult(action="accept", content={"pin": "B's own"})

    host = HttpHost("run", str(POLICY), "--upstream", upstream_arg())
    try:
        async with (
            http_session(host.url, elicitation_callback=elicit_a) as a,
            http_session(host.url, elicitation_callback=elicit_b) as b,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(a.call_tool, "ex_wait_forever", {})
            await wait_for_file(marks / "waiting")
            with pytest.raises(MCPError) as refused:
                await b.read_resource("memo://upstream/vault/main")
            tg.cancel_scope.cancel()
        assert "2 requests are running" in str(refused.value)
        assert asked_a == []
    finally:
        host.terminate()


async def test_prefix_and_tag_filter(marks: Path) -> None:
    async with mcp_session(
        "run",
        str(POLICY),
        "--upstream",
        upstream_arg(),
        "--upstream-prefix",
        "ex=up.",
        "--exclude-tag",
        "upstream",
    ) as session:
        names = [tool.name for tool in (await session.list_tools()).tools]
        assert names == ["local_hello"]
    async with mcp_session(
        "run", str(POLICY), "--upstream", upstream_arg(), "--upstream-prefix", "ex=up."
    ) as session:
        names = [tool.name for tool in (await session.list_tools()).tools]
        assert "up.add" in names
        assert (await session.call_tool("up.add", {"a": 1, "b": 1})).structured_content == {"result": 2}


def test_bad_upstream_options_are_usage_errors() -> None:
    from click.testing import CliRunner

    from protomcp_host.cli.main import main

    runner = CliRunner()
    for args, message in (
        (["--upstream", "noequals"], "expected NAME=..."),
        (["--upstream", "a=x", "--upstream", "a=y"], "given twice"),
        (["--upstream", "a=cmd", "--upstream-token-env", "a=TOKEN"], "not an http(s) upstream"),
        (["--upstream", "a=http://h/mcp", "--upstream-token-env", "a=PROTOMCP_UNSET_VAR"], "is not set"),
        (["--upstream-prefix", "b=x", "--upstream", "a=cmd"], "no --upstream named b"),
    ):
        result = runner.invoke(main, ["run", *args])
        assert result.exit_code == 2, result.output
        assert message in result.output


async def test_an_upstream_that_cannot_start_stops_the_host() -> None:
    from tests.support.hosts import RawHost

    host = RawHost("run", str(POLICY), "--upstream", f"bad={sys.executable} -c 'raise SystemExit(3)'")
    try:
        assert host.proc.wait(30) == 1
        assert "upstream bad: cannot connect" in host.stderr_text()
    finally:
        host.close()


async def test_an_upstream_whose_tool_names_clash_says_it_connected(tmp_path: Path, marks: Path) -> None:
    """A name clash once read "cannot connect" though the upstream had answered."""
    from tests.support.hosts import RawHost

    local = tmp_path / "local.py"
    local.write_text("from protomcp_sdk import tool\n\n@tool\ndef ex_add(a: int) -> int:\n    return a\n")
    host = RawHost("run", str(local), "--upstream", upstream_arg())
    try:
        assert host.proc.wait(30) == 1
        stderr = host.stderr_text()
        assert "upstream ex: connected to" in stderr and "clash: 'ex_add'" in stderr, stderr
        assert "cannot connect" not in stderr
    finally:
        host.close()


# -- a protomcp host over Streamable HTTP as the upstream ----------------------------------------


def start_remote(port: int, token: str) -> HttpHost:
    import subprocess
    import threading

    from tests.support.hosts import HOST

    host = HttpHost.__new__(HttpHost)
    host.proc = subprocess.Popen(
        [
            *HOST,
            "run",
            str(REMOTE),
            "--transport",
            "http",
            "--port",
            str(port),
            "--auth-token-env",
            "REMOTE_TOKEN",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "REMOTE_TOKEN": token},
        start_new_session=True,
    )
    host.stderr = []
    host._lines = threading.Condition()
    threading.Thread(target=host._read_stderr, daemon=True).start()
    host.wait_stderr(lambda line: "http://" in line)
    host.url = f"http://127.0.0.1:{port}/mcp"
    return host


async def test_http_upstream_with_bearer_list_call_progress_cancel_reconnect(tmp_path: Path) -> None:
    port = free_port()
    remote = start_remote(port, "s3cret")
    os.environ["UPSTREAM_TOKEN"] = "s3cret"
    try:
        async with mcp_session(
            "run",
            str(POLICY),
            "--upstream",
            f"remote={remote.url}",
            "--upstream-token-env",
            "remote=UPSTREAM_TOKEN",
        ) as session:
            names = [tool.name for tool in (await session.list_tools()).tools]
            assert {"remote_multiply", "remote_steps", "remote_hold", "local_hello"} <= set(names)
            result = await session.call_tool("remote_multiply", {"a": 6, "b": 7})
            assert texts(result) == ["42 [checked]"]
            seen: list[float] = []

            async def progress(value: float, total: float | None, message: str | None) -> None:
                seen.append(value)

            assert texts(await session.call_tool("remote_steps", {"n": 2}, progress_callback=progress)) == [
                "2 steps"
            ]
            assert seen[-1] == 2.0

            mark = str(tmp_path / "hold")
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    await session.call_tool("remote_hold", {"path": mark})

                tg.start_soon(call)
                await wait_for_file(Path(mark + ".started"))
                tg.cancel_scope.cancel()
            await wait_for_file(Path(mark + ".cancelled"))

            remote.terminate()  # the upstream goes away ...
            down = await session.call_tool("remote_multiply", {"a": 1, "b": 1})
            assert down.is_error
            assert "upstream remote" in texts(down)[0]
            remote = start_remote(port, "s3cret")  # ... and comes back: the host reconnects
            with anyio.fail_after(30):
                while True:
                    result = await session.call_tool("remote_multiply", {"a": 2, "b": 3})
                    if not result.is_error:
                        break
                    await anyio.sleep(0.1)
            assert texts(result) == ["6 [checked]"]
    finally:
        os.environ.pop("UPSTREAM_TOKEN", None)
        remote.terminate()


async def test_http_upstream_request_goes_to_the_request_whose_stream_it_came_on(tmp_path: Path) -> None:
    """Over Streamable HTTP an upstream's elicitation comes on the stream of the request it
    belongs to: with another call in flight it still reaches that call's client, and only it."""
    from mcp import types

    port = free_port()
    remote = start_remote(port, "s3cret")
    asked: dict[str, list[Any]] = {"a": [], "b": []}

    def answering(who: str) -> Any:
        async def elicit(context: Any, params: Any) -> Any:
            asked[who].append(params.message)
            return types.ElicitResult(action="accept", content={"pin": who})

        return elicit

    host = HttpHost(
        "run",
        str(POLICY),
        "--upstream",
        f"remote={remote.url}",
        "--upstream-token-env",
        "remote=UPSTREAM_TOKEN",
        env={"UPSTREAM_TOKEN": "s3cret"},
    )
    try:
        async with (
            http_session(host.url, elicitation_callback=answering("a")) as a,
            http_session(host.url, elicitation_callback=answering("b")) as b,
            anyio.create_task_group() as tg,
        ):
            mark = str(tmp_path / "hold")
            tg.start_soon(a.call_tool, "remote_hold", {"path": mark})
            await wait_for_file(Path(mark + ".started"))
            result = await b.call_tool("remote_ask_pin", {})
            tg.cancel_scope.cancel()
        assert texts(result) == ["pin b"]
        assert asked == {"a": [], "b": ["Your PIN?"]}
    finally:
        host.terminate()
        remote.terminate()


async def test_http_upstream_with_a_wrong_token_does_not_start(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.hosts import RawHost

    port = free_port()
    remote = start_remote(port, "right")
    monkeypatch.setenv("WRONG_TOKEN", "wrong")
    host = RawHost(
        "run",
        str(POLICY),
        "--upstream",
        f"remote=http://127.0.0.1:{port}/mcp",
        "--upstream-token-env",
        "remote=WRONG_TOKEN",
    )
    try:
        assert host.proc.wait(30) == 1
        assert "upstream remote: cannot connect" in host.stderr_text()
    finally:
        host.close()
        remote.terminate()


# -- specs, install, doctor ----------------------------------------------------------------------


def test_specs_parse_and_round_trip_as_options() -> None:
    from protomcp_host.upstream.spec import parse_specs

    specs = parse_specs(
        ["files=npx -y server-files '/my dir'", "remote=https://example.com/mcp"],
        ["remote=REMOTE_TOKEN"],
        ["files="],
    )
    files, remote = specs
    assert files.command == ("npx", "-y", "server-files", "/my dir") and files.namespace == ""
    assert remote.is_http and remote.token_env == "REMOTE_TOKEN" and remote.namespace == "remote_"
    argv = files.argv() + remote.argv()
    flags = {flag: [v for f, v in itertools.pairwise(argv) if f == flag] for flag in set(argv[::2])}
    assert (
        parse_specs(flags["--upstream"], flags["--upstream-token-env"], flags["--upstream-prefix"]) == specs
    )


def test_install_writes_upstreams_and_doctor_reads_them_back(tmp_path: Path) -> None:
    from protomcp_host.cli.doctor import _entry_files, entry_upstreams
    from protomcp_host.cli.install import server_entry
    from protomcp_host.upstream.spec import parse_specs

    specs = [spec.absolute() for spec in parse_specs([upstream_arg(), "r=http://127.0.0.1:1/mcp"])]
    entry = server_entry([POLICY], upstreams=specs)
    assert _entry_files(entry) == [str(POLICY.resolve())]  # upstream commands are not files
    assert entry_upstreams(entry) == specs


def test_doctor_connects_to_upstreams(marks: Path) -> None:
    import subprocess

    from tests.support.hosts import HOST

    good = subprocess.run(
        [*HOST, "doctor", "--upstream", upstream_arg()],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(marks)},
    )
    assert (
        "upstream ex 'upstream-example'" in good.stdout and "9 tools, 1 resources, 1 prompts" in good.stdout
    )
    bad = subprocess.run(
        [*HOST, "doctor", "--upstream", "gone=http://127.0.0.1:1/mcp"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(marks)},
    )
    assert bad.returncode == 1
    assert "upstream gone (http://127.0.0.1:1/mcp) cannot be served" in bad.stdout


def _two_hosts_of_one_upstream(http_host: Any, redis_url: str) -> tuple[Any, list[Any]]:
    """An HTTP upstream (with a token) behind two hosts that share a store."""
    remote = start_remote(free_port(), "s3cret")
    upstream = ("--upstream", f"remote={remote.url}", "--upstream-token-env", "remote=UPSTREAM_TOKEN")
    token = {"UPSTREAM_TOKEN": "s3cret"}
    return remote, [
        http_host("run", str(POLICY), "--store", redis_url, *upstream, env=token) for _ in range(2)
    ]


async def test_an_upstream_question_answered_on_another_host_is_not_asked_again(
    http_host: Any, redis_url: str
) -> None:
    """Two hosts sharing a store, each serving the same HTTP upstream: the retry of a call
    whose upstream elicited reaches the other host, which runs the call again; the upstream's
    question there is answered from the requestState, not asked in a new round."""
    import httpx2

    from tests.support.scale import modern_rpc

    remote, hosts = _two_hosts_of_one_upstream(http_host, redis_url)
    call = {"name": "remote_ask_pin", "arguments": {}}
    try:
        with anyio.fail_after(60):
            async with httpx2.AsyncClient(timeout=30) as http:
                first = (await modern_rpc(http, hosts[0].url, "tools/call", call))["result"]
                assert first["resultType"] == "input_required", first
                [(key, question)] = first["inputRequests"].items()
                assert question["params"]["message"] == "Your PIN?"
                retry = {
                    **call,
                    "requestState": first["requestState"],
                    "inputResponses": {key: {"action": "accept", "content": {"pin": "7"}}},
                }
                done = (await modern_rpc(http, hosts[1].url, "tools/call", retry))["result"]
                assert done.get("resultType") != "input_required", done
                assert done["content"][0]["text"] == "pin 7", done
    finally:
        remote.terminate()


async def test_an_upstream_asking_twice_on_other_hosts_uses_each_answer_once(
    http_host: Any, redis_url: str
) -> None:
    """The same question asked twice by an upstream: a run on the other host answers the first
    from the carried answer and asks the second in a new round; a third run, back on the first
    host, answers both from what the retry carries."""
    import httpx2

    from tests.support.scale import modern_rpc

    remote, hosts = _two_hosts_of_one_upstream(http_host, redis_url)
    call = {"name": "remote_ask_pin_twice", "arguments": {}}
    try:
        with anyio.fail_after(60):
            async with httpx2.AsyncClient(timeout=30) as http:
                answers: dict[str, Any] = {}
                result = (await modern_rpc(http, hosts[0].url, "tools/call", call))["result"]
                for pin, host in (("1", hosts[1]), ("2", hosts[0])):
                    assert result["resultType"] == "input_required", result
                    [key] = result["inputRequests"]
                    assert key not in answers  # the answered question is not asked again
                    answers[key] = {"action": "accept", "content": {"pin": pin}}
                    retry = {
                        **call,
                        "requestState": result["requestState"],
                        "inputResponses": {key: answers[key]},
                    }
                    result = (await modern_rpc(http, host.url, "tools/call", retry))["result"]
                assert result["content"][0]["text"] == "pins 1 2", result
    finally:
        remote.terminate()


class _Events:
    """ProcessEvents that keep nothing (an Upstream driven without a host)."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args: None


class _Leg:
    """A Leg that keeps its one answer (or failure)."""

    live = True

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.answer: Any = None
        self.failure = ""

    def sent(self, channel: Any, request_id: str) -> None:
        pass

    def answered(self, envelope: Any, raw: Any, trusted: bool) -> None:
        self.answer = envelope
        self.done.set()

    def failed(self, reason: str) -> None:
        self.failure = reason
        self.done.set()


async def test_an_idle_http_upstream_restarted_gets_a_new_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """The upstream restarts while the link is idle (no ping notices in between): the next
    call gets a 404 for the old session, which opens a new one and sends the call again."""
    import signal

    from protomcp_host.upstream.settings import UpstreamSettings
    from protomcp_host.upstream.source import Upstream
    from protomcp_host.upstream.spec import UpstreamSpec
    from protomcp_sdk.wire import envelope_pb2 as pb

    monkeypatch.setenv("UPSTREAM_TOKEN", "s3cret")
    port = free_port()
    remote = start_remote(port, "s3cret")
    spec = UpstreamSpec(name="remote", url=remote.url, token_env="UPSTREAM_TOKEN")
    upstream = Upstream(spec, _Events(), UpstreamSettings(startup_timeout=30.0, ping_interval=3600))  # type: ignore[arg-type]

    async def call(a: int, b: int) -> _Leg:
        leg = _Leg()
        arguments = f'{{"a": {a}, "b": {b}}}'
        upstream.start(
            pb.Envelope(call_tool=pb.CallToolRequest(name="remote_multiply", arguments_json=arguments)), leg
        )  # type: ignore[arg-type]
        with anyio.fail_after(30):
            await leg.done.wait()
        return leg

    try:
        async with anyio.create_task_group() as tg:
            await tg.start(upstream.run)
            first = await call(6, 7)
            assert first.answer is not None and "42" in first.answer.call_result.result_json, first.failure
            os.killpg(remote.proc.pid, signal.SIGKILL)
            remote.proc.wait()
            remote = start_remote(port, "s3cret")
            again = await call(2, 3)
            assert again.failure == ""
            assert '"6"' in again.answer.call_result.result_json
            assert upstream.connects == 2
            await upstream.stop(1)
            tg.cancel_scope.cancel()
    finally:
        remote.terminate()
