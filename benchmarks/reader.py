"""Who reads a tool process's frames: its worker threads in turn, or its event loop.

    python benchmarks/reader.py [--pairs 24] [--spaced-pairs 16] [--pipelined-pairs 9]

`protomcp run tools_protomcp.py` (two sync tools, so "auto" picks the threads) is started
with PROTOMCP_READER=threads and with PROTOMCP_READER=loop, the same code otherwise, one right
after the other (the order alternates between pairs). Each side is measured in run.py's order:
500 sequential and 500 pipelined warm-up calls, then the figure. The per-pair ratio cancels the
drift of this shared machine between runs, which is larger than the effect measured; the
report gives the median of the ratios and in how many pairs the threads were faster.

Figures: sequential echo p50 (2,000 calls) and the tree's CPU per call meanwhile; echo p50
with 20 ms between calls (100 calls: an AI client's pace); pipelined calls/s (64 in flight).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from lean_client import LeanClient, descendants, tree_cpu_s
from middleware import SERVER_ENV, echo_line, echo_ok

HERE = Path(__file__).resolve().parent
READERS = ("loop", "threads")
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
    """(calls/s with 64 in flight, 0)."""
    drv = await client.drive(echo_line, 20_000, 64, 5.0, 120, echo_ok)
    return drv.done / (drv.last_recv - drv.first_send), 0.0


async def measure(reader: str, figure: Figure) -> tuple[float, float]:
    env = {**SERVER_ENV, "PROTOMCP_READER": reader}
    argv = [sys.executable, "-m", "protomcp_host", "run", "tools_protomcp.py"]
    client = await LeanClient.spawn(argv, cwd=str(HERE), env=env)
    try:
        await client.initialize(timeout=60)
        await client.drive(echo_line, 500, 1, 60.0, 120, echo_ok)
        await client.drive(echo_line, 500, 64, 60.0, 120, echo_ok)
        return await figure(client)
    finally:
        await client.close()


async def pairs(figure: Figure, count: int) -> list[dict[str, tuple[float, float]]]:
    out = []
    for n in range(count):
        order = READERS if n % 2 == 0 else tuple(reversed(READERS))
        out.append({reader: await measure(reader, figure) for reader in order})
    return out


def report(name: str, results: list[dict[str, tuple[float, float]]], lower_is_better: bool) -> str:
    ratios = [r["threads"][0] / r["loop"][0] for r in results]
    faster = sum((ratio < 1) == lower_is_better for ratio in ratios)
    medians = {reader: statistics.median(r[reader][0] for r in results) for reader in READERS}
    line = (
        f"{name}: loop {medians['loop']:,.0f}, threads {medians['threads']:,.0f}; threads ÷ loop per pair: "
        f"median {statistics.median(ratios):.3f}, threads better in {faster} of {len(ratios)} pairs"
    )
    cpu = [r["threads"][1] / r["loop"][1] for r in results if r["loop"][1]]
    if cpu:
        line += f"; CPU per call threads ÷ loop: median {statistics.median(cpu):.3f}"
    return line


async def run(args: argparse.Namespace) -> None:
    print(report("sequential echo p50 (µs)", await pairs(sequential, args.pairs), True))
    print(report("echo p50, 20 ms between calls (µs)", await pairs(spaced, args.spaced_pairs), True))
    print(report("pipelined echo (calls/s)", await pairs(pipelined, args.pipelined_pairs), False))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=24, help="pairs for the sequential figure")
    parser.add_argument("--spaced-pairs", type=int, default=16, help="pairs for the spaced figure")
    parser.add_argument("--pipelined-pairs", type=int, default=9, help="pairs for the pipelined figure")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
