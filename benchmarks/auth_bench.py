"""What a JWT access token costs per call: the same protomcp host, tool and clients, once with a
shared bearer token and once verifying a signed JWT on every request (issue 39's target: at
most 10% fewer calls/s).

    python benchmarks/auth_bench.py [--reps 3] [--seconds 5] [--sessions 50]

Three hosts serve benchmarks/tools_protomcp.py over Streamable HTTP on free loopback ports:
- bearer: `--auth-token-env` (a constant-time comparison of the header with a secret);
- jwt ES256 / jwt RS256: `--oauth-jwks FILE --oauth-issuer URL` (resource-server mode, as for
  the tokens protomcp's own authorization server issues: signature, iss, aud, exp checked on
  every request by PyJWT with `cryptography`; EC P-256 is that server's default key type).
Each is driven by http_bench.py's client: `--sessions` keep-alive connections calling
`tools/call echo` in a loop for `--seconds`, in the 2025-11-25 era (a session: the token is
still checked on every request) and in the 2026-07-28 era (stateless: every request stands
alone). Repetitions alternate the order of the hosts; each figure is the median over
repetitions, with the CPU the host's process tree used per call. The ratio is JWT / bearer.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import jwt
import orjson
from cryptography.hazmat.primitives.asymmetric import ec, rsa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ["BENCH_BEARER_TOKEN"] = "bench-" + "x" * 40  # before http_bench copies the environment

from http_bench import Connection, Server, Side  # noqa: E402

ISSUER = "https://auth.bench.example"
TOOLS = str(HERE / "tools_protomcp.py")


def host(*options: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "protomcp_host",
        "run",
        TOOLS,
        "--transport",
        "http",
        "--port",
        "0",
        *options,
    ]


def jwks_side(name: str, key: Any, algorithm: str, folder: Path) -> tuple[Side, Any]:
    """A host accepting JWTs signed by `key`, and the key (tokens are made once its URL is known)."""
    public = orjson.loads(jwt.algorithms.get_default_algorithms()[algorithm].to_jwk(key.public_key()))
    entry = {**public, "kid": name, "alg": algorithm, "use": "sig"}
    path = folder / f"{name}.json"
    path.write_bytes(orjson.dumps({"keys": [entry]}))
    return Side(name, host("--oauth-jwks", str(path), "--oauth-issuer", ISSUER)), key


def token_for(name: str, key: Any, algorithm: str, audience: str) -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": audience, "sub": "bench-user", "iat": now, "exp": now + 3600}
    return jwt.encode(claims, key, algorithm=algorithm, headers={"kid": name})


async def rate(
    server: Server, authorization: str, sessions: int, seconds: float, modern: bool
) -> tuple[float, float]:
    """(calls/s, host CPU µs per call) with `sessions` connections calling in a loop."""
    head = (f"authorization: {authorization}",)
    conns = [Connection(server.port, server.path, modern, head) for _ in range(sessions)]
    for conn in conns:
        await conn.open()
        await conn.initialize()
    for conn in conns:  # warm: every connection has made a call
        await conn.echo()
    done = 0
    deadline = time.perf_counter() + seconds

    async def loop(conn: Connection) -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await conn.echo()
            done += 1

    start, cpu = time.perf_counter(), server.cpu_s()
    await asyncio.gather(*(loop(conn) for conn in conns))
    elapsed, cpu = time.perf_counter() - start, server.cpu_s() - cpu
    for conn in conns:
        conn.close()
    return done / elapsed, cpu / max(1, done) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--sessions", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        es256 = jwks_side("jwt ES256", ec.generate_private_key(ec.SECP256R1()), "ES256", Path(folder))
        rs256 = jwks_side(
            "jwt RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256", Path(folder)
        )
        sides: list[tuple[str, Side, Any, str]] = [
            ("bearer", Side("bearer", host("--auth-token-env", "BENCH_BEARER_TOKEN")), None, ""),
            ("jwt ES256", es256[0], es256[1], "ES256"),
            ("jwt RS256", rs256[0], rs256[1], "RS256"),
        ]
        results: dict[tuple[str, bool], list[tuple[float, float]]] = {}
        for rep in range(args.reps):
            order = sides if rep % 2 == 0 else list(reversed(sides))
            for name, side, key, algorithm in order:
                server = Server(side)
                try:
                    if key is None:
                        authorization = "Bearer " + os.environ["BENCH_BEARER_TOKEN"]
                    else:
                        url = f"http://127.0.0.1:{server.port}{server.path}"
                        authorization = "Bearer " + token_for(name, key, algorithm, url)
                    for modern in (False, True):
                        figures = asyncio.run(
                            rate(server, authorization, args.sessions, args.seconds, modern)
                        )
                        results.setdefault((name, modern), []).append(figures)
                        era = "2026" if modern else "2025"
                        print(f"  rep {rep + 1} {name:10} {era}: {figures[0]:8.0f} calls/s", file=sys.stderr)
                finally:
                    server.stop()
    print(f"\n{args.sessions} sessions, {args.seconds:g} s each, median of {args.reps}", end="")
    print(" (CPU: the host's process tree, per call)\n")
    print("| era | auth | calls/s | CPU µs/call | calls/s vs bearer |")
    print("| --- | --- | ---: | ---: | ---: |")
    for modern in (False, True):
        era = "2026-07-28" if modern else "2025-11-25"
        base = statistics.median(r for r, _ in results[("bearer", modern)])
        for name, *_ in sides:
            calls = statistics.median(r for r, _ in results[(name, modern)])
            cpu = statistics.median(c for _, c in results[(name, modern)])
            print(f"| {era} | {name} | {calls:,.0f} | {cpu:,.0f} | {calls / base:.1%} |")


if __name__ == "__main__":
    main()
