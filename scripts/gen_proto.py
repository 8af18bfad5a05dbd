"""Regenerate the protobuf modules in protomcp_sdk/wire/ from proto/, with their type stubs (.pyi).

Usage: python scripts/gen_proto.py [--check]
--check exits 1 when a committed module differs from a fresh generation.
Needs grpcio-tools (in the [test] extra).

  proto/protomcp.proto          -> envelope_pb2.py   host <-> tool process Envelope frames
  proto/proto_mcp.proto         -> proto_mcp_pb2.py  proto-mcp, client <-> host
  protomcp_sdk/wire/options.proto (as protomcp/options.proto)
                                -> options_pb2.py    options on messages derived from JSON Schema
                                   (kept in the package: `protomcp proto-schema --out` writes it)
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "proto"
WIRE = ROOT / "protomcp_sdk" / "wire"
MODULES = {
    "protomcp.proto": "envelope_pb2.py",
    "proto_mcp.proto": "proto_mcp_pb2.py",
    "protomcp/options.proto": "options_pb2.py",
}


def generate(source: str) -> dict[str, str]:
    """The module and its type stub (.pyi) protoc writes for `source`, by suffix."""
    from importlib.resources import files

    from grpc_tools import protoc

    well_known = str(files("grpc_tools") / "_proto")
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as packaged:
        (Path(packaged) / "protomcp").mkdir()
        shutil.copy(WIRE / "options.proto", Path(packaged) / "protomcp" / "options.proto")
        found = SOURCES if (SOURCES / source).exists() else Path(packaged)
        args = [
            "protoc",
            f"-I{found}",
            f"-I{packaged}",
            f"-I{well_known}",
            f"--python_out={out}",
            f"--pyi_out={out}",
            str(found / source),
        ]
        if protoc.main(args) != 0:
            raise SystemExit(f"protoc failed on {source}")
        stem = Path(out) / source.replace(".proto", "_pb2")
        return {suffix: stem.with_suffix(suffix).read_text() for suffix in (".py", ".pyi")}


def main() -> int:
    stale = False
    for source, module in MODULES.items():
        for suffix, fresh in generate(source).items():
            target = (WIRE / module).with_suffix(suffix)
            if "--check" in sys.argv:
                if not target.exists() or target.read_text() != fresh:
                    print(f"{target} is stale: run python scripts/gen_proto.py", file=sys.stderr)
                    stale = True
                continue
            target.write_text(fresh)
            print(f"wrote {target}")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
