"""`protomcp call`: one call of a tool (or a read of a resource, or a prompt rendered) from
the command line, its result printed."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import Any

import click

from protomcp_host.cli.loading import source_files, with_client
from protomcp_host.cli.options import PYTHON, SOURCE_OPTIONS, UPSTREAM_OPTIONS, upstream_specs
from protomcp_host.settings import RunSettings


@click.command()
@click.argument("words", nargs=-1, metavar="[FILE] TOOL [KEY=VALUE]...")
@SOURCE_OPTIONS
@click.option(
    "--args", "args", default="{}", show_default=True, help="Arguments as a JSON object, e.g. '{\"a\": 1}'."
)
@click.option("--json", "as_json", is_flag=True, help="Print the full MCP CallToolResult as JSON.")
@click.option(
    "--call-timeout",
    default=RunSettings.call_timeout,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds the call may run before it is cancelled and reported as an error (0 = no limit).",
)
@click.option(
    "--binary",
    is_flag=True,
    help="Call over proto-mcp instead of JSON-RPC: start `protomcp run` on the files and "
    "send the arguments as the tool's protobuf message (--json prints the result's content, isError "
    "and structured data).",
)
@UPSTREAM_OPTIONS
@PYTHON
def call(
    words: tuple[str, ...],
    modules: tuple[str, ...],
    plugins: tuple[str, ...],
    args: str,
    as_json: bool,
    call_timeout: float,
    binary: bool,
    python: str,
    upstreams: tuple[str, ...],
    upstream_token_envs: tuple[str, ...],
    upstream_prefixes: tuple[str, ...],
) -> None:
    """Call TOOL from FILE (or from -m MODULE / --plugin NAME / --upstream, then without FILE)
    once and print its result (exit status 1 if it is an error).

    Arguments are KEY=VALUE pairs (VALUE is read as JSON, e.g. n=3 or tags='["a"]', except
    for text parameters) and/or --args JSON. Progress and log messages go to stderr. A URI
    instead of TOOL reads that resource (`call tools.py config://app`); a prompt's name
    renders the prompt (its KEY=VALUE arguments are text).
    """
    from protomcp_host.cli.reading import is_uri
    from protomcp_host.cli.show import CallDisplay

    specs = upstream_specs(upstreams, upstream_token_envs, upstream_prefixes)
    files: tuple[Path, ...] = ()
    if not (modules or plugins or specs) or (
        len(words) > 1 and "=" not in words[0] and Path(words[0]).exists()
    ):
        files, words = tuple(Path(w) for w in words[:1]), words[1:]
    if not words:
        raise click.UsageError("missing TOOL (give FILE TOOL, or -m MODULE TOOL)")
    tool, pairs = words[0], words[1:]
    sources = (
        source_files(files, modules, plugins, python) if files or modules or plugins or not specs else []
    )
    arguments = _json_object(args)
    if binary:
        if specs or is_uri(tool):
            raise click.UsageError("--binary calls a tool of FILES (no --upstream, no resource URI)")
        from protomcp_host.cli.binary_call import call_binary

        sys.exit(call_binary(sources, tool, pairs, arguments, as_json, call_timeout or None, python))
    display = CallDisplay(tool)
    # what the call prints reaches the display as log messages: shown once, not echoed on stderr
    settings = RunSettings(python=python, upstreams=specs, call_timeout=call_timeout, echo_requests=False)
    once = partial(_call_once, tool, pairs, arguments, sources, display)
    kind, result = with_client(sources, settings, once, on_message=display)
    _show_result(kind, result, as_json)


def _json_object(text: str) -> dict[str, Any]:
    """--args: a JSON object."""
    import orjson

    try:
        arguments = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint="--args") from None
    if not isinstance(arguments, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--args")
    return arguments


async def _call_once(
    tool: str,
    pairs: tuple[str, ...],
    given: dict[str, Any],
    sources: list[Path],
    display: Any,
    request: Any,
) -> tuple[str, dict[str, Any]]:
    """`protomcp call`: read the resource `tool` names, or call the tool, or (no such tool)
    render the prompt of that name. `given`: the --args object."""
    from protomcp_host.cli.reading import find_prompt, is_uri, prompt_arguments
    from protomcp_host.cli.show import parse_pairs
    from protomcp_host.transports.direct import RequestFailed, list_tools

    if is_uri(tool):  # a resource: read it
        if pairs or given:
            raise click.UsageError("a resource URI takes no arguments")
        return "resource", await request("resources/read", {"uri": tool})
    arguments = dict(given)
    if pairs:
        schemas = {entry["name"]: entry.get("inputSchema", {}) for entry in await list_tools(request)}
        try:
            arguments.update(parse_pairs(pairs, schemas.get(tool, {})))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="KEY=VALUE") from None
    params = {"name": tool, "arguments": arguments, "_meta": {"progressToken": 1}}
    try:
        return "tool", await request("tools/call", params)
    except RequestFailed as exc:
        if not str(exc).startswith("Unknown tool"):
            raise click.ClickException(str(exc)) from None
        if await find_prompt(request, tool) is not None:  # a prompt: render it
            try:
                texts = prompt_arguments(pairs, given)
            except ValueError as problem:
                raise click.BadParameter(str(problem), param_hint="KEY=VALUE") from None
            return "prompt", await request("prompts/get", {"name": tool, "arguments": texts})
        from protomcp_host.cli.undecorated import undecorated_hint

        hint = undecorated_hint(sources, tool)
        raise click.ClickException(f"{exc} ({hint})" if hint else str(exc)) from None
    finally:
        display.close()


def _show_result(kind: str, result: dict[str, Any], as_json: bool) -> None:
    """Print what `protomcp call` got; exit status 1 for a tool's error."""
    import orjson

    from protomcp_host.cli.reading import contents_text, messages_text

    if as_json:
        click.echo(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    elif kind == "resource":
        click.echo("\n".join(contents_text(result)))
    elif kind == "prompt":
        click.echo("\n".join(messages_text(result, _describe_block)))
    else:
        for block in result.get("content", []):
            click.echo(_describe_block(block))
    sys.exit(1 if result.get("isError") else 0)


def _describe_block(block: dict[str, Any]) -> str:
    import orjson

    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        return f"[{kind} {block.get('mimeType')}, {len(block.get('data', '')) * 3 // 4} bytes]"
    if kind == "resource_link":
        return f"[resource link {block.get('uri')}]"
    if kind == "resource":
        resource = block.get("resource", {})
        return resource.get("text") or f"[resource {resource.get('uri')}]"
    return orjson.dumps(block).decode()
