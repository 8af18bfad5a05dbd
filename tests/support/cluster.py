"""Real redis-server and nginx for the scale-out tests: each started on a free loopback port
with its own temporary config and directories (no system service), stopped by the fixture."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.support.installed import missing
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]

REDIS = shutil.which("redis-server") or "/usr/bin/redis-server"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
EXAMPLE = ROOT / "examples" / "deploy" / "nginx-protomcp.conf"


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """Until something accepts on 127.0.0.1:port (polled: another process opens it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.02)
    raise AssertionError(f"nothing listens on port {port} after {timeout}s")


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_redis(port: int, folder: Path) -> subprocess.Popen[bytes]:
    """redis-server on 127.0.0.1:port without persistence, accepting connections."""
    folder.mkdir(exist_ok=True)
    proc = subprocess.Popen(
        [
            REDIS,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(folder),
            "--daemonize",
            "no",
            "--logfile",
            str(folder / "redis.log"),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port, proc)
    except AssertionError:
        stop(proc)
        raise
    return proc


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A redis-server of its own (no persistence), as redis://127.0.0.1:PORT/0."""
    if not os.access(REDIS, os.X_OK):
        missing("redis-server is not installed (Debian: apt-get install redis-server)")
    port = free_port()
    proc = start_redis(port, tmp_path / "redis")
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(proc)


class Nginx:
    """nginx in the foreground with its own prefix, serving the example config (the upstream
    addresses and the public port replaced by the test's), logging each request's upstream."""

    def __init__(self, folder: Path, upstreams: list[str], port: int | None = None) -> None:
        self.folder = folder
        self.port = port or free_port()  # (given: the hosts behind it were told their public URL)
        for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        site = EXAMPLE.read_text()
        servers = "".join(f"    server {u} max_fails=1 fail_timeout=10s;\n" for u in upstreams)
        site = site.replace(
            "    server 10.0.0.11:8000 max_fails=1 fail_timeout=10s;\n"
            "    server 10.0.0.12:8000 max_fails=1 fail_timeout=10s;\n",
            servers,
        )
        site = site.replace("listen 80;", f"listen 127.0.0.1:{self.port};")
        site = site.replace("server_name mcp.example.com;", "server_name 127.0.0.1;")
        self.log = folder / "access.log"
        (folder / "nginx.conf").write_text(
            f"daemon off;\nmaster_process off;\npid {folder}/nginx.pid;\nerror_log {folder}/error.log;\n"
            "events { worker_connections 1024; }\n"
            "http {\n"
            "  log_format upstreams '$upstream_addr $http_mcp_method $http_mcp_session_id $status';\n"
            f"  access_log {self.log} upstreams;\n"
            f"  client_body_temp_path {folder}/body; proxy_temp_path {folder}/proxy;\n"
            f"  fastcgi_temp_path {folder}/fastcgi; uwsgi_temp_path {folder}/uwsgi;\n"
            f"  scgi_temp_path {folder}/scgi;\n"
            f"{site}\n}}\n"
        )
        self.proc = subprocess.Popen(
            [NGINX, "-p", str(folder), "-c", str(folder / "nginx.conf"), "-e", str(folder / "error.log")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        wait_port(self.port, self.proc)
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def requests(self) -> list[list[str]]:
        """The access log so far: [upstream, mcp-method, session id, status] per request."""
        if not self.log.exists():
            return []
        return [line.split() for line in self.log.read_text().splitlines() if line]

    async def logged(self, before: int, method: str, count: int, timeout: float = 10.0) -> list[list[str]]:
        """The requests of `method` in the access log after its first `before` lines, once `count`
        of them are there, or those there are after `timeout`: nginx logs a request after its
        answer went out, so a client can be a step ahead of the log."""
        found: list[list[str]] = []
        with anyio.move_on_after(timeout):
            while len(found := [r for r in self.requests()[before:] if r[1] == method]) < count:
                await anyio.sleep(0.02)
        return found

    def stop(self) -> None:
        stop(self.proc, signal.SIGQUIT)


@pytest.fixture
def nginx(tmp_path: Path) -> Iterator[type[Nginx]]:
    """Start nginx in front of given upstreams: nginx(["127.0.0.1:PORT", ...], port=None) -> Nginx."""
    if not os.access(NGINX, os.X_OK):
        missing("nginx is not installed (Debian: apt-get install nginx)")
    started: list[Nginx] = []

    def start(upstreams: list[str], port: int | None = None) -> Nginx:
        server = Nginx(tmp_path / f"nginx{len(started)}", upstreams, port)
        started.append(server)
        return server

    yield start  # type: ignore[misc]
    for server in started:
        server.stop()
