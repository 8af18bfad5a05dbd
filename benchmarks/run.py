"""protomcp vs the official MCP Python SDK and FastMCP: one interleaved run, reported as ratios.

    python benchmarks/run.py [--reps N] [--quick] [--out benchmarks/README.md]

All servers serve the same tools over stdio and are driven by the same raw JSON-RPC
client (lean_client.py). Every repetition runs the implementations back to back, in
rotating order, so machine noise hits every side alike; each metric is the median over
repetitions, and the ratios are protomcp / SDK and protomcp / FastMCP. Each side is also
measured in the 2026-07-28 era (no initialize; every request carries its `_meta`) beside its
2025-11-25 session. Every wait is bounded: a side that fails or hangs shows up as an error
in its cell, never as a hang. FastMCP is left out (and said so) when it is not installed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import importlib.metadata
import importlib.util
import os
import platform
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from gen_tools import write_many_tool_files
from lean_client import (
    LeanClient,
    ServerError,
    descendants,
    kill_all_live_groups,
    tree_cpu_s,
    tree_memory_kb,
)
from sections import keep_other_sections

# Servers run as on a user's machine: bytecode caching on (some sandboxes turn it off,
# which would charge the editable protomcp install a recompile the pip-installed SDK skips).
SERVER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

ECHO_TEXT = "hello world"
WINDOW = 64
SPACING_MS = 20  # pause before each call of the spaced latency row
MB = 1_000_000


# --------------------------------------------------------------------------- configuration


@dataclass
class Config:
    reps: int
    warmup_calls: int
    seq_calls: int
    spaced_calls: int
    pipe_calls: int
    pipe_budget_s: float
    blob_calls: int
    many_count: int = 1000
    start_timeout_s: float = 60.0
    call_timeout_s: float = 60.0
    session_timeout_s: float = 300.0


def make_config(args: argparse.Namespace) -> Config:
    if args.quick:
        cfg = Config(
            reps=3,
            warmup_calls=200,
            seq_calls=500,
            spaced_calls=40,
            pipe_calls=5_000,
            pipe_budget_s=1.5,
            blob_calls=3,
        )
    else:
        cfg = Config(
            reps=5,
            warmup_calls=500,
            seq_calls=2_000,
            spaced_calls=100,
            pipe_calls=20_000,
            pipe_budget_s=4.0,
            blob_calls=5,
        )
    if args.reps is not None:
        cfg.reps = max(1, args.reps)
    return cfg


@dataclass
class Impl:
    key: str
    label: str
    argv: Callable[[Path], list[str]]
    main_file: Path
    many_file: Path
    command_note: str = ""


def protomcp_argv() -> tuple[Callable[[Path], list[str]], str]:
    """``python -m protomcp_host run FILE`` if the package has a ``__main__``, else the console script."""
    try:
        has_main = importlib.util.find_spec("protomcp_host.__main__") is not None
    except (ImportError, ValueError):
        has_main = False
    if has_main:
        return (
            lambda f: [sys.executable, "-m", "protomcp_host", "run", str(f)]
        ), "python -m protomcp_host run"
    script = shutil.which("protomcp", path=str(Path(sys.executable).parent)) or shutil.which("protomcp")
    if script is None:
        return (
            lambda f: [sys.executable, "-m", "protomcp_host", "run", str(f)]
        ), "python -m protomcp_host run"
    return (lambda f: [script, "run", str(f)]), "protomcp run"


def fastmcp_installed() -> bool:
    return importlib.util.find_spec("fastmcp") is not None


def sdk_argv(f: Path) -> list[str]:
    return [sys.executable, str(f)]


def floor_argv(f: Path) -> list[str]:
    """The floor's "file" is its tool count (floor_relay.py passes it to floor_echo.py)."""
    return [sys.executable, str(HERE / "floor_relay.py"), f.name]


# --------------------------------------------------------------------------- metrics


@dataclass
class Metric:
    key: str
    name: str
    unit: str
    higher_is_better: bool = False
    target: str = "-"
    check: Callable[[float], bool] | None = None
    digits: int = 1
    cpu_unit: str = ""  # what the CPU column counts for this row ("" = none)


METRICS: list[Metric] = [
    Metric(
        "seq_p50",
        "sequential echo latency p50",
        "µs",
        target="≤ 0.25x",
        check=lambda r: r <= 0.25,
        cpu_unit="µs/call",
    ),
    Metric("seq_p99", "sequential echo latency p99", "µs"),
    # (no CPU column: over 20 ms pauses, /proc's 10 ms ticks make CPU per call noise)
    Metric("spaced_p50", f"echo latency p50, {SPACING_MS} ms between calls", "µs"),
    Metric(
        "pipe_cps",
        f"pipelined echo throughput, {WINDOW} in flight",
        "calls/s",
        higher_is_better=True,
        target="≥ 20x",
        check=lambda r: r >= 20,
        digits=0,
        cpu_unit="µs/call",
    ),
    Metric(
        "cold_start",
        "cold start: spawn → first tools/list",
        "ms",
        target="≤ 0.3x",
        check=lambda r: r <= 0.3,
        cpu_unit="ms",
    ),
    Metric("blob_1mb", "1 MB result time", "ms", cpu_unit="ms/call"),
    Metric("blob_10mb", "10 MB result time", "ms", target="≤ 1x", check=lambda r: r <= 1, cpu_unit="ms/call"),
    Metric(
        "many_start",
        "1,000-tool file: spawn → first tools/list",
        "ms",
        target="≤ 0.25x",
        check=lambda r: r <= 0.25,
        cpu_unit="ms",
    ),
    Metric("rss", "memory after warm-up, RSS of process tree", "MB", target="≤ 1x", check=lambda r: r <= 1),
    Metric("pss", "memory after warm-up, PSS of process tree", "MB"),
]


# The 2026-07-28 era beside the 2025-11-25 session: (stateful key, modern key, target, check).
MODERN_PAIRS: list[tuple[Metric, str, str, Callable[[float], bool]]] = [
    (METRICS[0], "modern_seq_p50", "≤ 1.05x", lambda r: r <= 1.05),
    (METRICS[3], "modern_pipe_cps", "≥ 0.95x", lambda r: r >= 0.95),
]


@dataclass
class Results:
    values: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    errors: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    extra: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    cpu_used: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # per call / per start

    def cpu(self, impl: str, metric: str, value: float) -> None:
        self.cpu_used.setdefault(impl, {}).setdefault(metric, []).append(value)

    def add(self, impl: str, metric: str, value: float) -> None:
        self.values.setdefault(impl, {}).setdefault(metric, []).append(value)

    def error(self, impl: str, metric: str, message: str) -> None:
        self.errors.setdefault(impl, {}).setdefault(metric, []).append(message)

    def note(self, impl: str, key: str, value: float) -> None:
        self.extra.setdefault(impl, {}).setdefault(key, []).append(value)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list."""
    idx = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[idx]


# --------------------------------------------------------------------------- sessions


def echo_line(rid: int) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"' % rid
        + ECHO_TEXT.encode()
        + b'"}}}\n'
    )


MODERN_META = (
    b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    b'"io.modelcontextprotocol/clientCapabilities":{}}'
)


def modern_echo_line(rid: int) -> bytes:
    """An echo call of the 2026-07-28 era: no session, the request carries its envelope."""
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"' % rid
        + ECHO_TEXT.encode()
        + b'"},'
        + MODERN_META
        + b"}}\n"
    )


def echo_ok(msg: dict[str, Any]) -> bool:
    result = msg.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        return False
    content = result.get("content") or [{}]
    return bool(content[0].get("text") == ECHO_TEXT)


async def start(impl: Impl, file: Path, cfg: Config, expect_tools: int) -> tuple[LeanClient, float]:
    """Spawn, initialize, list tools; return the client and the seconds from spawn to the full list."""
    t0 = time.perf_counter()
    client = await LeanClient.spawn(impl.argv(file), cwd=str(ROOT), env=SERVER_ENV)
    try:
        deadline = t0 + cfg.start_timeout_s
        await client.initialize(timeout=max(0.1, deadline - time.perf_counter()))
        tools = await client.list_tools(timeout=max(0.1, deadline - time.perf_counter()))
        elapsed = time.perf_counter() - t0
        if len(tools) != expect_tools:
            raise ServerError(f"tools/list returned {len(tools)} tools, expected {expect_tools}")
        client.remember_descendants()
        client.start_cpu = tree_cpu_s(descendants(client.pid))  # type: ignore[attr-defined]
        return client, elapsed
    except BaseException:
        await client.close(timeout=2.0)
        raise


async def main_session(impl: Impl, cfg: Config, res: Results) -> None:
    """Cold start, warm-up, memory, sequential latency, pipelined throughput, blobs: one process."""
    later = ["rss", "pss", "seq_p50", "seq_p99", "spaced_p50", "pipe_cps", "blob_1mb", "blob_10mb"]
    try:
        client, elapsed = await start(impl, impl.main_file, cfg, expect_tools=2)
    except (ServerError, OSError) as exc:
        for key in ["cold_start", *later]:
            res.error(impl.key, key, f"start failed: {exc}")
        return
    res.add(impl.key, "cold_start", elapsed * 1e3)
    res.cpu(impl.key, "cold_start", client.start_cpu * 1e3)  # type: ignore[attr-defined]
    got: set[str] = set()
    pids: list[int] = []

    def put(key: str, value: float) -> None:
        res.add(impl.key, key, value)
        got.add(key)

    def cpu_now() -> float:
        return tree_cpu_s(pids)

    try:
        # Warm-up: both the one-at-a-time and the pipelined paths.
        await client.drive(echo_line, cfg.warmup_calls, 1, 60.0, cfg.call_timeout_s, echo_ok)
        await client.drive(echo_line, cfg.warmup_calls, WINDOW, 60.0, cfg.call_timeout_s, echo_ok)
        pids.extend(descendants(client.pid))
        rss, pss, nproc = tree_memory_kb(client.pid)
        put("rss", rss / 1024)
        put("pss", pss / 1024)
        res.note(impl.key, "processes", nproc)

        cpu0 = cpu_now()
        drv = await client.drive(echo_line, cfg.seq_calls, 1, 60.0, cfg.call_timeout_s * 2, echo_ok)
        res.cpu(impl.key, "seq_p50", (cpu_now() - cpu0) / max(1, drv.done) * 1e6)
        if drv.bad:
            raise ServerError(f"{drv.bad} of {drv.done} sequential echo calls returned a wrong result")
        lat = sorted(drv.latencies)
        put("seq_p50", percentile(lat, 0.50) * 1e6)
        put("seq_p99", percentile(lat, 0.99) * 1e6)
        res.note(impl.key, "seq_calls", len(lat))

        # One call at a time with a pause between (an AI client's pace): each call finds the
        # processes asleep, so it pays the wake-ups a back-to-back loop hides.
        spaced: list[float] = []
        for _ in range(cfg.spaced_calls):
            await asyncio.sleep(SPACING_MS / 1000)
            drv = await client.drive(echo_line, 1, 1, 60.0, cfg.call_timeout_s, echo_ok)
            if drv.bad:
                raise ServerError("a spaced echo call returned a wrong result")
            spaced.extend(drv.latencies)
        put("spaced_p50", statistics.median(spaced) * 1e6)

        cpu0 = cpu_now()
        drv = await client.drive(
            echo_line, cfg.pipe_calls, WINDOW, cfg.pipe_budget_s, cfg.call_timeout_s * 2, echo_ok
        )
        res.cpu(impl.key, "pipe_cps", (cpu_now() - cpu0) / max(1, drv.done) * 1e6)
        if drv.bad:
            raise ServerError(f"{drv.bad} of {drv.done} pipelined echo calls returned a wrong result")
        put("pipe_cps", drv.done / (drv.last_recv - drv.first_send))
        res.note(impl.key, "pipe_calls", drv.done)

        for key, size in (("blob_1mb", MB), ("blob_10mb", 10 * MB)):
            times = []
            cpu0 = cpu_now()
            for _ in range(cfg.blob_calls):
                t0 = time.perf_counter()
                result = await client.call_tool("blob", {"n": size}, timeout=cfg.call_timeout_s)
                times.append(time.perf_counter() - t0)
                text = (result.get("content") or [{}])[0].get("text", "")
                if result.get("isError") or len(text) != size:
                    raise ServerError(
                        f"blob({size}) returned {len(text)} characters (isError={result.get('isError')})"
                    )
            res.cpu(impl.key, key, (cpu_now() - cpu0) / cfg.blob_calls * 1e3)
            put(key, statistics.median(times) * 1e3)
    except ServerError as exc:
        for key in later:
            if key not in got:
                res.error(impl.key, key, str(exc))
    finally:
        await client.close()


async def modern_session(impl: Impl, cfg: Config, res: Results) -> None:
    """The 2026-07-28 era on stdio: no initialize, every request carries the era's `_meta`;
    warm-up, then sequential latency and pipelined throughput as in the main session."""
    keys = [key for _, key, _, _ in MODERN_PAIRS]
    try:
        client = await LeanClient.spawn(impl.argv(impl.main_file), cwd=str(ROOT), env=SERVER_ENV)
    except OSError as exc:
        for key in keys:
            res.error(impl.key, key, f"start failed: {exc}")
        return
    got: set[str] = set()
    try:
        meta = orjson.loads(b"{" + MODERN_META + b"}")
        listed = await client.request("tools/list", meta, timeout=cfg.start_timeout_s)
        if len(listed.get("tools", [])) != 2:
            raise ServerError(f"modern tools/list returned {len(listed.get('tools', []))} tools")
        await client.drive(modern_echo_line, cfg.warmup_calls, 1, 60.0, cfg.call_timeout_s, echo_ok)
        await client.drive(modern_echo_line, cfg.warmup_calls, WINDOW, 60.0, cfg.call_timeout_s, echo_ok)
        pids = descendants(client.pid)
        cpu0 = tree_cpu_s(pids)
        drv = await client.drive(modern_echo_line, cfg.seq_calls, 1, 60.0, cfg.call_timeout_s * 2, echo_ok)
        res.cpu(impl.key, "modern_seq_p50", (tree_cpu_s(pids) - cpu0) / max(1, drv.done) * 1e6)
        if drv.bad:
            raise ServerError(f"{drv.bad} of {drv.done} modern sequential echo calls returned a wrong result")
        res.add(impl.key, "modern_seq_p50", percentile(sorted(drv.latencies), 0.50) * 1e6)
        got.add("modern_seq_p50")
        cpu0 = tree_cpu_s(pids)
        drv = await client.drive(
            modern_echo_line, cfg.pipe_calls, WINDOW, cfg.pipe_budget_s, cfg.call_timeout_s * 2, echo_ok
        )
        res.cpu(impl.key, "modern_pipe_cps", (tree_cpu_s(pids) - cpu0) / max(1, drv.done) * 1e6)
        if drv.bad:
            raise ServerError(f"{drv.bad} of {drv.done} modern pipelined echo calls returned a wrong result")
        res.add(impl.key, "modern_pipe_cps", drv.done / (drv.last_recv - drv.first_send))
    except ServerError as exc:
        for key in keys:
            if key not in got:
                res.error(impl.key, key, str(exc))
    finally:
        await client.close()


async def many_session(impl: Impl, cfg: Config, res: Results) -> None:
    try:
        client, elapsed = await start(impl, impl.many_file, cfg, expect_tools=cfg.many_count)
    except (ServerError, OSError) as exc:
        res.error(impl.key, "many_start", f"start failed: {exc}")
        return
    res.add(impl.key, "many_start", elapsed * 1e3)
    res.cpu(impl.key, "many_start", client.start_cpu * 1e3)  # type: ignore[attr-defined]
    await client.close()


async def bounded(coro: Any, impl: Impl, keys: list[str], cfg: Config, res: Results) -> None:
    try:
        await asyncio.wait_for(coro, cfg.session_timeout_s)
    except TimeoutError:
        for key in keys:
            res.error(impl.key, key, f"session exceeded {cfg.session_timeout_s:g} s")


async def prewarm(impls: list[Impl], cfg: Config) -> None:
    """Start each server once, unmeasured, so bytecode caches and the page cache are warm."""
    for impl in impls:
        for file, n in ((impl.main_file, 2), (impl.many_file, cfg.many_count)):
            try:
                client, _ = await start(impl, file, cfg, expect_tools=n)
                await client.close()
            except (ServerError, OSError) as exc:
                log(f"  prewarm {impl.label} {file.name}: {exc}")


async def run_all(impls: list[Impl], floor: Impl, cfg: Config) -> Results:
    """Each repetition: the implementations back to back (the order rotates), then the floor."""
    res = Results()
    log(f"prewarming ({', '.join(i.label for i in [*impls, floor])})")
    await prewarm([*impls, floor], cfg)
    main_keys = [
        "cold_start",
        "rss",
        "pss",
        "seq_p50",
        "seq_p99",
        "spaced_p50",
        "pipe_cps",
        "blob_1mb",
        "blob_10mb",
    ]
    modern_keys = [key for _, key, _, _ in MODERN_PAIRS]
    for rep in range(cfg.reps):
        turn = rep % len(impls)
        order = [*impls[turn:], *impls[:turn], floor]
        for impl in order:
            log(f"rep {rep + 1}/{cfg.reps}: {impl.label} main session")
            await bounded(main_session(impl, cfg, res), impl, main_keys, cfg, res)
            if impl is not floor:
                log(f"rep {rep + 1}/{cfg.reps}: {impl.label} 2026-07-28 session")
                await bounded(modern_session(impl, cfg, res), impl, modern_keys, cfg, res)
        for impl in order:
            log(f"rep {rep + 1}/{cfg.reps}: {impl.label} {cfg.many_count}-tool start")
            await bounded(many_session(impl, cfg, res), impl, ["many_start"], cfg, res)
    return res


# --------------------------------------------------------------------------- report


def fmt(value: float, digits: int) -> str:
    return f"{value:,.{digits}f}"


def median_of(res: Results, impl: Impl, key: str) -> float | None:
    vals = res.values.get(impl.key, {}).get(key, [])
    return statistics.median(vals) if vals else None


def ratio_text(a: float | None, b: float | None) -> str:
    if a is None or b is None or b <= 0:
        return "-"
    ratio = a / b
    return f"{ratio:.2f}x" if ratio < 100 else f"{ratio:,.0f}x"


def value_cell(res: Results, impl: Impl, key: str, digits: int, notes: list[str]) -> str:
    """The median of one cell (with its error count), collecting the errors into `notes`."""
    vals = res.values.get(impl.key, {}).get(key, [])
    errs = res.errors.get(impl.key, {}).get(key, [])
    for err in errs:
        note = f"{impl.label}: {err}"
        if note not in notes:
            notes.append(note)
    if not vals:
        return "ERROR" if errs else "-"
    cell = fmt(statistics.median(vals), digits)
    return cell + (f" ({len(errs)} err)" if errs else "")


def table(res: Results, ours: Impl, peers: list[Impl], floor: Impl) -> tuple[str, list[str]]:
    """One row per metric: every side, the ratio to each peer (the first peer's is the one the
    target applies to), the floor and the CPU per call of every side."""
    reference, others = peers[0], peers[1:]
    sides = [ours, *peers]
    head = (
        f"| metric | {' | '.join(i.label for i in sides)} | ratio vs {reference.label} "
        "| target | pass/fail | "
        + "".join(f"ratio vs {i.label} | " for i in others)
        + f"floor | {ours.label} / floor | CPU: {' / '.join(i.label for i in [*sides, floor])} |\n"
        + "|---|"
        + "---:|" * len(sides)
        + "---:|---|---|"
        + "---:|" * len(others)
        + "---:|---:|---:|\n"
    )
    rows = []
    notes: list[str] = []
    for m in METRICS:
        cells = [value_cell(res, impl, m.key, m.digits, notes) for impl in [*sides, floor]]
        a, b, f = (median_of(res, i, m.key) for i in (ours, reference, floor))
        if a is not None and b is not None and b > 0:
            verdict = ("PASS" if m.check(a / b) else "FAIL") if m.check else "info"
        else:
            verdict = "ERROR" if m.check else "info"
        cpu = "-"
        if m.cpu_unit:
            parts = []
            for impl in [*sides, floor]:
                used = res.cpu_used.get(impl.key, {}).get(m.key, [])
                digits = 0 if m.cpu_unit == "µs/call" else 1
                parts.append(fmt(statistics.median(used), digits) if used else "-")
            cpu = f"{' / '.join(parts)} {m.cpu_unit}"
        rows.append(
            f"| {m.name} ({m.unit}) | {' | '.join(cells[:-1])} | {ratio_text(a, b)} "
            f"| {m.target} | {verdict} | "
            + "".join(f"{ratio_text(a, median_of(res, i, m.key))} | " for i in others)
            + f"{cells[-1]} | {ratio_text(a, f)} | {cpu} |"
        )
    return head + "\n".join(rows) + "\n", notes


def modern_table(res: Results, sides: list[Impl]) -> tuple[str, list[str]]:
    """Each side's 2026-07-28 figures beside its 2025-11-25 session's; the target applies to
    the first side (protomcp): the era costs at most 5%."""
    lines = [
        "| implementation | metric | 2025-11-25 session | 2026-07-28 (no session) | 2026-07-28 / 2025-11-25 "
        "| target | pass/fail | per repetition: min / median / max | CPU: session / 2026-07-28 |",
        "|---|---|---:|---:|---:|---|---|---:|---:|",
    ]
    notes: list[str] = []
    for n, impl in enumerate(sides):
        for m, key, target, check in MODERN_PAIRS:
            old = value_cell(res, impl, m.key, m.digits, [])
            new = value_cell(res, impl, key, m.digits, notes)
            a, b = median_of(res, impl, key), median_of(res, impl, m.key)
            if n:
                target, verdict = "-", "info"
            elif a is None or b is None or b <= 0:
                verdict = "ERROR"
            else:
                verdict = "PASS" if check(a / b) else "FAIL"
            mine, theirs = (
                res.values.get(impl.key, {}).get(key, []),
                res.values.get(impl.key, {}).get(m.key, []),
            )
            # paired by repetition only when every repetition measured both
            pairs = zip(mine, theirs, strict=True) if len(mine) == len(theirs) else iter(())
            ratios = sorted(x / y for x, y in pairs if y > 0)
            spread = (
                f"{ratios[0]:.2f}x / {statistics.median(ratios):.2f}x / {ratios[-1]:.2f}x" if ratios else "-"
            )
            used = [res.cpu_used.get(impl.key, {}).get(k, []) for k in (m.key, key)]
            cpu = " / ".join(fmt(statistics.median(u), 0) if u else "-" for u in used) + f" {m.cpu_unit}"
            lines.append(
                f"| {impl.label} | {m.name} ({m.unit}) | {old} | {new} | {ratio_text(a, b)} "
                f"| {target} | {verdict} | {spread} | {cpu} |"
            )
    return "\n".join(lines) + "\n", notes


def paired_ratio_ranges(res: Results, ours: Impl, theirs: Impl) -> str:
    """Ratio of each repetition's pair (same repetition, measured one after the other): min / median / max."""
    lines = ["| metric | reps | min | median | max |", "|---|---:|---:|---:|---:|"]
    for m in METRICS:
        a = res.values.get(ours.key, {}).get(m.key, [])
        b = res.values.get(theirs.key, {}).get(m.key, [])
        if not a or len(a) != len(b):
            continue
        ratios = sorted(x / y for x, y in zip(a, b, strict=True) if y > 0)
        if ratios:
            mid = statistics.median(ratios)
            lines.append(f"| {m.name} | {len(ratios)} | {ratios[0]:.2f}x | {mid:.2f}x | {ratios[-1]:.2f}x |")
    return "\n".join(lines) + "\n"


def machine_note() -> list[str]:
    model = "unknown"
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break

    def version(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return [
        f"nproc: {usable} (os.cpu_count() = {os.cpu_count()})",
        f"CPU: {model}",
        f"OS: {platform.system()} {platform.release()}",
        f"Python: {platform.python_version()} ({sys.executable})",
        f"mcp: {version('mcp')}; fastmcp: {version('fastmcp')}; protomcp: {version('protomcp-tools')}; "
        f"orjson: {version('orjson')}",
        "load average at start / end: {} / {}",
    ]


def counts_note(res: Results, impls: list[Impl]) -> list[str]:
    out = []
    for impl in impls:
        ex = res.extra.get(impl.key, {})

        def med(key: str, ex: dict[str, list[float]] = ex) -> str:
            return f"{statistics.median(ex[key]):,.0f}" if ex.get(key) else "-"

        out.append(
            f"{impl.label}: `{impl.command_note}`; {med('processes')} process(es) in the tree; "
            f"{med('seq_calls')} sequential and {med('pipe_calls')} pipelined calls per repetition (median)"
        )
    return out


README_HEAD = """\
# Benchmarks: protomcp vs the official MCP Python SDK and FastMCP

A reproducible comparison of the protomcp host against the official MCP Python SDK server
(`mcp.server.mcpserver.MCPServer`) and FastMCP (`fastmcp.FastMCP`), all serving the same tools
over stdio (and, in `http_bench.py` and `public_shapes.py`, over Streamable HTTP).

## How to run

```
pip install -e '.[bench]'                        # protomcp + the official `mcp` SDK + FastMCP
python benchmarks/run.py                         # full run, prints the tables
python benchmarks/run.py --quick                 # shorter run (3 repetitions, fewer calls)
python benchmarks/run.py --reps 7 --out benchmarks/README.md   # rewrite this file
python benchmarks/run.py --self-test --quick     # SDK in both first columns: ratios ≈ 1 validate the harness
python benchmarks/http_bench.py --out benchmarks/README.md     # Streamable HTTP, both eras
python benchmarks/public_shapes.py --out benchmarks/README.md  # the three published shapes (60 s sustained)
python benchmarks/public_shapes.py --quick --duration 10       # the same, short
```

FastMCP is pinned in the `bench` extra (`fastmcp==4.2.3`); without it the scripts measure the
other sides and say FastMCP was left out.

Files:
- `tools_protomcp.py` / `tools_sdk.py` / `tools_fastmcp.py` — the same two tools,
  `echo(text) -> str` and `blob(n) -> str` (n x "x"), for protomcp
  (`protomcp run benchmarks/tools_protomcp.py`), the SDK (`python benchmarks/tools_sdk.py`) and
  FastMCP (`python benchmarks/tools_fastmcp.py`, banner off). The SDK tools use
  `structured_output=False` and the FastMCP tools `output_schema=None`, so every side answers
  with the same single text block (no duplicate `structuredContent`).
- `tools_sdk_http.py` / `tools_fastmcp_http.py` — the SDK's and FastMCP's Streamable HTTP apps
  under uvicorn on a free loopback port (Nagle off, as protomcp's own socket).
- `gen_tools.py` — writes the 1,000-tool files (`tool_0000(x: int) -> int` … `tool_0999`) in
  the three flavours; `run.py` generates them into a temporary directory at each run.
- `lean_client.py` — a minimal raw JSON-RPC client over pipes (asyncio subprocess protocol +
  orjson, newline-delimited, id correlation with any number of requests in flight). It sends
  the next request straight from the data callback, so the client is not the bottleneck.
  Servers run in their own process group, which is killed (with every descendant seen) when a
  session ends.
- `run.py` — the harness.
- `http_bench.py` — Streamable HTTP: sequential latency, 50 and 500 concurrent sessions, memory
  per idle session, in the 2025-11-25 and the 2026-07-28 era.
- `public_shapes.py` — the three shapes MCP servers publish, over Streamable HTTP, using
  `http_bench.py`'s servers and clients (see Method).
- `paired.py` — paired runs of two settings of one environment variable, the same code otherwise
  (`PROTOMCP_READER loop threads`, `PROTOMCP_ENVELOPE upb python`): the per-pair ratio of
  sequential, spaced and pipelined figures, CPU per call and the tree's RSS.
- `lean_minimum.py` — the least CPU a call can cost with validation and Envelope framing at both
  ends (those steps alone, in one process, no I/O), beside the floor's own per-call work.

## Method

The machine is small and shared, so absolute numbers are noisy; what matters is the
**ratio protomcp / SDK** (and **protomcp / FastMCP**) from one interleaved run. Every repetition
runs the implementations back to back (the order rotates between repetitions), so load spikes
hit every side alike. Each figure is the median over repetitions; a ratio is the ratio of two
medians (for throughput, higher is better, so its target is ≥). The targets apply to the ratio
against the SDK; the FastMCP ratio is for information. Before measuring, each server is started
once, unmeasured, to warm the bytecode and page caches. Every wait has a timeout: a side that
fails or hangs is reported as ERROR, never as a hang.

Metrics:
- **sequential echo latency p50 / p99** — after a warm-up, one `tools/call echo` at a time;
  round trip from writing the request to parsing its response, percentile within the run.
- **echo latency, 20 ms between calls** — the same round trip, one call at a time with a 20 ms
  pause before each (an AI client's pace rather than a loop's): each call finds the processes
  asleep and pays the wake-ups that back-to-back calls hide; median of the calls.
- **pipelined echo throughput** — `tools/call echo` with 64 requests in flight (a new request
  is sent as soon as a response arrives), up to a call count or a time budget per
  repetition, whichever comes first; calls/s = completed calls / (last response - first send).
- **2026-07-28 era on stdio** (a second table) — every side once more per repetition in a
  process of its own, with no `initialize`: every request carries the era's `_meta`
  (`io.modelcontextprotocol/protocolVersion` = `2026-07-28` and `clientCapabilities`), the
  first one a `tools/list`. Sequential latency p50 and pipelined throughput as above, with their
  CPU per call, beside the same side's 2025-11-25 session (whose `initialize` asks for
  2025-11-25), and the ratio of each repetition's pair. protomcp's target: the era costs at
  most 5% (latency ≤ 1.05x, throughput ≥ 0.95x of the session's).
- **cold start** — from spawning the server process to the response of the first `tools/list`
  (after `initialize` and `notifications/initialized`).
- **1 MB / 10 MB result time** — `tools/call blob` with n = 10^6 / 10^7: from the request to the
  fully received and parsed response (median of a few calls).
- **1,000-tool file start** — as cold start, with a file of 1,000 tools; the full list must
  arrive (following `nextCursor` if the server paginates).
- **memory** — after warm-up, the sum of VmRSS (`/proc/<pid>/status`) over the server process
  and all its descendants (protomcp runs a host and a tool process; the SDK one process). RSS
  counts shared pages once per process; the PSS row (`/proc/<pid>/smaps_rollup`) splits them,
  and is shown for information.
- **floor** (a column, every row) — the same measurements through `floor_relay.py` →
  `floor_echo.py`: two Python processes that relay and answer without any work (no
  validation, no protobuf, no supervision; for the 1,000-tool row the echo process lists
  1,000 tools of the same shape). It is the shape of protomcp (client → host → tool
  process) at zero cost, so it shows what any two-process design reaches on the machine of
  the run; protomcp's own overhead is the gap above it (the "/ floor" column). The floor
  runs after the implementations in every repetition.
- **CPU** (a column) — user + system CPU time (`/proc/<pid>/stat`) of the server's whole
  process tree (host and tool process), divided by the calls made: per call for the echo
  rows, per blob call for the result rows, and the tree's CPU from spawn to the first
  complete `tools/list` for the start rows. Unlike wall-clock figures it barely moves when
  other work shares the machine, so a regression shows here first.
- Servers run with bytecode caching on (`PYTHONDONTWRITEBYTECODE` removed from their
  environment), as on a user's machine.

Public shapes (`public_shapes.py`): the figures MCP servers usually publish, for protomcp, the
SDK and FastMCP over Streamable HTTP, each in a 2025-11-25 session and in the 2026-07-28 era
(where the side serves it; a side that does not shows ERROR and the reason under the table).
Each shape starts a fresh server; repetitions (`--reps`, default 1) rotate the sides.
- **(a) one sequential client** — one keep-alive connection (a blocking socket, as in
  `http_bench.py`), `tools/call echo` one at a time for 5 s (`--budget`; `--quick` 1 s) after
  50 warm-up calls: calls/s and p50.
- **(b) 50 concurrent clients, server on one core** — the server started under
  `taskset -c 0` (its tool process inherits the mask), the benchmark's clients (one asyncio
  process, 50 keep-alive connections, each calling in a loop) on CPU 1; 1 s of warm-up, then
  5 s: calls/s, p50 and p99. Without two usable cores or `taskset` it runs unpinned and says so.
- **(c) sustained hello-world** — 50 clients calling `echo` for 60 s (`--duration`) on an
  unpinned server: calls/s, p99, errors (a failed or timed-out call is counted and its
  connection reopened), and the RSS of the server's process tree once the sessions are open
  and at the end.

Reload latency of `protomcp dev` (save → `list_changed`) is measured separately:
`python benchmarks/reload.py` (see the end of this page).
"""


def render_readme(
    table_md: str, modern_md: str, notes: list[str], ranges: str, machine: list[str], when: str, cfg: Config
) -> str:
    busy = os.getloadavg()[0] >= 1.0
    shared = (
        " The machine was shared with other work (see the load average): wall-clock"
        " figures are noisy; the CPU column and the ratios are the steadier guides."
        if busy
        else ""
    )
    parts = [
        README_HEAD,
        "\n## Results\n\n",
        f"Run: {when} — {cfg.reps} repetition(s), interleaved.{shared}\n\n",
    ]
    parts.append("Machine:\n" + "".join(f"- {line}\n" for line in machine) + "\n")
    parts.append(table_md)
    parts.append("\nThe 2026-07-28 era on stdio, beside each side's 2025-11-25 session:\n\n" + modern_md)
    if notes:
        parts.append("\nErrors:\n" + "".join(f"- {n}\n" for n in notes))
    parts.append("\nRatio per repetition (each pair measured back to back):\n\n" + ranges)
    return "".join(parts)


# --------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(
        description="protomcp vs the official MCP SDK and FastMCP (ratios, interleaved)."
    )
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 5, --quick 3)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and calls")
    parser.add_argument("--out", type=Path, default=None, help="write a README (markdown) with the results")
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="run the SDK in both columns to validate the harness (ratios ≈ 1)",
    )
    args = parser.parse_args()
    cfg = make_config(args)

    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="protomcp-bench-") as tmp:
        many_ours, many_sdk, many_fastmcp = write_many_tool_files(Path(tmp), cfg.many_count)
        sdk = Impl(
            "sdk", "MCP SDK", sdk_argv, HERE / "tools_sdk.py", many_sdk, "python benchmarks/tools_sdk.py"
        )
        peers = [sdk]
        if fastmcp_installed():
            peers.append(
                Impl(
                    "fastmcp",
                    "FastMCP",
                    sdk_argv,
                    HERE / "tools_fastmcp.py",
                    many_fastmcp,
                    "python benchmarks/tools_fastmcp.py",
                )
            )
        else:
            log("fastmcp is not installed (pip install -e '.[bench]'): its column is left out")
        if args.self_test:
            ours = Impl(
                "ours",
                "SDK (as A)",
                sdk_argv,
                HERE / "tools_sdk.py",
                many_sdk,
                "python benchmarks/tools_sdk.py",
            )
        else:
            argv, note = protomcp_argv()
            ours = Impl("ours", "protomcp", argv, HERE / "tools_protomcp.py", many_ours, f"{note} FILE")
        floor = Impl(
            "floor",
            "floor",
            floor_argv,
            Path("2"),
            Path(str(cfg.many_count)),
            "python benchmarks/floor_relay.py N",
        )
        when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        try:
            res = asyncio.run(run_all([ours, *peers], floor, cfg))
        finally:
            kill_all_live_groups()
    load_end = os.getloadavg()

    table_md, notes = table(res, ours, peers, floor)
    modern_md, modern_notes = modern_table(res, [ours, *peers])
    notes += [n for n in modern_notes if n not in notes]
    if not fastmcp_installed():
        notes.append("FastMCP: not installed, not measured")
    machine = machine_note()
    machine[-1] = machine[-1].format(
        " ".join(f"{x:.2f}" for x in load_start), " ".join(f"{x:.2f}" for x in load_end)
    )
    machine.extend(counts_note(res, [ours, *peers, floor]))
    ranges = "".join(
        f"\n{ours.label} / {peer.label}:\n\n{paired_ratio_ranges(res, ours, peer)}" for peer in peers
    )
    print()
    print(table_md)
    print("2026-07-28 era on stdio:\n\n" + modern_md)
    for n in notes:
        print(f"error: {n}")
    print("\nRatio per repetition:\n" + ranges)
    if args.out is not None:
        readme = render_readme(table_md, modern_md, notes, ranges, machine, when, cfg)
        old = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        args.out.write_text(keep_other_sections(readme, old), encoding="utf-8")
        log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
