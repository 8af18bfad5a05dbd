"""The host's side of ctx.user_state (protomcp_host/shared/user_state.py): whose state a request
reaches, decided from the running request's verified claims, and every request checked again
(the tool process is not trusted: it may not be our SDK)."""

from __future__ import annotations

from typing import Any

import anyio

from protomcp_host.shared.user_state import ANONYMOUS, LOCAL, UserStates, principal_of, space_of
from protomcp_host.store.memory import MemoryStore
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire import user_state as contract


def test_whose_state_from_the_callers_claims() -> None:
    assert principal_of(None, LOCAL) == LOCAL and principal_of(None, ANONYMOUS) == ANONYMOUS
    assert principal_of({"iss": "https://idp", "sub": "ada"}, ANONYMOUS) == "sub https://idp ada"
    assert principal_of({"sub": "ada"}, ANONYMOUS) == "sub  ada"
    for nobody in ({}, {"scope": "x"}, {"sub": ""}, {"sub": 7}):
        assert principal_of(nobody, ANONYMOUS) is None
    spaces = {
        space_of(p)
        for p in (LOCAL, ANONYMOUS, "sub https://idp ada", "sub https://other ada", "sub https://idp bob")
    }
    assert len(spaces) == 5 and all(len(s) == 64 and ":" not in s for s in spaces)


def test_no_issuer_and_subject_spell_another_users_name() -> None:
    """A space in the issuer once let two users share one state (`sub i j x` for both)."""
    one = principal_of({"iss": "i j", "sub": "x"}, ANONYMOUS)
    other = principal_of({"iss": "i", "sub": "j x"}, ANONYMOUS)
    assert one is not None and other is not None and one != other


async def ask(states: UserStates, caller: dict[str, Any] | None, **request: Any) -> pb.UserStateResponse:
    answers: list[pb.UserStateResponse] = []
    done = anyio.Event()

    def reply(answer: pb.UserStateResponse) -> None:
        answers.append(answer)
        done.set()

    states.serve(caller, pb.UserStateRequest(**request), reply)  # type: ignore[arg-type]
    with anyio.fail_after(10):
        await done.wait()
    assert len(answers) == 1
    return answers[0]


async def test_requests_are_checked_again_and_callers_kept_apart() -> None:
    states = UserStates(MemoryStore(), ANONYMOUS, print)
    assert "not serving yet" in (await ask(states, None, op="get", key="k")).error
    async with anyio.create_task_group() as tg:
        states.spawn = tg.start_soon
        ada, bob = {"iss": "i", "sub": "ada"}, {"iss": "i", "sub": "bob"}
        assert not (await ask(states, ada, op="set", key="k", value_json='{"a":1}')).error
        assert (await ask(states, ada, op="get", key="k")).value_json == '{"a":1}'
        assert not (await ask(states, bob, op="get", key="k")).found
        assert not (await ask(states, None, op="get", key="k")).found  # the anonymous user is no one else
        refusals = {
            "no 'sub' claim": ({"scope": "x"}, {"op": "get", "key": "k"}),
            "unknown user_state operation": (ada, {"op": "list", "key": "k"}),
            "not JSON": (ada, {"op": "set", "key": "k", "value_json": "{"}),
            f"at most {contract.MAX_VALUE_BYTES} bytes": (
                ada,
                {"op": "set", "key": "k", "value_json": '"' + "x" * contract.MAX_VALUE_BYTES + '"'},
            ),
            "positive number of seconds": (ada, {"op": "set", "key": "k", "value_json": "1", "ttl": -1.0}),
            "at most 315360000 seconds": (ada, {"op": "set", "key": "k", "value_json": "1", "ttl": 1e300}),
        }
        for message, (caller, request) in refusals.items():
            assert message in (await ask(states, caller, **request)).error
        assert (await ask(states, ada, op="get", key="k")).value_json == '{"a":1}'  # nothing changed
        tg.cancel_scope.cancel()


async def test_a_store_that_cannot_be_reached_is_an_error_answer_and_reported() -> None:
    from protomcp_host.store.open import open_store
    from tests.support.ports import free_port

    reported: list[str] = []
    store = open_store(f"redis://127.0.0.1:{free_port()}/0", reported.append)  # nothing listens there
    states = UserStates(store, ANONYMOUS, reported.append)
    async with anyio.create_task_group() as tg:
        states.spawn = tg.start_soon
        answer = await ask(states, None, op="set", key="k", value_json="1")
        for _ in range(20):  # a tool that keeps asking writes no line per request on stderr
            assert (await ask(states, None, op="get", key="k")).error.startswith(
                "the user state is unavailable"
            )
        tg.cancel_scope.cancel()
    assert answer.error.startswith("the user state is unavailable: cannot write to redis://")
    assert len(reported) == 1 and "ctx.user_state.set failed" in reported[0]
