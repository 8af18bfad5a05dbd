"""A test authorization server's keys: a JWKS endpoint served from a thread, and the JWTs it
signs (RS256), for hosts run with `--oauth-jwks URL --oauth-issuer ISSUER`."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

ISSUER = "https://auth.example.com"


class Jwks:
    """An authorization server's JWKS endpoint, served from a thread: counts its requests and
    can be made to fail."""

    def __init__(self) -> None:
        import jwt
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.keys = {
            kid: rsa.generate_private_key(public_exponent=65537, key_size=2048) for kid in ("k1", "k2")
        }
        self.published = ["k1"]
        self.down = False
        self.requests = 0
        jwks = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                jwks.requests += 1
                if jwks.down:
                    self.send_error(503, "the JWKS is down for maintenance")
                    return
                entries = []
                for kid in jwks.published:
                    public = orjson.loads(jwt.algorithms.RSAAlgorithm.to_jwk(jwks.keys[kid].public_key()))
                    entries.append({**public, "kid": kid, "alg": "RS256", "use": "sig"})
                body = orjson.dumps({"keys": entries})
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks.json"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def token(self, audience: str, kid: str = "k1", kid_header: str | None = None, **claims: Any) -> str:
        """A token signed with key `kid`, naming `kid_header` (default: `kid`) as its key id."""
        import jwt

        now = int(time.time())
        body = {"iss": ISSUER, "aud": audience, "exp": now + 600, "iat": now, **claims}
        return jwt.encode(body, self.keys[kid], algorithm="RS256", headers={"kid": kid_header or kid})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


def serve_jwks() -> Iterator[Jwks]:
    """The body of a `jwks` fixture: a JWKS endpoint for one test."""
    server = Jwks()
    yield server
    server.close()
