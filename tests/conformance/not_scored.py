"""Judges the scenarios a `conformance server --requirements REVISION` run runs but does not
score (extension, pending and added-after-release scenarios: tasks-*, json-schema-2020-12,
header validation...).

The suite prints them and never fails a run for them, and its --expected-failures file judges
scored scenarios only. So run.sh passes the run's results (`-o DIR`) here with the suite's list
of the revision's scenarios (`conformance list --requirements REVISION`) and the same
expected-failures file, whose `not_scored:` section lists the not-scored scenarios (or
`scenario:check-id`) known to fail, each with a one-line reason as a trailing comment:

    server:                       # scored: judged by the suite itself
      - caching  # why it fails
    not_scored:                   # judged here (the suite ignores this key)
      - tasks-lifecycle  # why it fails
      - http-header-validation:sep-2243-some-check  # why this check fails

Exit status 1 when a not-scored server scenario fails (a FAILURE check, as the suite counts
them) that the file does not list, when one left no results (it did not run, or crashed) and is
not listed as a whole, or when the file is malformed (an entry without a reason, a name that is
not a not-scored server scenario of the revision). An entry that now passes is a warning:
remove it. Standard library only.

Usage: python3 not_scored.py --list LIST.txt --results DIR --expected FILE.yml
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

# Results: DIR/server-<scenario>-<ISO timestamp with - for :>/checks.json
_RESULT_DIR = re.compile(r"^server-(?P<name>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
_SECTION = re.compile(r"^(?P<key>[A-Za-z_][\w-]*):\s*(?P<empty>\[\])?\s*(?:#.*)?$")
_ENTRY = re.compile(r"^\s+-\s+(?P<entry>[^\s#]+)\s*(?:#(?P<reason>.*))?$")
_NOT_SCORED_HEADER = "Run and reported, but never scored:"
_CATEGORY = re.compile(r"^\s+(?P<category>[\w-]+) \(\d+\):$")
_LISTED = re.compile(r"^\s+- (?P<name>\S+) \[(?P<side>server|client)\]$")


class BadInput(Exception):
    """A list, results directory or expected-failures file this script cannot judge by."""


@dataclass
class Expected:
    """The `not_scored:` entries: whole scenarios and single checks, each with its reason."""

    scenarios: dict[str, str] = field(default_factory=dict)
    checks: dict[tuple[str, str], str] = field(default_factory=dict)


def not_scored_server_scenarios(listing: str) -> dict[str, str]:
    """The not-scored server scenarios of `conformance list --requirements REVISION`'s output,
    each with its category (extension, pending, added-after-release)."""
    lines = listing.splitlines()
    try:
        start = lines.index(_NOT_SCORED_HEADER)
    except ValueError:
        raise BadInput(f"no {_NOT_SCORED_HEADER!r} block in the suite's list output") from None
    found: dict[str, str] = {}
    category = "not scored"
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        if match := _CATEGORY.match(line):
            category = match["category"]
        elif (match := _LISTED.match(line)) and match["side"] == "server":
            found[match["name"]] = category
    return found


def scored_server_scenarios(listing: str) -> set[str]:
    """The scored server scenarios of the same output (to tell a misfiled entry)."""
    lines = listing.splitlines()
    found: set[str] = set()
    inside = False
    for line in lines:
        if line.startswith("Server scenarios"):
            inside = True
        elif inside and (match := re.match(r"^\s+- (\S+)$", line)):
            found.add(match[1])
        elif inside and not line.strip():
            break
    return found


def read_expected(text: str, section: str = "not_scored") -> dict[str, str]:
    """The entries of one top-level list of an expected-failures file, with their reasons.
    Reads the YAML subset these files use (a key, then `- entry  # reason` lines) and rejects
    anything else, and any entry without a reason, rather than guess."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if match := _SECTION.match(line):
            current = sections.setdefault(match["key"], {})
            if match["empty"]:
                current = None
            continue
        match = _ENTRY.match(line)
        if match is None or current is None:
            raise BadInput(f"line {number}: expected `  - scenario  # reason`, got {line.strip()!r}")
        if not (match["reason"] or "").strip():
            raise BadInput(f"line {number}: {match['entry']!r} has no reason (add `  # why it fails`)")
        if match["entry"] in current:
            raise BadInput(f"line {number}: {match['entry']!r} is listed twice")
        current[match["entry"]] = match["reason"].strip()
    return sections.get(section, {})


def expected_of(entries: dict[str, str]) -> Expected:
    expected = Expected()
    for entry, reason in entries.items():
        scenario, _, check = entry.partition(":")
        if check:
            expected.checks[(scenario, check)] = reason
        else:
            expected.scenarios[scenario] = reason
    return expected


def read_results(directory: Path) -> dict[str, list[dict[str, object]]]:
    """Each server scenario's checks, from a `conformance server -o DIR` run."""
    results: dict[str, list[dict[str, object]]] = {}
    for entry in sorted(directory.iterdir()) if directory.is_dir() else ():
        match = _RESULT_DIR.match(entry.name)
        checks_file = entry / "checks.json"
        if match is None or not checks_file.is_file():
            continue
        checks = json.loads(checks_file.read_text())
        if not isinstance(checks, list):
            raise BadInput(f"{checks_file}: expected a list of checks")
        results[match["name"]] = checks
    return results


def judge(
    not_scored: dict[str, str],
    scored: set[str],
    results: dict[str, list[dict[str, object]]],
    expected: Expected,
) -> tuple[list[str], list[str], list[str]]:
    """(report lines, errors, warnings) for the not-scored scenarios of one run."""
    report: list[str] = []
    errors: list[str] = []
    warnings: list[str] = []
    for name in sorted({*expected.scenarios, *(scenario for scenario, _ in expected.checks)}):
        if name not in not_scored:
            why = (
                "is scored for this revision: list it under `server:`"
                if name in scored
                else "is not a not-scored server scenario of this revision"
            )
            errors.append(f"{name}: listed under not_scored but {why}")
        elif name in expected.scenarios and any(scenario == name for scenario, _ in expected.checks):
            errors.append(f"{name}: listed as a whole scenario and per check; keep one")
    for name, category in sorted(not_scored.items()):
        checks = results.get(name)
        if checks is None:  # it did not run, or crashed before it saved its checks
            if name in expected.scenarios:
                report.append(
                    f"  ✗ {name} ({category}): no results; expected to fail: {expected.scenarios[name]}"
                )
            else:
                errors.append(f"{name} ({category}): no results (it did not run, or crashed)")
                report.append(f"  ✗ {name} ({category}): no results")
            continue
        failed = _ids(checks, "FAILURE")
        warned = _ids(checks, "WARNING")
        passed = sum(1 for c in checks if c.get("status") == "SUCCESS")
        listed_checks = {check for scenario, check in expected.checks if scenario == name}
        mark = "✗" if failed else "✓"
        note = f"{passed} passed, {len(failed)} failed" + (f", {len(warned)} warnings" if warned else "")
        if name in expected.scenarios:
            note += f"; expected to fail: {expected.scenarios[name]}"
            if not failed:
                warnings.append(f"{name} ({category}) now passes: remove it from not_scored")
        else:
            unexpected = [check for check in failed if check not in listed_checks]
            if unexpected:
                errors.append(f"{name} ({category}) fails unexpectedly: {', '.join(unexpected)}")
            for check in sorted(listed_checks - set(failed)):
                warnings.append(f"{name}:{check} ({category}) now passes: remove it from not_scored")
            if failed and not unexpected:
                note += "; the failing checks are expected"
        report.append(f"  {mark} {name} ({category}): {note}")
        report.extend(f"      FAILURE {check}" for check in failed)
        report.extend(f"      WARNING {check}" for check in warned)
    return report, errors, warnings


def _ids(checks: list[dict[str, object]], status: str) -> list[str]:
    """The ids of the checks with this status, in order, each once."""
    return list(dict.fromkeys(str(check.get("id")) for check in checks if check.get("status") == status))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", required=True, type=Path, help="`conformance list --requirements` output")
    parser.add_argument("--results", required=True, type=Path, help="the `-o` directory of the run")
    parser.add_argument("--expected", required=True, type=Path, help="the run's expected-failures file")
    parser.add_argument("--revision", default="", help="the revision, for the messages")
    args = parser.parse_args(argv)
    try:
        listing = args.list.read_text()
        text = args.expected.read_text()
        read_expected(text, "server")  # every scored entry needs a reason too
        expected = expected_of(read_expected(text))
        report, errors, warnings = judge(
            not_scored_server_scenarios(listing),
            scored_server_scenarios(listing),
            read_results(args.results),
            expected,
        )
    except (BadInput, OSError, json.JSONDecodeError) as exc:
        print(f"conformance: cannot judge the not-scored scenarios: {exc}", file=sys.stderr)
        return 1
    revision = f" for {args.revision}" if args.revision else ""
    print(f"\nNot-scored server scenarios{revision}, judged against {args.expected.name}:")
    print("\n".join(report) if report else "  (none)")
    for warning in warnings:
        print(f"conformance: warning: {warning}", file=sys.stderr)
    for error in errors:
        print(f"conformance: {error}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
