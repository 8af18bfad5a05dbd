"""envelope_pb2 loaded through upb (protomcp_sdk.wire.leanpb) is the generated module's twin.

Each check runs in a fresh interpreter: which way the module is loaded depends on what was
imported before, and the descriptor pool is per process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.support.unmeasured import unmeasured

ROOT = Path(__file__).resolve().parents[3]

SUMMARY = """
import json, sys
from google.protobuf.message import Message

def describe(value):
    if isinstance(value, type) and issubclass(value, Message):
        nested = {k: describe(v) for k, v in vars(value).items()
                  if isinstance(v, type) and issubclass(v, Message)}
        return ["class", value.__module__, value.__qualname__, value.DESCRIPTOR.full_name, nested]
    if hasattr(value, "full_name"):
        return [type(value).__name__, value.full_name]
    if isinstance(value, (int, str)):
        return ["value", value]
    return [type(value).__name__]

summary = {name: describe(value) for name, value in vars(pb).items()
           if not name.startswith("__") and name not in ("_sym_db", "_globals", "_runtime_version",
           "_descriptor", "_descriptor_pool", "_symbol_database", "_builder")}
summary["DESCRIPTOR"] = pb.DESCRIPTOR.serialized_pb.hex()
print(json.dumps(summary, sort_keys=True))
"""

LEAN = "import sys\nfrom protomcp_sdk.wire import envelope_pb2 as pb\n"
GENERATED = "import importlib\npb = importlib.import_module('protomcp_sdk.wire.envelope_pb2')\n"


def run(source: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source)],
        env={**unmeasured(), "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_lean_module_holds_what_the_generated_one_does() -> None:
    lean = json.loads(run(LEAN + "assert 'google.protobuf.internal.builder' not in sys.modules\n" + SUMMARY))
    generated = json.loads(run(GENERATED + SUMMARY))
    assert lean == generated
    assert lean["Envelope"][:3] == ["class", "protomcp_pb2", "Envelope"]  # protoc names it from the .proto


def test_the_lean_module_skips_the_pure_python_protobuf_modules() -> None:
    loaded: list[str] = json.loads(run(LEAN + "import json, sys\nprint(json.dumps(sorted(sys.modules)))"))
    for name in (
        "google.protobuf.internal.builder",
        "google.protobuf.internal.python_message",
        "google.protobuf.descriptor_pool",
        "google.protobuf.text_format",
        "google.protobuf.internal.decoder",
        "google.protobuf.internal.containers",
        "pickle",
    ):
        assert name not in loaded


BEHAVIOUR = """
import sys
import protomcp_sdk.wire.envelope_pb2 as again
from google.protobuf import json_format, message_factory

assert again is pb and sys.modules["protomcp_sdk.wire.envelope_pb2"] is pb
envelope = pb.Envelope(request_id="7", call_tool=pb.CallToolRequest(name="echo", arguments_json='{"a": 1}'))
assert envelope.WhichOneof("msg") == "call_tool"
data = envelope.SerializeToString()
back = pb.Envelope.FromString(data)
assert back == envelope and back.call_tool.name == "echo" and back.request_id == "7"
copy = pb.Envelope()
copy.call_tool.CopyFrom(envelope.call_tool)
copy.MergeFromString(data)
assert copy == envelope
assert message_factory.GetMessageClass(pb.Envelope.DESCRIPTOR) is pb.Envelope
assert json_format.MessageToDict(envelope)["callTool"]["name"] == "echo"
try:
    pb.Envelope.FromString(b"\\xff\\xff")
except Exception as exc:
    from google.protobuf.message import DecodeError
    assert isinstance(exc, DecodeError)
else:
    raise AssertionError("no DecodeError")
print("ok", type(pb.Envelope).__module__)
"""


def test_the_lean_classes_behave_like_generated_ones() -> None:
    assert run(LEAN + BEHAVIOUR).split()[0] == "ok"


def test_the_generated_module_imported_first_is_the_one_every_importer_gets() -> None:
    assert run(GENERATED + "import protomcp_sdk.wire.envelope_pb2 as pb\n" + BEHAVIOUR).split()[0] == "ok"
    out = run(GENERATED + "from protomcp_sdk.wire import envelope_pb2 as lean\nprint(lean is pb)")
    assert out.strip() == "True"


def test_another_protobuf_backend_gets_the_generated_module() -> None:
    out = run(
        LEAN + "print('google.protobuf.internal.builder' in sys.modules)\n" + BEHAVIOUR,
        PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python",
    )
    assert out.split() == ["True", "ok", "google.protobuf.internal.python_message"]


def test_a_module_of_another_shape_is_imported_as_usual() -> None:
    from protomcp_sdk.wire import leanpb

    def code(source: str) -> Any:
        return compile(source, "<generated>", "exec")

    standard = "D = pool.AddSerializedFile(b'x')\n_builder.BuildTopDescriptorsAndMessages(D)"
    assert leanpb._serialized_descriptor(code(standard)) == b"x"
    assert leanpb._serialized_descriptor(code(standard + "\nOPTIONS = b'y'")) is None
    assert leanpb._serialized_descriptor(code("DESCRIPTOR = b'x'")) is None
    # proto_mcp.proto imports other files: the generated module is imported as usual
    out = run(
        "from protomcp_sdk.wire import leanpb\n"
        "import sys\n"
        "module = leanpb.load('protomcp_sdk.wire.proto_mcp_pb2')\n"
        "print('google.protobuf.internal.builder' in sys.modules, module.__name__)"
    )
    assert out.split() == ["True", "protomcp_sdk.wire.proto_mcp_pb2"]
