"""The shipped nginx site with its TLS lines (examples/deploy/nginx-protomcp.conf, as
docs/guide/remote-clients.md says to use it) in front of two hosts on one Redis: the SDK's
client signs in over https through nginx and calls a tool, whichever host each request reaches."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.oauth.conftest import APP_ID, APP_SECRET, Bed, MemoryStorage, call_add, host_args, sdk_auth
from tests.oauth.documents import make_certificate
from tests.support.cluster import EXAMPLE, NGINX, stop, wait_port
from tests.support.http import HttpHost
from tests.support.idp import IdentityProvider, client
from tests.support.installed import missing
from tests.support.ports import free_port

SEED = "X-Mcp-Session-Seed"  # as the site's comments run the hosts: a session's id hashes to its host
TLS_LINES = ("listen 443 ssl;", "ssl_certificate ", "ssl_certificate_key ")


def tls_site(port: int, upstreams: list[str], cert: Path, key: Path) -> str:
    """The shipped site as its comments say to serve TLS: the commented lines in place of
    `listen 80;`, with the test's port, certificate and upstreams."""
    lines = []
    for line in EXAMPLE.read_text().splitlines():
        stripped = line.strip().removeprefix("#").strip()
        if line.strip() == "listen 80;":
            continue
        if line.strip().startswith("#") and stripped.startswith(TLS_LINES):
            line = "    " + stripped
        lines.append(line)
    site = "\n".join(lines)
    assert "listen 443 ssl;" in site and "ssl_certificate_key" in site  # the comments are there
    site = site.replace("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;")
    site = site.replace("/etc/letsencrypt/live/mcp.example.com/fullchain.pem", str(cert))
    site = site.replace("/etc/letsencrypt/live/mcp.example.com/privkey.pem", str(key))
    examples = "".join(f"    server 10.0.0.{n}:8000 max_fails=1 fail_timeout=10s;\n" for n in (11, 12))
    site = site.replace(
        examples, "".join(f"    server {u} max_fails=1 fail_timeout=10s;\n" for u in upstreams)
    )
    return site.replace("server_name mcp.example.com;", "server_name localhost;")


@pytest.fixture
def nginx_tls(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    if not os.access(NGINX, os.X_OK):
        missing("nginx is not installed (Debian: apt-get install nginx)")
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        stop(proc, signal.SIGQUIT)


async def test_a_sign_in_over_tls_through_the_shipped_nginx_site(
    tmp_path: Path, redis_url: str, nginx_tls: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = make_certificate(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the test's clients trust the test's certificate
    port = free_port()
    public_url = f"https://localhost:{port}"
    hosts: list[HttpHost] = []
    with IdentityProvider([client(APP_ID, APP_SECRET, [public_url + "/oauth/callback"])]) as idp:
        try:
            for _ in range(2):
                hosts.append(
                    HttpHost(
                        *host_args(idp, public_url, "--store", redis_url, "--session-id-header", SEED),
                        env={"APP_ID": APP_ID, "APP_SECRET": APP_SECRET},
                        port=free_port(),
                    )
                )
            upstreams = [host.url.removeprefix("http://").removesuffix("/mcp") for host in hosts]
            folder = tmp_path / "nginx"
            for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
                (folder / sub).mkdir(parents=True, exist_ok=True)
            site = tls_site(port, upstreams, cert, key)
            (folder / "nginx.conf").write_text(
                f"daemon off;\nmaster_process off;\npid {folder}/nginx.pid;\nerror_log {folder}/error.log;\n"
                "events { worker_connections 1024; }\nhttp {\n"
                f"  access_log off;\n  client_body_temp_path {folder}/body; proxy_temp_path {folder}/proxy;\n"
                f"  fastcgi_temp_path {folder}/fastcgi; uwsgi_temp_path {folder}/uwsgi;\n"
                f"  scgi_temp_path {folder}/scgi;\n{site}\n}}\n"
            )
            proc = subprocess.Popen(
                [NGINX, "-p", str(folder), "-c", str(folder / "nginx.conf"), "-e", str(folder / "error.log")],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            nginx_tls.append(proc)
            wait_port(port, proc)

            bed = Bed(idp, hosts[0], public_url, start_host=lambda *more: hosts[0])
            storage = MemoryStorage()
            auth = sdk_auth(bed, storage)
            for _ in range(3):
                result = await call_add(bed, auth)
                assert result.is_error is False and result.content[0].text == "5"
            assert storage.tokens is not None and storage.tokens.refresh_token
        finally:
            for host in hosts:
                host.terminate()
