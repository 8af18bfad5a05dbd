"""`protomcp inspect` (issue 21, item 12): everything tool files serve, readable or as JSON."""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson

from tests.support.hosts import HOST

FULL = '''"""Notes for the team."""
from protomcp_sdk import Context, completion, lifespan, middleware, prompt, resource, tool

print("imported")  # must not spoil the JSON on stdout


@lifespan
async def pool():
    raise AssertionError("inspect never starts a lifespan")
    yield


@tool(task="optional", tags={"math"}, timeout=3)
def add(a: int, b: int = 2) -> int:
    """Add two numbers."""
    return a + b


@tool(hidden=True)
def odd(ctx) -> str:
    return ""


@resource("notes://index")
def index() -> str:
    """All notes."""
    return ""


@resource("notes://{id}")
def note(id: str) -> str:
    return id


@prompt
def review(path: str, style: str = "short") -> str:
    """Review a file."""
    return path


@completion(prompt="review", argument="path")
def paths(value: str) -> list[str]:
    return []


@middleware(priority=3)
async def audit(call, call_next):
    return await call_next(call)
'''


def inspect(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HOST, "inspect", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def test_json_report_of_everything_a_file_serves(tmp_path: Path) -> None:
    file = tmp_path / "full.py"
    file.write_text(FULL)
    done = inspect(str(file), "--json")
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    assert report["version"] == 1 and report["ok"] and report["problems"] == []
    (entry,) = report["files"]
    assert entry["label"] == "full.py" and entry["file"] == str(file) and entry["error"] is None
    add, odd = entry["tools"]
    assert add["name"] == "add" and add["description"] == "Add two numbers."
    assert add["inputSchema"]["properties"]["b"]["default"] == 2 and add["inputSchema"]["required"] == ["a"]
    assert add["outputSchema"]["properties"]["result"]["type"] == "integer"
    assert (add["task"], add["tags"], add["timeout"], add["hidden"]) == ("optional", ["math"], 3, False)
    assert odd["hidden"] is True
    assert [r["uri"] for r in entry["resources"]] == ["notes://index"]
    assert [r["uriTemplate"] for r in entry["resourceTemplates"]] == ["notes://{id}"]
    assert entry["prompts"][0]["arguments"] == [
        {"name": "path", "description": "", "required": True},
        {"name": "style", "description": "", "required": False},
    ]
    assert entry["completions"] == [{"ref": {"type": "ref/prompt", "name": "review"}, "argument": "path"}]
    assert entry["middleware"] == [{"name": "audit", "priority": 3}]
    assert entry["lifespan"] == "pool"
    odd_mistake, undescribed = entry["warnings"]
    assert odd_mistake.startswith("tool 'odd': ")  # the SDK's, then the host's: the model reads descriptions
    assert undescribed.startswith("tool 'odd' has no description") and "docstring" in undescribed


def test_readable_report(tmp_path: Path) -> None:
    file = tmp_path / "full.py"
    file.write_text(FULL)
    done = inspect(str(file))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"full.py  ({file})"
    for expected in (
        "    add(a: int, b: int = 2)  [task=optional timeout=3s tags=math]  - Add two numbers.",
        "    notes://{id}  note",
        "    review(path, style?)  - Review a file.",
        "    prompt review, argument path",
        "    audit  (priority 3)",
        "    pool",
    ):
        assert expected in lines, done.stdout
    assert lines[-1] == "1 file"


def test_a_file_that_fails_to_load_and_a_name_clash_fail_the_check(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import not_a_module_anywhere\n")
    one, two = tmp_path / "one.py", tmp_path / "two.py"
    for file in (one, two):
        file.write_text("from protomcp_sdk import tool\n\n@tool\ndef add(a: int) -> int:\n    return a\n")
    done = inspect(str(broken), str(one), str(two), "--json")
    assert done.returncode == 1
    report = orjson.loads(done.stdout)
    assert not report["ok"]
    assert [f["ok"] for f in report["files"]] == [False, True, True]
    assert "ModuleNotFoundError: No module named 'not_a_module_anywhere'" in report["files"][0]["error"]
    assert report["problems"] == ["tool 'add' is defined in both one.py and two.py"]
    readable = inspect(str(broken))
    assert readable.returncode == 1 and "  failed to load:" in readable.stdout
    assert readable.stdout.rstrip().endswith("1 file, 1 failed to load")


def test_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    done = inspect(str(tmp_path / "nope.py"))
    assert done.returncode == 1 and "no such file or folder" in done.stderr


APPS = '''
from protomcp_sdk import UI, resource, tool


@resource("ui://charts/bar", ui=UI(prefers_border=True))
def bar() -> str:
    """The chart."""
    return "<html></html>"


@tool(ui="ui://charts/bar")
def sales(quarter: str) -> dict:
    """Sales of a quarter."""
    return {}


@tool(ui="ui://charts/bar", visibility=["app"])
def refresh() -> str:
    """Refresh the chart."""
    return ""
'''


def test_inspect_and_list_show_a_tools_app(tmp_path: Path) -> None:
    file = tmp_path / "charts.py"
    file.write_text(APPS)
    done = inspect(str(file), "--json")
    assert done.returncode == 0, done.stderr
    (entry,) = orjson.loads(done.stdout)["files"]
    sales, refresh = entry["tools"]
    assert sales["ui"] == {"resourceUri": "ui://charts/bar"}
    assert refresh["ui"] == {"resourceUri": "ui://charts/bar", "visibility": ["app"]}
    [chart] = entry["resources"]
    assert chart["mimeType"] == "text/html;profile=mcp-app" and chart["ui"] == {"prefersBorder": True}
    readable = inspect(str(file)).stdout.splitlines()
    assert "    sales(quarter: str)  [app=ui://charts/bar]  - Sales of a quarter." in readable
    assert "    refresh()  [app=ui://charts/bar visibility=app]  - Refresh the chart." in readable
    assert "    ui://charts/bar  bar  [app]  - The chart." in readable
    listed = subprocess.run(
        [*HOST, "list", str(file)], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert "sales(quarter: str)  [app=ui://charts/bar]" in lines
    assert "refresh()  [app=ui://charts/bar visibility=app]" in lines
    assert "ui://charts/bar  bar  [app]" in lines
