"""``@lifespan``: code that runs once in the tool process, around everything it serves.

```python
@lifespan
async def resources():
    pool = await open_pool()
    yield {"pool": pool}   # tools read it as ctx.state["pool"]
    await pool.close()     # after the process's calls have drained
```

The part before ``yield`` runs before the process says Hello to the host (so before it
serves anything; an exception there is a load error); the part after runs once the host has
let go of the process and its running calls are done, bounded by a timeout.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

Lifespan = Callable[[], AsyncIterator[object]]


@dataclass(frozen=True)
class LifespanSpec:
    name: str
    fn: Lifespan


def lifespan_spec(fn: Lifespan) -> LifespanSpec:
    """Check ``async def fn(): ... yield value ...``; raises TypeError on misuse."""
    label = getattr(fn, "__name__", repr(fn))
    if not inspect.isasyncgenfunction(fn):
        raise TypeError(
            f"@lifespan {label!r} must be an async generator: async def {label}(): ... yield state ..."
        )
    required = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if required:
        raise TypeError(f"@lifespan {label!r} must take no parameters")
    return LifespanSpec(label, fn)
