"""An https server on a loopback port serving client ID metadata documents (and the hostile
answers a client could arrange: huge, slow, redirecting), with a certificate made for the test
and trusted through SSL_CERT_FILE, for tests/oauth/test_cimd.py and the CIMD sign-in."""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

SLOW_FOR = 15.0  # seconds a slow answer trickles (the fetcher gives up well before)

Route = Callable[[BaseHTTPRequestHandler], None]


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """(certificate, key) files for localhost and 127.0.0.1, self-signed: the certificate is
    its own CA, so SSL_CERT_FILE=certificate trusts it."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file


class DocumentServer:
    """https://localhost:PORT/..., answering each path as `routes` says (a dict: JSON served)."""

    def __init__(self, folder: Path) -> None:
        self.cert, key = make_certificate(folder)
        self.routes: dict[str, dict[str, object] | Route] = {}
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append(self.path)
                route = server.routes.get(self.path)
                if route is None:
                    self.send_error(404)
                elif callable(route):
                    route(self)
                else:
                    send_json(self, route)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert, key)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path: str, host: str = "localhost") -> str:
        return f"https://{host}:{self.port}{path}"

    def document(self, path: str, redirect_uris: list[str], **more: object) -> str:
        """Serve a valid metadata document at `path`: its URL (the client_id)."""
        url = self.url(path)
        self.routes[path] = {
            "client_id": url,
            "client_name": "Document client",
            "redirect_uris": redirect_uris,
            **more,
        }
        return url

    def __enter__(self) -> DocumentServer:
        self.thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


def send_json(handler: BaseHTTPRequestHandler, body: object, headers: dict[str, str] | None = None) -> None:
    data = json.dumps(body).encode()
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)


def huge(handler: BaseHTTPRequestHandler) -> None:
    """A document without Content-Length that never stops growing (within 1 MB)."""
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.end_headers()
    try:
        handler.wfile.write(b'{"client_name": "')
        for _ in range(1000):
            handler.wfile.write(b"x" * 1024)
    except OSError:
        pass  # the fetcher hung up, as it should


def slow(handler: BaseHTTPRequestHandler) -> None:
    """A document that trickles a byte at a time."""
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", "100")
    handler.end_headers()
    deadline = time.monotonic() + SLOW_FOR
    try:
        while time.monotonic() < deadline:
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.2)
    except OSError:
        pass


def redirect_to(location: str) -> Route:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(302)
        handler.send_header("location", location)
        handler.send_header("content-length", "0")
        handler.end_headers()

    return answer
