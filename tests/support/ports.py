"""Loopback ports for servers a test starts: each picked free by the kernel, never fixed, so tests
running at once (pytest-xdist workers) do not collide."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback port nothing listens on now, for a server that must be told its port (redis,
    nginx, a host restarted on the same port); give `--port 0` to hosts that can pick their own."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
