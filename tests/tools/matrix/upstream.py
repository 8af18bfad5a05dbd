"""The upstream server of the cluster matrix (tests/test_matrix_cluster.py): served over HTTP by
a protomcp host of its own, reached by every host of the cluster through `--upstream`."""

from protomcp_sdk import Context, tool


@tool
async def ask_name(tag: str, ctx: Context) -> str:
    """Ask the caller's client for a name (an elicitation the upstream makes)."""
    answer = await ctx.elicit(f"Name {tag}?", {"type": "object", "properties": {"name": {"type": "string"}}})
    return f"{answer.action}:{(answer.data or {}).get('name')}"
