"""Tools that need the client's input over the 2026-07-28 round trip (and the legacy requests)."""

import asyncio

from protomcp_sdk import Context, prompt, resource, tool

RUNS = {"count": 0}


@tool
async def two_samples(ctx: Context) -> str:
    """Ask the client's model twice, the second question built on the first answer."""
    first = await ctx.sample("first?", max_tokens=10)
    second = await ctx.sample(f"second after {first.text}?", max_tokens=10)
    return f"{first.text}+{second.text}"


@tool
async def gather_inputs(ctx: Context) -> str:
    """Elicit, sample and list roots at once: one round of three requests."""
    name, greeting, roots = await asyncio.gather(
        ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="user_name"),
        ctx.sample("greeting?", max_tokens=10, key="greeting"),
        ctx.list_roots(key="client_roots"),
    )
    return f"{name.action}:{(name.data or {}).get('name')}|{greeting.text}|{','.join(r.uri for r in roots)}"


@tool
def sync_elicit(ctx: Context) -> str:
    """A sync tool that elicits (its worker thread waits for the retry)."""
    RUNS["count"] += 1
    answer = ctx.elicit(
        "Proceed?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}, key="confirm"
    )
    return f"run {RUNS['count']}: {answer.action} {answer.data}"


@tool
async def restartable(ctx: Context) -> str:
    """Elicits; reports how many times this process ran it (a re-run after a restart starts at 1)."""
    RUNS["count"] += 1
    step1 = await ctx.elicit(
        "Step 1?", {"type": "object", "properties": {"v": {"type": "string"}}}, key="step1"
    )
    step2 = await ctx.elicit(
        "Step 2?", {"type": "object", "properties": {"v": {"type": "string"}}}, key="step2"
    )
    return f"{step1.data['v']}-{step2.data['v']} (runs here: {RUNS['count']})"


@tool
def capabilities(ctx: Context) -> dict:
    """What the client declared for this request."""
    return ctx.client_capabilities


@tool
async def adaptive(ctx: Context) -> str:
    """Samples; elicits only when the client can."""
    if "elicitation" in ctx.client_capabilities:
        answer = await ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return f"elicited {answer.action}"
    result = await ctx.sample("name?", max_tokens=5)
    return f"sampled {result.text}"


@tool
async def needs_sampling(ctx: Context) -> str:
    """Samples and lets a missing capability escape."""
    result = await ctx.sample("hi", max_tokens=5)
    return result.text


@prompt
async def needs_context(ctx: Context) -> str:
    """A prompt that asks the user for context first."""
    answer = await ctx.elicit(
        "Context?", {"type": "object", "properties": {"context": {"type": "string"}}}, key="user_context"
    )
    return f"Use {answer.data['context']}"


@resource("test://roots")
async def roots_listing(ctx: Context) -> str:
    """A resource made from the client's roots."""
    roots = await ctx.list_roots()
    return ",".join(root.uri for root in roots)


@tool
async def ask_twice(ctx: Context) -> str:
    """Asks under one key twice: the second ask is a new question, not the first answer again."""
    schema = {"type": "object", "properties": {"v": {"type": "string"}}}
    first = await ctx.elicit("First?", schema, key="again")
    second = await ctx.elicit("Second?", schema, key="again")
    return f"{first.data['v']}-{second.data['v']}"


@tool
def after_question(ctx: Context) -> str:
    """A sync tool with a side effect after its question: counted per process."""
    answer = ctx.elicit("Go?", {"type": "object", "properties": {"v": {"type": "string"}}}, key="go")
    RUNS["after"] = RUNS.get("after", 0) + 1
    return f"{answer.data['v']} (effects here: {RUNS['after']})"


@tool
def held_thread(mark: str, ctx: Context) -> str:
    """A sync tool whose thread leaves MARK.started.<its process id> when it starts and
    MARK.<its process id> when its question ends (answered, or the call let go); answers with
    that process id."""
    import os
    from pathlib import Path

    Path(f"{mark}.started.{os.getpid()}").write_text("started")
    try:
        schema = {"type": "object", "properties": {"v": {"type": "string"}}}
        return f"{ctx.elicit('Wait?', schema, key='wait').action} in {os.getpid()}"
    finally:
        Path(f"{mark}.{os.getpid()}").write_text("released")


@tool
async def counted(log: str, ctx: Context, gate: str = "") -> str:
    """Appends "start" to LOG each time it starts running, "answered" once its question is
    answered and "done" when it ends (a run let go while it waits leaves neither); with GATE,
    it waits for that file to exist before it ends."""
    import os

    with open(log, "a") as runs:
        runs.write("start\n")
    answer = await ctx.elicit("Go?", {"type": "object", "properties": {"v": {"type": "string"}}}, key="go")
    with open(log, "a") as runs:
        runs.write("answered\n")
    while gate and not os.path.exists(gate):
        await asyncio.sleep(0.01)
    with open(log, "a") as runs:
        runs.write("done\n")
    return f"went {answer.data['v']}"
