"""The method registry (protomcp_host.protocol.methods): each era's session answers exactly
the registry's methods for its era, each with a handler that exists."""

from __future__ import annotations

import pytest

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.catalog import Catalog
from protomcp_host.protocol.features import FeatureCatalog
from protomcp_host.protocol.methods import METHODS, MODERN, STATEFUL, served
from protomcp_host.protocol.modern import ModernShared
from protomcp_host.protocol.session import Session
from protomcp_host.protocol.skills import Skills
from protomcp_host.protocol.tasks import TaskStore

pytestmark = pytest.mark.fast  # starts no process

INFO = {"name": "protomcp-test", "version": "9.9"}


def _features(skills: bool) -> FeatureCatalog:
    features = FeatureCatalog(100)
    if skills:
        features.skills = Skills([])
    return features


@pytest.mark.parametrize("offered", [set(), {"features"}, {"features", "skills"}])
def test_a_stateful_session_answers_its_era_s_methods(offered: set[str]) -> None:
    features = _features("skills" in offered) if offered else None
    session = Session(Catalog(), INFO, features=features)
    expected = set(served(STATEFUL, offered | {"tasks"}))
    assert {m for m in METHODS if session.refuse_early(_request(m)) is None} == expected
    assert all(callable(session.handler(method)) for method in expected)


@pytest.mark.parametrize("offered", [set(), {"tasks"}, {"features", "skills", "tasks"}])
def test_the_modern_table_is_the_registry_s_for_its_era(offered: set[str]) -> None:
    features = _features("skills" in offered) if "features" in offered else None
    store = TaskStore() if "tasks" in offered else None
    shared = ModernShared(Catalog(), INFO, features=features, serve_modern=True, task_store=store)
    assert set(shared.methods()) == set(served(MODERN, offered))


def test_removed_methods_exist_only_in_the_handshake_era() -> None:
    removed = {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
    removed |= {"tasks/result", "tasks/list"}
    assert {name for name, method in METHODS.items() if MODERN not in method.eras} == removed


def _request(method: str) -> rpc.Request:
    return rpc.Request(b"1", method, {})
