"""The peers' benchmark files run: FastMCP's tool files answer as the other sides do (one text
block, both eras), and public_shapes.py runs its three shapes in a short mode.

FastMCP is in the bench extra, not the test extra: without it the FastMCP test skips and
public_shapes.py measures the other sides and says FastMCP was left out."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
HAVE_FASTMCP = importlib.util.find_spec("fastmcp") is not None


@pytest.fixture
def bench_path() -> Iterator[None]:
    """The benchmark scripts import their neighbours by bare name."""
    sys.path.insert(0, str(BENCH))
    try:
        yield
    finally:
        sys.path.remove(str(BENCH))


@pytest.mark.skipif(not HAVE_FASTMCP, reason="fastmcp is in the bench extra (pip install -e '.[bench]')")
async def test_fastmcp_tool_files_answer_one_text_block_in_both_eras(
    bench_path: None, tmp_path: Path
) -> None:
    from gen_tools import write_many_tool_files
    from lean_client import LeanClient

    async def session(
        file: Path, modern: bool
    ) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
        client = await LeanClient.spawn([sys.executable, str(file)], cwd=str(BENCH))
        try:
            meta = {"_meta": MODERN_META} if modern else {}
            if not modern:
                await client.initialize(timeout=60)
            tools = (await client.request("tools/list", meta or None, timeout=60))["tools"]
            if len(tools) != 2:
                return tools, {}, {}
            echo = await client.request(
                "tools/call", {"name": "echo", "arguments": {"text": "hello"}, **meta}, timeout=30
            )
            blob = await client.request(
                "tools/call", {"name": "blob", "arguments": {"n": 10}, **meta}, timeout=30
            )
            return tools, echo, blob
        finally:
            await client.close()

    for modern in (False, True):
        tools, echo, blob = await session(BENCH / "tools_fastmcp.py", modern)
        assert sorted(t["name"] for t in tools) == ["blob", "echo"]
        # The same payload as the other sides: one text block, no structuredContent copy.
        assert echo["content"] == [{"type": "text", "text": "hello"}] and "structuredContent" not in echo
        assert blob["content"] == [{"type": "text", "text": "x" * 10}] and "structuredContent" not in blob

    *_, many = write_many_tool_files(tmp_path, count=3)
    tools, _, _ = await session(many, modern=False)
    assert [t["name"] for t in tools] == ["tool_0000", "tool_0001", "tool_0002"]


def test_public_shapes_runs_every_shape_briefly(bench_path: None, tmp_path: Path) -> None:
    import public_shapes

    readme = tmp_path / "README.md"
    readme.write_text("# Benchmarks\n\n## Other\n\nkept\n", encoding="utf-8")
    sides = "protomcp,FastMCP" if HAVE_FASTMCP else "protomcp"
    text = public_shapes.main(
        ["--budget", "0.3", "--duration", "0.5", "--sides", sides, "--out", str(readme)]
    )
    for shape in public_shapes.SHAPES:
        assert shape.title in text
    rows = [line for line in text.splitlines() if line.startswith("| protomcp |")]
    assert len(rows) == 6 and all("ERROR" not in row for row in rows)  # 3 shapes x 2 eras
    if HAVE_FASTMCP:
        assert sum(line.startswith("| FastMCP |") for line in text.splitlines()) == 6
    else:
        assert "FastMCP is not installed" in text
    written = readme.read_text(encoding="utf-8")
    assert "## Other\n\nkept" in written and public_shapes.SECTION in written
