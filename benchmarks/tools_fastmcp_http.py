"""tools_fastmcp.py's server over Streamable HTTP: FastMCP's app under uvicorn.

    python benchmarks/tools_fastmcp_http.py    # prints "at http://127.0.0.1:PORT/mcp" on stderr

Served as tools_sdk_http.py serves the SDK: a free loopback port bound here on a socket made
with IPPROTO_TCP named (so asyncio disables Nagle on accepted connections), the app's
default response mode, sessions as the app keeps them.
"""

import socket
import sys

import uvicorn
from tools_fastmcp import server

if __name__ == "__main__":
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    app = server.http_app(path="/mcp")
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    print(f"fastmcp: at http://127.0.0.1:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
    uvicorn.Server(config).run(sockets=[sock])
