"""Reload latency of `protomcp dev`: file saved → notifications/tools/list_changed received.

    python benchmarks/reload.py [--edits 30] [--out benchmarks/README.md]

Edits a temporary copy of examples/tools/hello.py, then of benchmarks/realistic.py (pydantic
models, four tools, a resource, a prompt), changing one tool's description so every save
changes the tool list, and reports p50/p95 beside `python -c pass` measured in the same run:
the floor any design that starts a new interpreter per reload pays.
"""

from __future__ import annotations

import argparse
import os
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
from sections import replace_section

ROOT = Path(__file__).resolve().parent.parent
HELLO = ROOT / "examples" / "tools" / "hello.py"
REALISTIC = Path(__file__).resolve().parent / "realistic.py"
# (file, the docstring each edit changes)
PAUSE = 1.0  # seconds between saves: the warm standby (SDK + the file's installed imports) is ready by then
FILES = ((HELLO, "Greet someone by name."), (REALISTIC, "Search the catalog."))


SECTION = "## Reload: `protomcp dev`, save → list_changed"
EXPLAIN = (
    "Measured by `python benchmarks/reload.py --out benchmarks/README.md` (run it after run.py, which "
    "rewrites this file): a temporary copy of examples/tools/hello.py, then of "
    "benchmarks/realistic.py (pydantic models, four tools, a resource, a prompt), is edited (a "
    "tool's description changes, so every save changes the tool list) and the time from the save to the "
    "`notifications/tools/list_changed` line on the host's stdout is recorded. `python -c pass` is "
    "measured in the same run: the cost any reload that starts a fresh interpreter pays at least; "
    "protomcp reloads into a warm standby process that has already imported the SDK."
)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Lines:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        self.stdout = proc.stdout
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.stdout, selectors.EVENT_READ)
        self.buffer = b""

    def next(self, timeout: float = 10) -> dict:  # type: ignore[type-arg]
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self.selector.select(left):
                raise TimeoutError("no message from the host")
            chunk = os.read(self.stdout.fileno(), 65536)
            if not chunk:
                raise EOFError("host exited")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return orjson.loads(line)


def save(path: Path, source: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(source)
    os.replace(tmp, path)


def measure_reloads(edits: int, source_file: Path, marker: str) -> list[float]:
    workdir = Path(tempfile.mkdtemp(prefix="protomcp-reload-"))
    file = workdir / source_file.name
    original = source_file.read_text()
    shutil.copy(source_file, file)
    proc = subprocess.Popen(
        [sys.executable, "-m", "protomcp_host", "dev", str(file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert proc.stdin is not None
    lines = Lines(proc)
    try:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        }
        proc.stdin.write(
            orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}) + b"\n"
        )
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        proc.stdin.flush()
        lines.next()
        time.sleep(1.0)  # let the warm standby finish starting before the first edit
        samples = []
        for i in range(edits):
            source = original.replace(f'"""{marker}"""', f'"""{marker[:-1]} (edit {i})."""')
            started = time.perf_counter()
            save(file, source)
            while lines.next().get("method") != "notifications/tools/list_changed":
                pass
            samples.append((time.perf_counter() - started) * 1000)
            time.sleep(PAUSE)  # a person does not save several times a second; let the standby refill
        return samples
    finally:
        proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)


def measure_python_start(runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--out", type=Path, help="replace the reload section of this markdown file")
    args = parser.parse_args()
    reloads = [measure_reloads(args.edits, file, marker) for file, marker in FILES]
    python = measure_python_start(args.edits)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [f"Run: {when}, {args.edits} edits.", "", "| metric | p50 (ms) | p95 (ms) |", "|---|---:|---:|"]
    rows = [
        *(
            (f"save → list_changed, {file.name} ({args.edits} edits)", r)
            for (file, _), r in zip(FILES, reloads, strict=True)
        ),
        ("`python -c pass`", python),
    ]
    for label, values in rows:
        lines.append(f"| {label} | {statistics.median(values):.1f} | {percentile(values, 0.95):.1f} |")
    lines.append("")
    worst = max(statistics.median(r) for r in reloads)
    lines.append(f"Target: reload p50 ≤ 100 ms for every file → {'PASS' if worst <= 100 else 'FAIL'}.")
    report = "\n".join(lines)
    print(report)
    if args.out is not None:
        text = args.out.read_text() if args.out.exists() else ""
        args.out.write_text(replace_section(text, SECTION, f"{EXPLAIN}\n\n{report}"))


if __name__ == "__main__":
    main()
