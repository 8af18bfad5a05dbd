"""Benchmark tool file for benchmarks/protomcp_typed.py: a typed tool whose result message
holds `count` rows in one repeated field (built once per count: the call measures the
protocols, not the building)."""

from functools import lru_cache

from rows_pb2 import Row, Rows, RowsRequest

from protomcp_sdk import tool


@lru_cache(maxsize=4)
def _rows(count: int) -> Rows:
    return Rows(rows=[Row(id=i, name=f"row {i}", score=i / 7, ok=i % 2 == 0) for i in range(count)])


@tool
def rows(request: RowsRequest) -> Rows:
    """`count` rows."""
    return _rows(request.count)
