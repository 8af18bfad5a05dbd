"""`protomcp inspect`: one report of everything tool files serve, for people and for CI.

Each file is imported by the interpreter that would run it (``python -m protomcp_sdk --inspect
FILE``, in parallel, nothing served and no lifespan started); this module gathers the per-file
reports, adds what only shows across files (name clashes, which `run` refuses), and prints it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from protomcp_host.calls.advice import no_description, undescribed
from protomcp_host.processes.launch import child_environment, label_of

REPORT_VERSION = 1
APP_MIME_TYPE = "text/html;profile=mcp-app"
TIMEOUT = 120.0  # seconds one file may take to import


def inspect_file(file: Path, python: str) -> dict[str, Any]:
    """The SDK's report of one file; a file that cannot be imported at all gets one too."""
    argv = [python, "-m", "protomcp_sdk", "--inspect", str(file)]
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            timeout=TIMEOUT,
            cwd=str(file.parent),
            env=child_environment(),
            stdin=subprocess.DEVNULL,
        )
        report = orjson.loads(done.stdout) if done.returncode == 0 else None
        problem = (
            ""
            if report
            else (done.stderr.decode(errors="replace").strip() or f"exit status {done.returncode}")
        )
    except subprocess.TimeoutExpired:
        report, problem = None, f"importing it took more than {TIMEOUT:g}s"
    except (OSError, orjson.JSONDecodeError) as exc:
        report, problem = None, str(exc)
    if report is None:
        report = {"file": str(file), "ok": False, "error": problem}
        for key in ("tools", "resources", "resourceTemplates", "prompts", "completions", "middleware"):
            report[key] = []
        report.update(lifespan=None, rootsHooks=[], warnings=[], env=[])
    return {"label": label_of(file), **report}


def inspect_files(files: list[Path], python: str) -> dict[str, Any]:
    """The whole report: one entry per file and the problems between them."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        reports = list(pool.map(lambda file: inspect_file(file, python), files))
    for report in reports:  # what `run` says on stderr when the file loads
        report["warnings"] += [no_description(name) for name in undescribed(report["tools"])]
    problems = clashes(reports, "tools", "name", "tool") + clashes(reports, "prompts", "name", "prompt")
    problems += clashes(reports, "resources", "uri", "resource")
    problems += clashes(reports, "resourceTemplates", "uriTemplate", "resource template")
    ok = all(report["ok"] for report in reports) and not problems
    return {"version": REPORT_VERSION, "ok": ok, "files": reports, "problems": problems}


def inspect_skills(report: dict[str, Any], folders: tuple[Path, ...]) -> None:
    """Add the skills of --skills folders to the report (`skills`: each skill's entry as
    skills/list gives it); a folder `run` would refuse is a problem."""
    from protomcp_host.skillfolder import SkillError, load_skills

    report["skills"] = []
    try:
        skills = load_skills(folders)
    except (SkillError, OSError) as exc:
        report["problems"].append(f"skills: {exc}")
        report["ok"] = False
        return
    report["skills"] = [skill.mcp for skill in skills.ordered()]
    for entry in report["files"]:
        for resource in entry["resources"]:
            if resource["uri"] in skills.listing:
                report["problems"].append(
                    f"resource '{resource['uri']}' is defined in both --skills and {entry['label']}"
                )
                report["ok"] = False


def clashes(reports: list[dict[str, Any]], key: str, field: str, what: str) -> list[str]:
    owners: dict[str, list[str]] = {}
    for report in reports:
        for entry in report[key]:
            owners.setdefault(entry[field], []).append(report["label"])
    return [
        f"{what} '{name}' is defined in both {' and '.join(labels)}"
        for name, labels in owners.items()
        if len(labels) > 1
    ]


def render(
    report: dict[str, Any], echo: Callable[[str], None], signature: Callable[[dict[str, Any]], str]
) -> None:
    """The readable form: per file, what it serves, one line each, then warnings and problems."""
    for entry in report["files"]:
        echo(f"{entry['label']}  ({entry['file']})")
        if not entry["ok"]:
            echo("  failed to load:")
            echo("\n".join("    " + line for line in (entry["error"] or "").rstrip().splitlines()))
        sections: list[tuple[str, list[str]]] = [
            ("Tools", [_tool_line(tool, signature) for tool in entry["tools"]]),
            (
                "Resources",
                [f"{r['uri']}  {r['name']}{_marks(r)}{app_mark(r)}{_about(r)}" for r in entry["resources"]],
            ),
            (
                "Resource templates",
                [
                    f"{r['uriTemplate']}  {r['name']}{_marks(r)}{_about(r)}"
                    for r in entry["resourceTemplates"]
                ],
            ),
            ("Prompts", [_prompt_line(p) for p in entry["prompts"]]),
            ("Completions", [_completion_line(c) for c in entry["completions"]]),
            ("Middleware", [f"{m['name']}  (priority {m['priority']})" for m in entry["middleware"]]),
            ("Lifespan", [entry["lifespan"]] if entry["lifespan"] else []),
            ("Environment", [_env_line(variable) for variable in entry.get("env", [])]),
            ("Warnings", list(entry["warnings"])),
        ]
        for title, lines in sections:
            if lines:
                echo(f"  {title}:")
                echo("\n".join("    " + line for line in lines))
        echo("")
    if report.get("skills"):
        echo("Skills:")
        for skill in report["skills"]:
            files = len(skill["resources"])
            echo(f"    {skill['uri']}  ({files} file{'s' * (files != 1)}){_about(skill['frontmatter'])}")
        echo("")
    for problem in report["problems"]:
        echo(f"problem: {problem}")
    failed = sum(not entry["ok"] for entry in report["files"])
    total = len(report["files"])
    summary = f"{total} file{'s' * (total != 1)}"
    if failed:
        summary += f", {failed} failed to load"
    echo(summary + (f", {len(report['problems'])} problem(s)" if report["problems"] else ""))


def _about(entry: dict[str, Any]) -> str:
    description = (entry.get("description") or "").strip()
    return f"  - {description.splitlines()[0]}" if description else ""


def _tool_line(tool: dict[str, Any], signature: Callable[[dict[str, Any]], str]) -> str:
    flags = [
        flag
        for flag, on in (("hidden", tool["hidden"]), (f"task={tool['task']}", tool["task"] != "forbidden"))
        if on
    ]
    flags += [f"timeout={tool['timeout']:g}s"] if tool.get("timeout") else []
    flags += [f"tags={','.join(tool['tags'])}"] if tool.get("tags") else []
    flags += [_scopes(tool)] if tool.get("scopes") else []
    flags += app_flags(tool.get("ui"))
    flags += [f"rate_limit={tool['rateLimit']}"] if tool.get("rateLimit") else []
    marks = f"  [{' '.join(flags)}]" if flags else ""
    return f"{tool['name']}{signature(tool['inputSchema'])}{marks}{_about(tool)}"


def app_mark(resource: dict[str, Any]) -> str:
    """A resource that is an MCP App's view (served as text/html;profile=mcp-app)."""
    return "  [app]" if resource.get("mimeType") == APP_MIME_TYPE else ""


def app_flags(ui: Any) -> list[str]:
    """A tool's MCP App (its _meta.ui) as flags: the ui:// resource it shows, who may call it."""
    if not isinstance(ui, dict):
        return []
    flags = [f"app={ui['resourceUri']}"] if isinstance(ui.get("resourceUri"), str) else []
    visibility = ui.get("visibility")
    if isinstance(visibility, list):
        flags.append(f"visibility={','.join(map(str, visibility))}")
    return flags


def _prompt_line(prompt: dict[str, Any]) -> str:
    arguments = [a["name"] + ("" if a.get("required") else "?") for a in prompt["arguments"]]
    return f"{prompt['name']}({', '.join(arguments)}){_marks(prompt)}{_about(prompt)}"


def _template_line(template: dict[str, Any]) -> str:
    return f"{template['uriTemplate']}  {template['name']}{_marks(template)}{_about(template)}"


def _scopes(entry: dict[str, Any]) -> str:
    """The OAuth scopes a caller needs (@tool(scopes=...)), as a flag."""
    return f"scopes={','.join(entry['scopes'])}"


def _marks(entry: dict[str, Any]) -> str:
    return f"  [{_scopes(entry)}]" if entry.get("scopes") else ""


def _completion_line(completion: dict[str, Any]) -> str:
    ref = completion["ref"]
    target = f"prompt {ref['name']}" if ref["type"] == "ref/prompt" else f"resource {ref['uri']}"
    return f"{target}, argument {completion['argument']}"


def _env_line(variable: dict[str, Any]) -> str:
    flags = ["secret"] if variable["secret"] else []
    flags += ["required"] if variable["required"] else [f"default {variable['default']!r}"]
    return f"{variable['name']}  [{' '.join(flags)}]{_about(variable)}"
