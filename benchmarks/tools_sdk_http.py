"""tools_sdk.py's server over Streamable HTTP: the official SDK's app under uvicorn.

    python benchmarks/tools_sdk_http.py        # prints "at http://127.0.0.1:PORT/mcp" on stderr

It listens on a free loopback port (bound here, so the harness learns it from stderr). The
socket is made as protomcp makes its own (IPPROTO_TCP named, so asyncio disables Nagle on
accepted connections); with a plain socket every response would wait ~40 ms for a delayed ACK.
"""

import socket
import sys

import uvicorn
from tools_sdk import server

if __name__ == "__main__":
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    app = server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    print(f"sdk: at http://127.0.0.1:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
    uvicorn.Server(config).run(sockets=[sock])
