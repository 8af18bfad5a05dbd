"""benchmarks/tokens.py runs (small sizes) and counts offline: it cannot rot unseen."""

from __future__ import annotations

import importlib.util
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.fast  # starts no process

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"

pytest.importorskip("tiktoken", reason="tiktoken is in the test extra")


def _load(name: str) -> Any:
    if name in sys.modules:
        return sys.modules[name]
    sys.path.insert(0, str(BENCH))  # tokens.py imports realistic_tools from beside it
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_tokens_counts_small_catalogues_without_the_network(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the token benchmark tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # no cached copy either: read from the package
    tokens = _load("tokens")
    readme = tmp_path / "README.md"
    readme.write_text("# Benchmarks\n\n## Other\n\nkept\n", encoding="utf-8")
    rows = tokens.main(["--sizes", "10,50", "--out", str(readme)])
    small, larger = rows
    assert small.tools == 10 and larger.tools == 50
    assert small.full > small.names > 0 and larger.full > 4 * small.full
    assert small.search_listed == larger.search_listed  # the listed catalogue does not grow
    assert larger.search_listed < 0.05 * larger.full
    assert larger.recall_at_5 is not None and larger.queries > 0
    assert "| 50 |" in capsys.readouterr().out
    written = readme.read_text(encoding="utf-8")
    assert "## Other\n\nkept" in written and tokens.HEADING in written and "| 50 |" in written


def test_realistic_tools_have_the_promised_shape() -> None:
    realistic = _load("realistic_tools")
    universe = realistic.all_tools()
    assert len(universe) >= 1000 and len({t.name for t in universe}) == len(universe)
    assert all(2 <= len(t.params) <= 6 for t in universe)
    assert {target for _, target in realistic.QUERIES} <= {t.name for t in universe[:80]}
    assert any(p.kind.startswith("enum(") for t in universe for p in t.params)
