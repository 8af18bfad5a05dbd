"""The SDK's types as a tool author sees them: mypy --strict accepts a typed tool file, and the
decorators hand back each function with its own type (tests/sdk/typed_example/typed_tool_file.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = Path(__file__).resolve().parent / "typed_example" / "typed_tool_file.py"


def test_a_typed_tool_file_passes_mypy_strict(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api")
    # The SDK from this checkout, its own errors left out as they would be for an installed
    # package (mypy checks the SDK itself); the libraries behind it are not read: nothing the
    # example checks comes from them, and reading them costs most of the time.
    config = tmp_path / "mypy.ini"
    config.write_text(
        f"[mypy]\nstrict = True\nmypy_path = {ROOT}\n\n"
        "[mypy-protomcp_sdk.*]\nignore_errors = True\n\n"
        "[mypy-google.*,pydantic.*,pydantic_core.*,jsonschema.*,opentelemetry.*,orjson.*]\n"
        "follow_imports = skip\n"
    )
    out, err, status = api.run(
        ["--config-file", str(config), "--cache-dir", str(tmp_path / "cache"), str(EXAMPLE)]
    )
    assert status == 0, out + err
