"""Two settings of one environment variable, paired: the same code, one setting against the other.

    python benchmarks/paired.py PROTOMCP_READER loop threads   # who reads a tool process's frames
    python benchmarks/paired.py PROTOMCP_ENVELOPE upb python   # its Envelope classes
        [--pairs 24] [--spaced-pairs 16] [--pipelined-pairs 9]

`protomcp run tools_protomcp.py` (two sync tools) is started with VARIABLE=A and with
VARIABLE=B, one right after the other (the order alternates between pairs). Each side is
measured in run.py's order: 500 sequential and 500 pipelined warm-up calls, then the figure. The
per-pair ratio cancels the drift of this shared machine between runs, which is larger than the
effects measured; the report gives the median of the B ÷ A ratios and in how many pairs B was
better.

Figures: sequential echo p50 (2,000 calls) and the tree's CPU per call meanwhile; echo p50
with 20 ms between calls (100 calls: an AI client's pace); pipelined calls/s (64 in flight) and
the tree's CPU per call meanwhile; the tree's RSS after the pipelined calls.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from lean_client import LeanClient, descendants, tree_cpu_s, tree_memory_kb
from middleware import SERVER_ENV, echo_line, echo_ok

HERE = Path(__file__).resolve().parent
Figure = Callable[[LeanClient], Awaitable[tuple[float, float]]]


async def sequential(client: LeanClient) -> tuple[float, float]:
    """(p50 µs, CPU µs per call of the process tree)."""
    pids = descendants(client.pid)
    cpu = tree_cpu_s(pids)
    drv = await client.drive(echo_line, 2000, 1, 60.0, 120, echo_ok)
    return statistics.median(drv.latencies) * 1e6, (tree_cpu_s(pids) - cpu) / drv.done * 1e6


async def spaced(client: LeanClient) -> tuple[float, float]:
    """(p50 µs with 20 ms before each call, 0)."""
    latencies: list[float] = []
    for _ in range(100):
        await asyncio.sleep(0.02)
        drv = await client.drive(echo_line, 1, 1, 60.0, 120, echo_ok)
        latencies.extend(drv.latencies)
    return statistics.median(latencies) * 1e6, 0.0


async def pipelined(client: LeanClient) -> tuple[float, float]:
    """(calls/s with 64 in flight, CPU µs per call of the process tree)."""
    pids = descendants(client.pid)
    cpu = tree_cpu_s(pids)
    drv = await client.drive(echo_line, 20_000, 64, 5.0, 120, echo_ok)
    return drv.done / (drv.last_recv - drv.first_send), (tree_cpu_s(pids) - cpu) / drv.done * 1e6


async def memory(client: LeanClient) -> tuple[float, float]:
    """(RSS of the process tree in kB after 20,000 pipelined calls, 0)."""
    await client.drive(echo_line, 20_000, 64, 5.0, 120, echo_ok)
    return float(tree_memory_kb(client.pid)[0]), 0.0


async def measure(variable: str, value: str, figure: Figure) -> tuple[float, float]:
    env = {**SERVER_ENV, variable: value}
    argv = [sys.executable, "-m", "protomcp_host", "run", "tools_protomcp.py"]
    client = await LeanClient.spawn(argv, cwd=str(HERE), env=env)
    try:
        await client.initialize(timeout=60)
        await client.drive(echo_line, 500, 1, 60.0, 120, echo_ok)
        await client.drive(echo_line, 500, 64, 60.0, 120, echo_ok)
        return await figure(client)
    finally:
        await client.close()


Pairs = list[dict[str, tuple[float, float]]]


async def pairs(args: argparse.Namespace, figure: Figure, count: int) -> Pairs:
    out = []
    for n in range(count):
        order = (args.a, args.b) if n % 2 == 0 else (args.b, args.a)
        out.append({value: await measure(args.variable, value, figure) for value in order})
    return out


def report(args: argparse.Namespace, name: str, results: Pairs, lower_is_better: bool) -> str:
    a, b = args.a, args.b
    ratios = [r[b][0] / r[a][0] for r in results]
    better = sum((ratio < 1) == lower_is_better for ratio in ratios)
    medians = {value: statistics.median(r[value][0] for r in results) for value in (a, b)}
    line = (
        f"{name}: {a} {medians[a]:,.0f}, {b} {medians[b]:,.0f}; {b} ÷ {a} per pair: "
        f"median {statistics.median(ratios):.3f}, {b} better in {better} of {len(ratios)} pairs"
    )
    cpu = [r[b][1] / r[a][1] for r in results if r[a][1]]
    if cpu:
        medians = {value: statistics.median(r[value][1] for r in results) for value in (a, b)}
        line += f"; CPU µs per call {a} {medians[a]:.1f}, {b} {medians[b]:.1f}"
        line += f", {b} ÷ {a}: {statistics.median(cpu):.3f}"
    return line


async def run(args: argparse.Namespace) -> None:
    print(report(args, "sequential echo p50 (µs)", await pairs(args, sequential, args.pairs), True))
    print(
        report(args, "echo p50, 20 ms between calls (µs)", await pairs(args, spaced, args.spaced_pairs), True)
    )
    print(report(args, "pipelined echo (calls/s)", await pairs(args, pipelined, args.pipelined_pairs), False))
    print(report(args, "RSS of the process tree (kB)", await pairs(args, memory, args.memory_pairs), True))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("variable", help="the environment variable, e.g. PROTOMCP_READER")
    parser.add_argument("a", help="the setting measured against (e.g. loop)")
    parser.add_argument("b", help="the setting measured (e.g. threads)")
    parser.add_argument("--pairs", type=int, default=24, help="pairs for the sequential figure")
    parser.add_argument("--spaced-pairs", type=int, default=16, help="pairs for the spaced figure")
    parser.add_argument("--pipelined-pairs", type=int, default=9, help="pairs for the pipelined figure")
    parser.add_argument("--memory-pairs", type=int, default=3, help="pairs for the memory figure")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
