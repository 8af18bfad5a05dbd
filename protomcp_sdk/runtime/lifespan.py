"""Running the tool file's ``@lifespan`` in the tool process: its start before Hello, its end
after the process's calls have drained (bounded), its yielded value as ``ctx.state``."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator

from protomcp_sdk.authoring.lifespan import LifespanSpec
from protomcp_sdk.runtime import context
from protomcp_sdk.runtime.loading import user_traceback
from protomcp_sdk.wire.env import LIFESPAN_STOP_ENV

STOP_TIMEOUT = float(os.environ.get(LIFESPAN_STOP_ENV, "") or 5.0)


class Running:
    """One started lifespan; `stop()` runs the code after its ``yield``."""

    def __init__(self, spec: LifespanSpec) -> None:
        self.spec = spec
        self._generator: AsyncIterator[object] | None = None

    async def start(self) -> str:
        """Run up to the ``yield``; return "" or the text of a load error."""
        generator = self.spec.fn()
        try:
            context.LIFESPAN_STATE.value = await anext(generator)
        except StopAsyncIteration:
            return f"@lifespan {self.spec.name!r} returned without yielding (it must `yield` once)\n"
        except BaseException as exc:  # the load fails, as an import error would
            return f"@lifespan {self.spec.name!r} failed to start:\n{user_traceback(exc)}"
        self._generator = generator
        return ""

    async def stop(self, timeout: float = STOP_TIMEOUT) -> bool:
        """Run the code after the ``yield``, within `timeout`; False (and a message on stderr)
        when it raised, yielded again or ran out of time."""
        generator, self._generator = self._generator, None
        if generator is None:
            return True
        problem = ""
        try:
            async with asyncio.timeout(timeout):
                await anext(generator)
            problem = "yielded a second time (a lifespan yields once)"
        except StopAsyncIteration:
            return True
        except TimeoutError:
            problem = f"did not finish within {timeout:g}s ({LIFESPAN_STOP_ENV})"
        except BaseException as exc:
            problem = f"raised while stopping:\n{user_traceback(exc)}"
        finally:
            context.LIFESPAN_STATE.value = None
        print(f"protomcp tool process: @lifespan {self.spec.name!r} {problem}", file=sys.stderr, flush=True)
        return False
