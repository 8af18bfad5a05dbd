"""The three benchmark shapes MCP servers publish, for protomcp, the MCP SDK and FastMCP.

    python benchmarks/public_shapes.py [--duration 60] [--quick] [--reps 1] [--out benchmarks/README.md]

Every side serves the same tools over Streamable HTTP (the servers of http_bench.py, driven by
its clients) in the 2025-11-25 era (initialize, then Mcp-Session-Id) and in the 2026-07-28 era
(no session; every request carries its `_meta`) where the side serves it; a side that does not
serve an era is reported as such. Shapes:

(a) one sequential client: `tools/call echo` one at a time for a time budget: calls/s and p50;
(b) 50 concurrent clients, the server pinned to CPU 0 (`taskset -c 0`, its child processes
    too) and this client process to CPU 1: calls/s, p50 and p99;
(c) a sustained hello-world: 50 concurrent clients for `--duration` seconds on an unpinned
    server: calls/s, p99, errors (a failed call is counted and its connection reopened), and
    the RSS of the server's process tree at the start (sessions open) and at the end.

Each shape starts a fresh server. Repetitions rotate the order of the sides; every figure is
the median over repetitions (errors: the sum). Every wait is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from http_bench import SIDES, BlockingConnection, Connection, Server, Side
from sections import replace_section

SECTION = "## Public shapes: sequential, 50 clients on one core, sustained"
CLIENTS = 50
SERVER_CPU, CLIENT_CPU = 0, 1
ERAS = (("2025-11-25", False), ("2026-07-28", True))
CALL_ERRORS = (RuntimeError, OSError, EOFError, KeyError, StopIteration, orjson.JSONDecodeError)


@dataclass
class Budget:
    sequential_s: float
    concurrent_s: float
    sustained_s: float
    call_timeout_s: float = 30.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def pin_cores() -> bool:
    """Whether the machine lets the server and the clients have a core each."""
    return shutil.which("taskset") is not None and {SERVER_CPU, CLIENT_CPU} <= os.sched_getaffinity(0)


# --------------------------------------------------------------------------- shapes


def sequential(server: Server, modern: bool, budget: Budget) -> dict[str, float]:
    """(a): one client, one call at a time."""
    conn = BlockingConnection(server.port, server.path, modern)
    conn.sock.settimeout(budget.call_timeout_s)
    try:
        conn.initialize()
        for _ in range(50):  # warm-up
            conn.echo()
        times: list[float] = []
        start = time.perf_counter()
        deadline = start + budget.sequential_s
        while (now := time.perf_counter()) < deadline:
            conn.echo()
            times.append(time.perf_counter() - now)
        elapsed = time.perf_counter() - start
    finally:
        conn.close()
    return {"cps": len(times) / elapsed, "p50": percentile(times, 0.5) * 1e6}


async def open_clients(server: Server, modern: bool, count: int) -> list[Connection]:
    conns = [Connection(server.port, server.path, modern) for _ in range(count)]
    for conn in conns:
        await conn.open()
        await conn.initialize()
    return conns


async def closed_loop(
    server: Server, conns: list[Connection], seconds: float, budget: Budget, reopen: bool
) -> tuple[list[float], int, float]:
    """Every client calls in a loop for `seconds`: (latencies, errors, elapsed). A failed call
    raises, or with `reopen` is counted and its connection replaced."""
    errors = 0
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def client(n: int) -> None:
        nonlocal errors
        while (now := time.perf_counter()) < deadline:
            try:
                await asyncio.wait_for(conns[n].echo(), budget.call_timeout_s)
            except (*CALL_ERRORS, TimeoutError, asyncio.IncompleteReadError):
                if not reopen:
                    raise
                errors += 1
                conns[n].close()
                conns[n] = Connection(server.port, server.path, conns[n].modern)
                await asyncio.wait_for(conns[n].open(), budget.call_timeout_s)
                await asyncio.wait_for(conns[n].initialize(), budget.call_timeout_s)
                continue
            latencies.append(time.perf_counter() - now)

    start = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(len(conns))))
    return latencies, errors, time.perf_counter() - start


async def concurrent(server: Server, modern: bool, budget: Budget) -> dict[str, float]:
    """(b): 50 clients; the caller pinned the server to one core, this process to another."""
    conns = await open_clients(server, modern, CLIENTS)
    try:
        await closed_loop(server, conns, min(1.0, budget.concurrent_s), budget, reopen=False)  # warm-up
        latencies, _, elapsed = await closed_loop(server, conns, budget.concurrent_s, budget, reopen=False)
    finally:
        for conn in conns:
            conn.close()
    return {
        "cps": len(latencies) / elapsed,
        "p50": percentile(latencies, 0.5) * 1e6,
        "p99": percentile(latencies, 0.99) * 1e6,
    }


async def sustained(server: Server, modern: bool, budget: Budget) -> dict[str, float]:
    """(c): 50 clients for the whole duration; errors are counted, not fatal."""
    conns = await open_clients(server, modern, CLIENTS)
    rss_start = server.memory_kb()
    try:
        latencies, errors, elapsed = await closed_loop(server, conns, budget.sustained_s, budget, reopen=True)
        rss_end = server.memory_kb()
    finally:
        for conn in conns:
            conn.close()
    return {
        "cps": len(latencies) / elapsed,
        "p99": percentile(latencies, 0.99) * 1e6 if latencies else float("nan"),
        "errors": float(errors),
        "rss_start": rss_start / 1024,
        "rss_end": rss_end / 1024,
    }


# --------------------------------------------------------------------------- runs


@dataclass
class Shape:
    key: str
    title: str
    columns: list[tuple[str, str, int]]  # (figure key, heading, digits)
    pinned: bool
    run: Callable[[Server, bool, Budget], dict[str, float]]


AsyncShape = Callable[[Server, bool, Budget], Coroutine[Any, Any, dict[str, float]]]


def run_sync(shape: AsyncShape) -> Callable[[Server, bool, Budget], dict[str, float]]:
    """An async shape as a plain call (each measurement has its own event loop)."""

    def call(server: Server, modern: bool, budget: Budget) -> dict[str, float]:
        timeout = budget.concurrent_s + budget.sustained_s + 120
        return asyncio.run(asyncio.wait_for(shape(server, modern, budget), timeout))

    return call


SHAPES = [
    Shape(
        "a",
        "(a) one sequential client",
        [("cps", "calls/s", 0), ("p50", "p50 (µs)", 0)],
        False,
        sequential,
    ),
    Shape(
        "b",
        f"(b) {CLIENTS} concurrent clients, server on one core",
        [("cps", "calls/s", 0), ("p50", "p50 (µs)", 0), ("p99", "p99 (µs)", 0)],
        True,
        run_sync(concurrent),
    ),
    Shape(
        "c",
        f"(c) sustained hello-world, {CLIENTS} clients",
        [
            ("cps", "calls/s", 0),
            ("p99", "p99 (µs)", 0),
            ("errors", "errors", 0),
            ("rss_start", "server RSS at start (MB)", 1),
            ("rss_end", "server RSS at end (MB)", 1),
        ],
        False,
        run_sync(sustained),
    ),
]


def measure(side: Side, shape: Shape, modern: bool, budget: Budget, pin: bool) -> dict[str, float] | str:
    """One fresh server, one shape, one era: the figures, or why there are none."""
    command = ["taskset", "-c", str(SERVER_CPU), *side.command] if pin and shape.pinned else side.command
    try:
        server = Server(Side(side.name, command))
    except RuntimeError as exc:
        return str(exc)
    mask = os.sched_getaffinity(0)
    try:
        if pin and shape.pinned:
            os.sched_setaffinity(0, {CLIENT_CPU})
        return shape.run(server, modern, budget)
    except (*CALL_ERRORS, TimeoutError, asyncio.IncompleteReadError) as exc:
        return f"{type(exc).__name__}: {str(exc)[:160]}"
    finally:
        os.sched_setaffinity(0, mask)
        server.stop()


Results = dict[tuple[str, str, str], list[dict[str, float] | str]]  # (shape, side, era) -> runs


def run_all(sides: list[Side], shapes: list[Shape], budget: Budget, reps: int, pin: bool) -> Results:
    results: Results = {}
    for rep in range(reps):
        order = sides[rep % len(sides) :] + sides[: rep % len(sides)]
        for shape in shapes:
            for side in order:
                for era, modern in ERAS:
                    got = measure(side, shape, modern, budget, pin)
                    results.setdefault((shape.key, side.name, era), []).append(got)
                    print(f"rep {rep + 1} {shape.key} {side.name} {era}: {got}", file=sys.stderr, flush=True)
    return results


def report(
    results: Results, sides: list[Side], shapes: list[Shape], pin: bool, reps: int, budget: Budget
) -> str:
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        f"Run: {when}, {reps} repetition(s), sides in rotating order; {os.cpu_count()} CPUs; "
        f"load average at end {load}. Budgets: (a) {budget.sequential_s:g} s, (b) {budget.concurrent_s:g} s, "
        f"(c) {budget.sustained_s:g} s."
    ]
    if not pin:
        lines.append("(b) ran unpinned: no two cores for this process, or no `taskset`.")
    notes: list[str] = []
    for shape in shapes:
        lines += [
            "",
            f"{shape.title}:",
            "",
            "| side | era | " + " | ".join(head for _, head, _ in shape.columns) + " |",
            "|---|---|" + "---:|" * len(shape.columns),
        ]
        for side in sides:
            for era, _ in ERAS:
                runs = results.get((shape.key, side.name, era), [])
                good = [r for r in runs if isinstance(r, dict)]
                failed = [r for r in runs if isinstance(r, str)]
                for why in failed:
                    note = f"{shape.key} {side.name} {era}: {why}"
                    if note not in notes:
                        notes.append(note)
                if not good:
                    cells = ["ERROR"] * len(shape.columns)
                else:
                    cells = []
                    for key, _, digits in shape.columns:
                        values = [r[key] for r in good]
                        value = sum(values) if key == "errors" else statistics.median(values)
                        cells.append(f"{value:,.{digits}f}")
                lines.append(f"| {side.name} | {era} | " + " | ".join(cells) + " |")
    if notes:
        lines += ["", "Failures (an era a side does not serve shows up here):", ""]
        lines += [f"- {note}" for note in notes]
    if not any(side.name == "FastMCP" for side in SIDES):
        lines += ["", "FastMCP is not installed (pip install -e '.[bench]'): not measured."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, help="seconds of (c) (default 60, --quick 5)")
    parser.add_argument("--quick", action="store_true", help="short budgets for (a) and (b)")
    parser.add_argument("--budget", type=float, help="seconds of (a) and of (b) (default 5, --quick 1)")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--shapes", default="a,b,c", help="which shapes to run (default a,b,c)")
    names = ",".join(side.name for side in SIDES)
    parser.add_argument("--sides", default=names, help=f"which sides to run (default {names})")
    parser.add_argument("--out", type=Path, help="replace this script's section of that markdown file")
    args = parser.parse_args(argv)
    quick = args.budget if args.budget is not None else (1.0 if args.quick else 5.0)
    duration = args.duration if args.duration is not None else (5.0 if args.quick else 60.0)
    budget = Budget(quick, quick, duration)
    shapes = [shape for shape in SHAPES if shape.key in args.shapes.split(",")]
    sides = [side for side in SIDES if side.name in args.sides.split(",")]
    pin = pin_cores()
    results = run_all(sides, shapes, budget, max(1, args.reps), pin)
    text = report(results, sides, shapes, pin, max(1, args.reps), budget)
    print(text)
    if args.out is not None:
        explain = (
            "Measured by `python benchmarks/public_shapes.py --out benchmarks/README.md` (the method is "
            "in its docstring and under Method above)."
        )
        old = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        args.out.write_text(replace_section(old, SECTION, f"{explain}\n\n{text}"), encoding="utf-8")
    return text


if __name__ == "__main__":
    main()
