"""What the authoring tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from protomcp_sdk.authoring.registry import REGISTRY


@pytest.fixture
def clean_registry() -> Iterator[None]:
    """An empty tool registry for the test, emptied again after it (decorators register globally)."""
    REGISTRY.clear()
    yield
    REGISTRY.clear()
