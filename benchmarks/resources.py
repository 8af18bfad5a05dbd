"""A 10 MiB binary resource read against a 10 MiB binary tool result (both base64 on the wire,
both through the raw sideband between tool process and host), sequential, interleaved.

    python benchmarks/resources.py [--reps 5] [--out benchmarks/README.md]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

from lean_client import LeanClient
from sections import replace_section

HERE = Path(__file__).resolve().parent
SERVER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
HEADING = "## Large resources"
EXPLAIN = (
    "Measured by `python benchmarks/resources.py --out benchmarks/README.md`: `protomcp run "
    "tools_blobs.py`, one session, sequential requests: `resources/read` of a 10 MiB `bytes` "
    "resource against `tools/call` of a tool returning the same 10 MiB as an `Image` (13.3 MB of "
    "base64 each way), interleaved, median of the repetitions. Both travel from the tool process "
    "to the host outside the Envelope (spool file or raw bytes)."
)
REQUESTS = {
    "resources/read (10 MiB blob)": (
        b'{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":"bench://blob"}}\n'
    ),
    "tools/call (10 MiB image)": (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"blob_result","arguments":{}}}\n'
    ),
}


def answered(message: dict) -> bool:  # type: ignore[type-arg]
    return "result" in message


async def run(reps: int, requests: int) -> dict[str, list[float]]:
    argv = [sys.executable, "-m", "protomcp_host", "run", "tools_blobs.py"]
    client = await LeanClient.spawn(argv, cwd=str(HERE), env=SERVER_ENV)
    results: dict[str, list[float]] = {name: [] for name in REQUESTS}
    try:
        await client.initialize(timeout=60)
        for line in REQUESTS.values():  # warm-up
            await client.drive(lambda i, line=line: line % i, 3, 1, 60.0, 120, answered)
        for rep in range(reps):
            order = list(REQUESTS) if rep % 2 == 0 else list(reversed(REQUESTS))
            for name in order:
                line = REQUESTS[name]
                drv = await client.drive(lambda i, line=line: line % i, requests, 1, 60.0, 120, answered)
                if drv.bad:
                    raise RuntimeError(f"{drv.bad} wrong answers to {name}")
                results[name].append(statistics.median(drv.latencies) * 1e3)
    finally:
        await client.close()
    return results


def report(results: dict[str, list[float]], reps: int) -> str:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [f"Run: {when}, {reps} repetitions.", "", "| request | p50 (ms) |", "|---|---:|"]
    medians = {name: statistics.median(samples) for name, samples in results.items()}
    lines += [f"| {name} | {ms:,.1f} |" for name, ms in medians.items()]
    read, call = medians.values()
    lines += ["", f"A read takes {read / call:.2f}x the time of the same data as a tool result."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--out", type=Path, help="replace the large-resources section of this markdown file")
    args = parser.parse_args()
    text = report(asyncio.run(run(args.reps, args.requests)), args.reps)
    print(text)
    if args.out is not None:
        args.out.write_text(replace_section(args.out.read_text(), HEADING, f"{EXPLAIN}\n\n{text}"))


if __name__ == "__main__":
    main()
