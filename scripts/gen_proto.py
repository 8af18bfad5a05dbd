"""Regenerate protomcp_sdk/wire/protomcp_pb2.py from proto/protomcp.proto.

Usage: python scripts/gen_proto.py [--check]
--check exits 1 when the committed module differs from a fresh generation.
Needs grpcio-tools (in the [dev] extra).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO = ROOT / "proto" / "protomcp.proto"
TARGET = ROOT / "protomcp_sdk" / "wire" / "protomcp_pb2.py"


def generate() -> str:
    from grpc_tools import protoc

    with tempfile.TemporaryDirectory() as out:
        code = protoc.main(["protoc", f"-I{PROTO.parent}", f"--python_out={out}", str(PROTO)])
        if code != 0:
            raise SystemExit(f"protoc failed with exit code {code}")
        return (Path(out) / "protomcp_pb2.py").read_text()


def main() -> int:
    fresh = generate()
    if "--check" in sys.argv:
        if TARGET.read_text() != fresh:
            print(f"{TARGET} is stale: run python scripts/gen_proto.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(fresh)
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
