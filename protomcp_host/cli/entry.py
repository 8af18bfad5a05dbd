"""The `protomcp` command's entry point.

`protomcp run FILE...` with no options (the form AI clients' configs hold) starts its tool
processes here, before the CLI (click, every command's options) and the host are imported,
so the tool processes boot while this one does. Anything else goes to the CLI as typed.
"""

from __future__ import annotations

import sys


def main() -> None:
    args = sys.argv[1:]
    if len(args) >= 2 and args[0] == "run" and not any(arg.startswith("-") for arg in args[1:]):
        from protomcp_host.processes import launch

        launch.prestart(args[1:])
    from protomcp_host.cli.main import main as cli

    cli()
