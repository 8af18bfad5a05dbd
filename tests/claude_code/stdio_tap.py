"""A transparent wire tap for a stdio MCP server a real client starts itself (tests/
test_claude_code.py): `python stdio_tap.py LOG COMMAND...` runs COMMAND, passes stdin, stdout
and stderr through unchanged, and appends each line to LOG as JSON: ["client"|"server"|"stderr",
line]. Signals the client sends (Claude Code stops a server with SIGINT, then SIGTERM) are
passed on to COMMAND; the tap ends when COMMAND does."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from typing import IO


def main() -> None:
    log = open(sys.argv[1], "a", buffering=1)  # noqa: SIM115 - open for the tap's whole life
    lock = threading.Lock()
    server = subprocess.Popen(
        sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )

    def record(side: str, line: bytes) -> None:
        with lock:
            log.write(json.dumps([side, line.decode(errors="replace").rstrip("\n")]) + "\n")

    def pump(side: str, source: IO[bytes], sink: IO[bytes]) -> None:
        for line in source:
            record(side, line)
            try:
                sink.write(line)
                sink.flush()
            except (BrokenPipeError, ValueError):
                pass
        if side == "client":
            sink.close()  # the client closed stdin: so does the server's

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _frame: server.send_signal(signum))
    assert server.stdin and server.stdout and server.stderr
    threading.Thread(target=pump, args=("client", sys.stdin.buffer, server.stdin), daemon=True).start()
    errors = threading.Thread(target=pump, args=("stderr", server.stderr, sys.stderr.buffer))
    errors.start()
    pump("server", server.stdout, sys.stdout.buffer)
    errors.join()
    sys.exit(server.wait())


if __name__ == "__main__":
    main()
