"""transports/http/affinity.py without processes: which worker holds a stateful session."""

from __future__ import annotations

from pathlib import Path

import pytest

from protomcp_host.transports.http.affinity import Affinity

pytestmark = pytest.mark.fast  # starts no process


def test_every_worker_agrees_on_the_owner_and_makes_ids_it_owns(tmp_path: Path) -> None:
    workers = [Affinity(number, 3, str(tmp_path)) for number in (1, 2, 3)]
    for affinity in workers:
        made = [affinity.new_id() for _ in range(20)]
        assert len(set(made)) == 20 and all(len(session_id) == 32 for session_id in made)
        assert {other.owner(session_id) for other in workers for session_id in made} == {affinity.worker}
    offered = "0123456789abcdef" * 2  # a balancer's id: owned by one worker, whichever got it
    assert len({affinity.owner(offered) for affinity in workers}) == 1


def test_a_worker_is_known_only_under_several(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PROTOMCP_WORKERS_DIR", str(tmp_path))
    monkeypatch.setenv("PROTOMCP_WORKER", "2")
    monkeypatch.setenv("PROTOMCP_WORKERS", "1")
    assert Affinity.from_env() is None
    monkeypatch.setenv("PROTOMCP_WORKERS", "4")
    assert Affinity.from_env() == Affinity(2, 4, str(tmp_path))
    Affinity(2, 4, str(tmp_path)).listen().close()
    Affinity(2, 4, str(tmp_path)).listen().close()  # a replacement takes over the path
