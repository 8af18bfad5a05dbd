"""JSON-RPC 2.0 message rules (protomcp_host.protocol.jsonrpc), without I/O."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.protocol.jsonrpc import Invalid, Notification, Request, Response

pytestmark = pytest.mark.fast  # starts no process


def decode_one(message: Any) -> rpc.Message:
    decoded = rpc.decode(orjson.dumps(message))
    assert not isinstance(decoded, list)
    return decoded


# -- decode ----------------------------------------------------------------------------


@pytest.mark.parametrize("line", [b"{", b"not json", b'{"jsonrpc":"2.0",}', b"", b"\xff\xfe"])
def test_parse_error(line: bytes) -> None:
    decoded = rpc.decode(line)
    assert isinstance(decoded, Invalid)
    assert decoded.id == b"null"
    assert decoded.code == -32700
    assert decoded.message.startswith("Parse error: ")


@pytest.mark.parametrize("value", [1, "ping", None, True, 2.5])
def test_non_object_message(value: Any) -> None:
    assert decode_one(value) == Invalid(b"null", -32600, "Invalid Request: a message must be a JSON object")


def test_empty_batch_is_invalid() -> None:
    assert rpc.decode(b"[]") == Invalid(b"null", -32600, "Invalid Request: empty batch")


def test_batch_decodes_to_a_list_in_order() -> None:
    decoded = rpc.decode(
        b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},5]'
    )
    assert decoded == [
        Request(b"1", "ping", {}),
        Notification("notifications/initialized", {}),
        Invalid(b"null", -32600, "Invalid Request: a message must be a JSON object"),
    ]


def test_request() -> None:
    assert decode_one({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"cursor": "x"}}) == (
        Request(b"3", "tools/list", {"cursor": "x"})
    )


def test_request_without_params_gets_empty_params() -> None:
    assert decode_one({"jsonrpc": "2.0", "id": 3, "method": "ping"}) == Request(b"3", "ping", {})


def test_notification_has_no_id() -> None:
    assert decode_one({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"x": 1}}) == (
        Notification("notifications/cancelled", {"x": 1})
    )


def test_notification_with_non_object_params_is_kept_with_empty_params() -> None:
    assert decode_one({"jsonrpc": "2.0", "method": "n", "params": [1, 2]}) == Notification("n", {})


def test_request_with_non_object_params_is_invalid_params() -> None:
    assert decode_one({"jsonrpc": "2.0", "id": "a", "method": "ping", "params": [1]}) == Invalid(
        b'"a"', -32602, 'Invalid params: "params" must be an object'
    )


@pytest.mark.parametrize(
    ("raw_id", "encoded"),
    [("1", b'"1"'), (1, b"1"), (0, b"0"), (-7, b"-7"), ("", b'""'), ("é\n", b'"\xc3\xa9\\n"')],
)
def test_ids_are_kept_as_their_json_encoding(raw_id: Any, encoded: bytes) -> None:
    decoded = decode_one({"jsonrpc": "2.0", "id": raw_id, "method": "ping"})
    assert decoded == Request(encoded, "ping", {})
    assert isinstance(decoded, Request)
    assert orjson.loads(decoded.id) == raw_id


def test_string_id_and_integer_id_differ() -> None:
    string = decode_one({"jsonrpc": "2.0", "id": "1", "method": "ping"})
    integer = decode_one({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert isinstance(string, Request) and isinstance(integer, Request)
    assert string.id == b'"1"'
    assert integer.id == b"1"


@pytest.mark.parametrize("raw_id", [True, False, None, 1.5, 1.0, {"a": 1}, [1]])
def test_bad_id_types(raw_id: Any) -> None:
    assert decode_one({"jsonrpc": "2.0", "id": raw_id, "method": "ping"}) == Invalid(
        b"null", -32600, 'Invalid Request: "id" must be a string or an integer'
    )


@pytest.mark.parametrize("version", ["1.0", 2.0, None, "2.0 "])
def test_bad_jsonrpc_version_echoes_a_valid_id(version: Any) -> None:
    assert decode_one({"jsonrpc": version, "id": "x", "method": "ping"}) == Invalid(
        b'"x"', -32600, 'Invalid Request: "jsonrpc" must be "2.0"'
    )


def test_missing_jsonrpc_member() -> None:
    assert decode_one({"id": 4, "method": "ping"}) == Invalid(
        b"4", -32600, 'Invalid Request: "jsonrpc" must be "2.0"'
    )


def test_missing_method() -> None:
    assert decode_one({"jsonrpc": "2.0", "id": 9}) == Invalid(
        b"9", -32600, 'Invalid Request: missing "method"'
    )


def test_non_string_method() -> None:
    assert decode_one({"jsonrpc": "2.0", "id": 9, "method": 12}) == Invalid(
        b"9", -32600, 'Invalid Request: "method" must be a string'
    )


def test_responses_from_the_client() -> None:
    ok = {"jsonrpc": "2.0", "id": 5, "result": {"roots": []}}
    failed = {"jsonrpc": "2.0", "id": "s", "error": {"code": -1, "message": "no"}}
    assert decode_one(ok) == Response(b"5", ok)
    assert decode_one(failed) == Response(b'"s"', failed)


def test_response_with_a_bad_id_is_invalid() -> None:
    assert decode_one({"jsonrpc": "2.0", "id": None, "result": {}}) == Invalid(
        b"null", -32600, 'Invalid Request: missing "method"'
    )


# -- encoders ------------------------------------------------------------------------------


def test_result_encoding() -> None:
    assert rpc.result(b'"1"', {"a": [1, None]}) == b'{"jsonrpc":"2.0","id":"1","result":{"a":[1,null]}}'


def test_raw_result_splices_bytes_verbatim() -> None:
    assert rpc.raw_result(b"7", b'{"x": 1}') == b'{"jsonrpc":"2.0","id":7,"result":{"x": 1}}'


def test_error_encoding() -> None:
    assert rpc.error(b"null", -32700, "Parse error: x") == (
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: x"}}'
    )
    assert orjson.loads(rpc.error(b"2", -32602, "bad", {"field": "a"})) == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {"code": -32602, "message": "bad", "data": {"field": "a"}},
    }


def test_notification_and_request_encoding() -> None:
    assert rpc.notification("notifications/tools/list_changed") == (
        b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'
    )
    assert orjson.loads(rpc.notification("m", {"a": 1})) == {
        "jsonrpc": "2.0",
        "method": "m",
        "params": {"a": 1},
    }
    assert orjson.loads(rpc.request("r1", "ping")) == {"jsonrpc": "2.0", "id": "r1", "method": "ping"}
    assert orjson.loads(rpc.request(3, "m", {})) == {"jsonrpc": "2.0", "id": 3, "method": "m", "params": {}}


def test_encoded_messages_are_single_lines() -> None:
    for data in (
        rpc.result(b"1", {"text": "a\nb\r\nc"}),
        rpc.error(b"1", -32603, "line1\nline2"),
        rpc.notification("m", {"t": "x\ny"}),
    ):
        assert b"\n" not in data and b"\r" not in data


# -- hardening (issue 7): what orjson cannot hold is refused with the request's id --------------------


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b'"\\ud800"', "lone UTF-16 surrogate"),
        (b"1e400", "the number 1e400 is too large for a double"),
        (b"18446744073709551616", "the integer 18446744073709551616 exceeds 64 bits"),
    ],
)
def test_refused_values_keep_the_request_id(value: bytes, reason: str) -> None:
    line = b'{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"v":' + value + b"}}"
    decoded = rpc.decode(line)
    assert isinstance(decoded, Invalid) and decoded.id == b'"r"' and decoded.code == -32602
    assert reason in decoded.message


@pytest.mark.parametrize("value", [b'"\\ud800"', b"1e400", b"18446744073709551616", b"NaN"])
def test_a_refused_value_in_a_batch_refuses_only_its_message(value: bytes) -> None:
    """The other messages of the batch are served as usual (before: one answer, for the whole
    batch, with the first message's id; the others were never answered)."""
    line = (
        b'[{"jsonrpc":"2.0","id":1,"method":"ping"},'
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"v":' + value + b"}},"
        b'{"jsonrpc":"2.0","method":"notifications/x","params":{"v":' + value + b"}},"
        b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"n":[1,2.5,{"k":"ok"}]}}]'
    )
    decoded = rpc.decode(line)
    assert isinstance(decoded, list) and len(decoded) == 4
    assert decoded[0] == Request(b"1", "ping", {})
    assert isinstance(decoded[1], Invalid) and decoded[1].id == b"2" and decoded[1].code == -32602
    assert isinstance(decoded[2], Notification)  # no answer
    assert decoded[3] == Request(b"3", "tools/list", {"n": [1, 2.5, {"k": "ok"}]})


def test_a_refused_notification_gets_no_answer() -> None:
    decoded = rpc.decode(b'{"jsonrpc":"2.0","method":"notifications/x","params":{"v":"\\ud800"}}')
    assert isinstance(decoded, Notification)


@pytest.mark.parametrize("levels", [257, 1000, 3000])
def test_too_deep_messages_keep_their_id(levels: int) -> None:
    deep = b"[" * levels + b"]" * levels
    decoded = rpc.decode(b'{"jsonrpc":"2.0","method":"tools/call","params":{"v":' + deep + b'},"id":9}')
    assert decoded == Invalid(b"9", -32600, "Invalid Request: the message nests deeper than 256 levels")


def test_the_deepest_accepted_arguments_can_be_encoded_again() -> None:
    arguments = b"[" * 253 + b"]" * 253
    line = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"v":' + arguments + b"}}}"
    decoded = rpc.decode(line)
    assert isinstance(decoded, Request)
    orjson.dumps(decoded.params["arguments"])  # what the host sends the tool process
