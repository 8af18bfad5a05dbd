"""The `protomcp` command: the group of every subcommand (each module holds a few, by concern)."""

from __future__ import annotations

import click

from protomcp_host import __version__
from protomcp_host.cli.call_command import call
from protomcp_host.cli.catalog_commands import inspect_command, list_command, plugins, proto_schema_command
from protomcp_host.cli.client_commands import doctor, install, pack, uninstall
from protomcp_host.cli.registry_command import registry
from protomcp_host.cli.serve_commands import dev, logs, run


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="protomcp")
def main() -> None:
    """protomcp: serve Python functions as MCP tools to Claude Desktop, Claude Code, Cursor or VS Code.

    Write a tool file with @tool functions, then point your AI client at
    `protomcp run /abs/path/tools.py` (or use `protomcp dev` while you edit it).
    """


for command in (run, dev, logs, list_command, inspect_command, proto_schema_command, plugins, call):
    main.add_command(command)
for command in (install, uninstall, pack, registry, doctor):
    main.add_command(command)


if __name__ == "__main__":
    main()
