"""Generate the large tool files (protomcp, MCP SDK and FastMCP flavours) used by the benchmark.

``python benchmarks/gen_tools.py OUTDIR [--count 1000]`` writes ``many_protomcp.py``,
``many_sdk.py`` and ``many_fastmcp.py`` into OUTDIR; ``run.py`` calls
:func:`write_many_tool_files` on a temporary directory at benchmark time, so the generated
files are never committed.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def _functions(count: int, decorator: str) -> str:
    return "".join(
        f'\n\n{decorator}\ndef tool_{i:04d}(x: int) -> int:\n    """Add {i} to x."""\n    return x + {i}\n'
        for i in range(count)
    )


def protomcp_source(count: int) -> str:
    return f'"""{count} generated tools (protomcp)."""\n\nfrom protomcp_sdk import tool\n' + _functions(
        count, "@tool"
    )


def sdk_source(count: int) -> str:
    return (
        f'"""{count} generated tools (official MCP SDK, stdio)."""\n\n'
        "from mcp.server.mcpserver import MCPServer\n\n"
        'server = MCPServer("bench-many", log_level="WARNING")\n'
        + _functions(count, "@server.tool()")
        + '\n\nif __name__ == "__main__":\n    server.run()\n'
    )


def fastmcp_source(count: int) -> str:
    return (
        f'"""{count} generated tools (FastMCP, stdio)."""\n\n'
        "from fastmcp import FastMCP\n\n"
        'server = FastMCP("bench-many")\n'
        + _functions(count, "@server.tool()")
        + '\n\nif __name__ == "__main__":\n    server.run("stdio", show_banner=False, log_level="WARNING")\n'
    )


def write_many_tool_files(outdir: Path, count: int = 1000) -> tuple[Path, Path, Path]:
    """Write the three flavours into ``outdir``; return (protomcp, SDK, FastMCP file)."""
    outdir.mkdir(parents=True, exist_ok=True)
    files = (outdir / "many_protomcp.py", outdir / "many_sdk.py", outdir / "many_fastmcp.py")
    for path, source in zip(files, (protomcp_source, sdk_source, fastmcp_source), strict=True):
        path.write_text(source(count), encoding="utf-8")
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--count", type=int, default=1000)
    args = parser.parse_args()
    for path in write_many_tool_files(args.outdir, args.count):
        print(path)


if __name__ == "__main__":
    main()
