"""Floor, part 1: relays stdin to floor_echo.py and its stdout back, doing nothing else.

Client → relay → echo server and back is the shape of protomcp (client → host → tool
process) with all of protomcp's work taken out: the cost of two Python processes and
their pipe hops on this machine, the floor for any two-process design. Its arguments go
to floor_echo.py (a tool count).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path


async def main() -> None:
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    class Back(asyncio.SubprocessProtocol):
        def pipe_data_received(self, fd: int, data: bytes) -> None:
            os.write(1, data)

        def process_exited(self) -> None:
            if not done.done():
                done.set_result(None)

    echo = Path(__file__).with_name("floor_echo.py")
    transport, _ = await loop.subprocess_exec(
        Back,
        sys.executable,
        str(echo),
        *sys.argv[1:],
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    to_echo = transport.get_pipe_transport(0)

    class Forward(asyncio.Protocol):
        def data_received(self, data: bytes) -> None:
            to_echo.write(data)  # type: ignore[attr-defined]

        def connection_lost(self, exc: Exception | None) -> None:
            to_echo.close()

    await loop.connect_read_pipe(Forward, os.fdopen(0, "rb", buffering=0))
    await done


if __name__ == "__main__":
    asyncio.run(main())
