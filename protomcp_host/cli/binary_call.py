"""`protomcp call --binary`: one tool call over proto-mcp, through a `protomcp run` subprocess."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import click
import orjson
from google.protobuf.json_format import MessageToDict

from protomcp_host.cli.show import parse_pairs
from protomcp_sdk.wire import protoschema
from protomcp_sdk.wire.protomcp_client import ProtoMcpCallResult, ProtoMcpClient, ProtoMcpError


def call_binary(
    files: list[Path],
    tool: str,
    pairs: tuple[str, ...],
    arguments: dict[str, Any],
    as_json: bool,
    timeout: float | None,
    python: str,
) -> int:
    """Print the result; the exit status (1 for an error result or a protocol error)."""
    command = [sys.executable, "-m", "protomcp_host", "run", "--python", python, *map(str, files)]

    async def run() -> int:
        async with ProtoMcpClient.stdio(command) as client:
            tools = {info.name: info for info in await client.list_tools()}
            if tool not in tools:
                served = ", ".join(tools) or "none"
                raise click.ClickException(f"no tool {tool!r} (the files serve: {served})")
            if pairs:
                schema = protoschema.schema_from_message(tools[tool].request_class().DESCRIPTOR)
                try:
                    arguments.update(parse_pairs(pairs, schema))
                except ValueError as exc:
                    raise click.BadParameter(str(exc), param_hint="KEY=VALUE") from None
            try:
                with anyio.fail_after(timeout):
                    result = await client.call_tool(tool, arguments, progress=_progress)
            except ProtoMcpError as exc:
                click.echo(f"error {exc.code}: {exc.message}", err=True)
                return 1
            except ValueError as exc:  # arguments that do not fit the tool's message
                raise click.BadParameter(str(exc), param_hint="arguments") from None
            _show(result, as_json)
            return 1 if result.is_error else 0

    try:
        return anyio.run(run)
    except TimeoutError:
        click.echo(f"error: the call did not finish within {timeout:g}s", err=True)
        return 1


def _progress(progress: float, total: float, message: str) -> None:
    click.echo(f"progress {progress:g}{f'/{total:g}' if total else ''} {message}".rstrip(), err=True)


def _show(result: ProtoMcpCallResult, as_json: bool) -> None:
    if as_json:
        shown = {
            "content": [MessageToDict(content) for content in result.content],
            "isError": result.is_error,
            "structured": result.structured,
        }
        click.echo(orjson.dumps(shown, option=orjson.OPT_INDENT_2).decode())
        return
    for content in result.content:
        kind = content.WhichOneof("content")
        if kind == "text":
            click.echo(content.text)
        elif kind == "image":
            click.echo(f"[{content.mime_type}, {len(content.image)} bytes]")
    if result.structured is not None and not result.text:
        click.echo(orjson.dumps(result.structured).decode())
