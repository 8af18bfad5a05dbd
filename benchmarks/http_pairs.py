"""`http_bench.py --sides protomcp` for several checkouts (and host flags), alternated in many
short runs, so load that comes and goes on a shared machine falls on every side alike.

    python benchmarks/http_pairs.py --rounds 6 \\
        before=/path/to/0973bbc \\
        after=/path/to/this-checkout:--rate-limit '*=1000000/hour'

A side is NAME=CHECKOUT[:FLAGS]: the host runs from CHECKOUT (PYTHONPATH) with FLAGS added (as
http_bench.py's --protomcp-args). Each round runs every side once (`--reps 1`), the order
rotating, and reversed every other cycle (A B, B A, B A, A B, ...); each run's figures and the load average
are printed as they come, then the mean and median of each figure per side and their change
against the first side. The rows: calls/s and server CPU per call (µs, the host and its tool
process) at 50 and 500 clients, in both eras (--metrics chooses).
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROWS = (
    ("rate", "calls/s, 50 sessions, 2025-11-25"),
    ("rate500", "calls/s, 500 sessions, 2025-11-25"),
    ("cpu", "CPU µs/call, 50 sessions, 2025-11-25"),
    ("rate_modern", "calls/s, 50 clients, 2026-07-28"),
    ("rate500_modern", "calls/s, 500 clients, 2026-07-28"),
    ("cpu_modern", "CPU µs/call, 50 clients, 2026-07-28"),
    ("cpu500_modern", "CPU µs/call, 500 clients, 2026-07-28"),
)


def run(checkout: str, flags: str, metrics: str) -> dict[str, float]:
    argv = [sys.executable, str(HERE / "http_bench.py"), "--sides", "protomcp", "--reps", "1"]
    argv += ["--metrics", metrics, "--protomcp-args", flags]
    env = {**os.environ, "PYTHONPATH": checkout}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
    line = next((ln for ln in done.stderr.splitlines() if ln.startswith("rep 1 protomcp: ")), None)
    if done.returncode != 0 or line is None:
        raise SystemExit(f"{checkout}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return ast.literal_eval(line.removeprefix("rep 1 protomcp: "))  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sides", nargs="+", metavar="NAME=CHECKOUT[:FLAGS]")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--metrics", default="rate,rate500,rate_modern,rate500_modern")
    args = parser.parse_args()
    sides = []
    for given in args.sides:
        name, _, rest = given.partition("=")
        checkout, _, flags = rest.partition(":")
        sides.append((name, str(Path(checkout).resolve()), flags))
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in sides}
    for round_ in range(args.rounds):
        shift = round_ % len(sides)
        order = sides[shift:] + sides[:shift]
        if (round_ // len(sides)) % 2:  # (not round_ % 2: with two sides that undoes the shift)
            order.reverse()
        for name, checkout, flags in order:
            load = os.getloadavg()[0]
            figures = run(checkout, flags, args.metrics)
            results[name].append(figures)
            shown = " ".join(f"{key}={figures[key]:.0f}" for key, _ in ROWS if key in figures)
            print(f"round {round_ + 1} {name}: {shown} (load {load:.2f} -> {os.getloadavg()[0]:.2f})")
    first = sides[0][0]
    print(f"\n| figure | {' | '.join(name + ' mean / median' for name, _, _ in sides)} |")
    print("|---|" + "---:|" * len(sides))
    for key, label in ROWS:
        cells = []
        for name, _, _ in sides:
            values = [r[key] for r in results[name] if key in r]
            if not values:
                cells.append("-")
                continue
            mean, median = statistics.mean(values), statistics.median(values)
            cell = f"{mean:,.0f} / {median:,.0f}"
            base = [r[key] for r in results[first] if key in r]
            if name != first and base:
                by_mean = mean / statistics.mean(base) - 1
                by_median = median / statistics.median(base) - 1
                cell += f" ({by_mean:+.1%} / {by_median:+.1%})"
            cells.append(cell)
        if any(cell != "-" for cell in cells):
            print(f"| {label} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
