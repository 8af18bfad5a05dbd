"""JSON Schema ↔ protobuf (protomcp_sdk.wire.protoschema) and `protomcp proto-schema`: every schema
shape the SDK generates goes to .proto text, through protoc, and back unchanged; arguments go
to messages and back unchanged; bad arguments get clear errors."""

from __future__ import annotations

import subprocess
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool

from protomcp_sdk.wire import protoschema as ps
from tests.support.hosts import BEHAVIOURS, HOST, ROOT, TOOLS

SHAPES = TOOLS / "proto_shapes.py"
REALISTIC = ROOT / "benchmarks" / "realistic.py"

ARGUMENTS = {
    "scalars": [
        {"s": "x", "i": -3, "f": 1.5, "b": True},
        {"s": "", "i": 0, "f": 2, "b": False, "opt": 4, "d": 9},
    ],
    "collections": [
        {},
        {"tags": ["a", "b"], "grid": [[1, 2], [], [3]], "m": {"k": 1, "z": -2}, "raw": {"z": [1, None, "s"]}},
        {"anything": {"deep": [{"x": True}]}},
        {"anything": 5},
    ],
    "constrained": [{"lit": "b-c", "color": "blue", "n": 7, "name": "abc", "mixed": "s"}, {"mixed": 3}],
    "models": [
        {"box": {"corner": {"x": 1}}},
        {
            "box": {
                "corner": {"x": 1, "y": 2},
                "points": [{"x": 2}],
                "label": "L",
                "colors": ["red", "blue"],
            },
            "movie": {"title": "T", "year": 1999},
            "pet": {"name": "rex"},
            "tree": {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]},
        },
    ],
    "slow_sum": [{"values": [1, 2.5]}],
    "refuse": [{"reason": "no"}],
    "whoami": [{}],
}


def schemas_of(file: Path) -> list[dict[str, Any]]:
    from protomcp_host.cli.inspection import inspect_file

    report = inspect_file(file, sys.executable)
    assert report["ok"], report
    return report["tools"]


def compile_proto(text: str, name: str, folder: Path) -> descriptor_pb2.FileDescriptorSet:
    """`text` through protoc (beside protomcp/options.proto), as a descriptor set."""
    from grpc_tools import protoc

    (folder / name).parent.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    options = folder / "protomcp" / "options.proto"
    options.parent.mkdir(parents=True, exist_ok=True)
    options.write_text((ROOT / "protomcp_sdk" / "wire" / "options.proto").read_text(), encoding="utf-8")
    out = folder / "out.pb"
    well_known = str(files("grpc_tools") / "_proto")
    code = protoc.main(
        ["protoc", f"-I{folder}", f"-I{well_known}", "--include_imports", f"--descriptor_set_out={out}", name]
    )
    assert code == 0, text
    return descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())


@pytest.mark.parametrize("file", [SHAPES, BEHAVIOURS, REALISTIC], ids=lambda f: f.name)
def test_every_schema_survives_proto_text_and_protoc(file: Path, tmp_path: Path) -> None:
    for tool in schemas_of(file):
        made = ps.tool_messages(tool["name"], tool["inputSchema"], tool.get("outputSchema"))
        compiled = compile_proto(ps.proto_source(made), made.name, tmp_path / tool["name"])
        request, response = ps.message_names(made)
        pool = descriptor_pool.DescriptorPool()
        for proto in compiled.file:
            pool.Add(proto)
        assert ps.schema_from_message(pool.FindMessageTypeByName(request)) == tool["inputSchema"], tool[
            "name"
        ]
        if tool.get("outputSchema"):
            assert ps.schema_from_message(pool.FindMessageTypeByName(response)) == tool["outputSchema"]


@pytest.mark.parametrize("file", [SHAPES, BEHAVIOURS, REALISTIC], ids=lambda f: f.name)
def test_every_schema_survives_a_set_without_the_options_file(file: Path) -> None:
    """The set a client gets leaves protomcp/options.proto out (the file no longer imports it);
    the options stay in the descriptors, read back by a pool that knows them (this one's)."""
    for tool in schemas_of(file):
        made = ps.tool_messages(tool["name"], tool["inputSchema"], tool.get("outputSchema"))
        fds = ps.descriptor_set([made])
        assert all(f.name.startswith(ps.WELL_KNOWN) for f in fds.file[:-1]), tool["name"]
        assert ps.OPTIONS_FILE not in fds.file[-1].dependency
        request, response = ps.message_names(made)
        assert ps.schema_from_message(ps.message_class(fds, request).DESCRIPTOR) == tool["inputSchema"]
        if tool.get("outputSchema"):
            back = ps.schema_from_message(ps.message_class(fds, response).DESCRIPTOR)
            assert back == tool["outputSchema"], tool["name"]


def test_an_options_only_import_leaves_the_other_imports_in_order() -> None:
    file = descriptor_pb2.FileDescriptorProto(
        name="t.proto",
        package="t",
        dependency=[ps.OPTIONS_FILE, "google/protobuf/struct.proto", "google/protobuf/empty.proto"],
        public_dependency=[2],
    )
    fds = ps.descriptor_set([file])
    assert [f.name for f in fds.file] == [
        "google/protobuf/struct.proto",
        "google/protobuf/empty.proto",
        "t.proto",
    ]
    assert list(fds.file[-1].dependency) == ["google/protobuf/struct.proto", "google/protobuf/empty.proto"]
    assert list(fds.file[-1].public_dependency) == [1]
    assert file.dependency[0] == ps.OPTIONS_FILE  # the given file is left as it was


def test_arguments_go_to_messages_and_back_unchanged() -> None:
    tools = {tool["name"]: tool for tool in schemas_of(SHAPES)}
    assert set(ARGUMENTS) == set(tools)
    for name, samples in ARGUMENTS.items():
        made = ps.tool_messages(name, tools[name]["inputSchema"], tools[name].get("outputSchema"))
        cls = ps.message_class(ps.descriptor_set([made]), ps.message_names(made)[0])
        for arguments in samples:
            message = ps.json_to_message(arguments, cls)
            wire = message.SerializeToString()
            assert ps.message_to_json(cls.FromString(wire)) == arguments, (name, arguments)


def test_structured_results_as_messages() -> None:
    [models] = [tool for tool in schemas_of(SHAPES) if tool["name"] == "models"]
    made = ps.tool_messages("models", models["inputSchema"], models["outputSchema"])
    cls = ps.message_class(ps.descriptor_set([made]), ps.message_names(made)[1])
    assert cls.DESCRIPTOR.full_name == "protomcp.tools.ModelsResponse"
    assert ps.message_to_json(ps.json_to_message({"x": 3, "y": 0}, cls)) == {"x": 3, "y": 0}


def test_absent_and_null_scalars_stay_absent() -> None:
    [scalars] = [tool for tool in schemas_of(SHAPES) if tool["name"] == "scalars"]
    made = ps.tool_messages("scalars", scalars["inputSchema"])
    cls = ps.message_class(ps.descriptor_set([made]), ps.message_names(made)[0])
    message = ps.json_to_message({"s": "x", "i": 0, "f": 0.0, "b": False, "opt": None}, cls)
    assert ps.message_to_json(message) == {"s": "x", "i": 0, "f": 0.0, "b": False}  # zero kept, null absent


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"s": 1}, "s: expected string, got a number"),
        ({"i": "3"}, "i: expected integer, got a string"),
        ({"i": True}, "i: expected integer, got a boolean"),
        ({"i": 2**64}, "is out of range for int64"),
        ({"nope": 1}, "nope: no such field in ScalarsRequest"),
    ],
)
def test_bad_arguments_get_clear_errors(arguments: dict[str, Any], says: str) -> None:
    [scalars] = [tool for tool in schemas_of(SHAPES) if tool["name"] == "scalars"]
    made = ps.tool_messages("scalars", scalars["inputSchema"])
    cls = ps.message_class(ps.descriptor_set([made]), ps.message_names(made)[0])
    with pytest.raises(ValueError, match=says):
        ps.json_to_message(arguments, cls)


def test_keys_that_are_not_identifiers_keep_their_json_names(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {
            "max-results": {"type": "integer"},
            "Max_Results": {"type": "string"},
            "1st": {"type": "boolean"},
        },
        "required": ["max-results"],
    }
    made = ps.tool_messages("odd-names", schema)
    assert [f.name for f in made.message_type[0].field] == ["max_results", "Max_Results_2", "f_1st"]
    compiled = compile_proto(ps.proto_source(made), made.name, tmp_path)
    pool = descriptor_pool.DescriptorPool()
    for proto in compiled.file:
        pool.Add(proto)
    assert ps.schema_from_message(pool.FindMessageTypeByName("protomcp.tools.OddNamesRequest")) == schema
    cls = ps.message_class(ps.descriptor_set([made]), "protomcp.tools.OddNamesRequest")
    arguments = {"max-results": 3, "Max_Results": "x", "1st": True}
    assert ps.message_to_json(ps.json_to_message(arguments, cls)) == arguments


def test_a_bad_reference_is_refused() -> None:
    with pytest.raises(ps.SchemaError, match="unresolvable reference"):
        ps.tool_messages("t", {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}})


def test_the_cli_prints_and_writes_proto_files(tmp_path: Path) -> None:
    printed = subprocess.run(
        [*HOST, "proto-schema", str(SHAPES)], capture_output=True, text=True, timeout=120
    )
    assert printed.returncode == 0, printed.stderr
    assert "message ModelsRequest {" in printed.stdout and "message ModelsResponse {" in printed.stdout
    assert '(protomcp.field_schema) = "{\\"default\\":5,\\"description\\":\\"How many\\"' in printed.stdout

    out = tmp_path / "out"
    written = subprocess.run(
        [*HOST, "proto-schema", str(SHAPES), "--out", str(out)], capture_output=True, text=True, timeout=120
    )
    assert written.returncode == 0, written.stderr
    assert (out / "protomcp" / "options.proto").exists()
    from grpc_tools import protoc

    protos = sorted(str(p.relative_to(out)) for p in (out / "protomcp" / "tools").glob("*.proto"))
    assert len(protos) == len(ARGUMENTS)
    well_known = str(files("grpc_tools") / "_proto")
    assert protoc.main(["protoc", f"-I{out}", f"-I{well_known}", f"--python_out={tmp_path}", *protos]) == 0

    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('no')\n", encoding="utf-8")
    failed = subprocess.run([*HOST, "proto-schema", str(broken)], capture_output=True, text=True, timeout=120)
    assert (
        failed.returncode == 1
        and "broken.py failed to load" in failed.stderr
        and "RuntimeError" in failed.stderr
    )
