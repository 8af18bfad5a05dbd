"""The upstream server of the cluster matrix (tests/matrix/test_matrix_cluster.py): served over HTTP by
a protomcp host of its own, reached by every host of the cluster through `--upstream`."""

import asyncio
from pathlib import Path

from protomcp_sdk import Context, tool


@tool
async def ask_name(tag: str, ctx: Context) -> str:
    """Ask the caller's client for a name (an elicitation the upstream makes)."""
    answer = await ctx.elicit(f"Name {tag}?", {"type": "object", "properties": {"name": {"type": "string"}}})
    return f"{answer.action}:{(answer.data or {}).get('name')}"


@tool
async def hold(tag: str, path: str) -> str:
    """Write `path`.running, then answer once `path` exists (a call in flight when the upstream dies)."""
    Path(f"{path}.running").write_text(tag)
    while not Path(path).exists():
        await asyncio.sleep(0.01)
    return f"held {tag}"
