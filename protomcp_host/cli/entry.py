"""The `protomcp` command's entry point.

`protomcp run FILE...` with no options (the form AI clients' configs hold) starts its tool
processes here, before the host is imported, so the tool processes boot while this one does;
then it is served by cli/serving.py without the CLI (click and every command's options are
never imported: ~1.4 MB less for the host's whole life). Anything else goes to the CLI as typed.
"""

from __future__ import annotations

import sys


def main() -> None:
    args = sys.argv[1:]
    if len(args) >= 2 and args[0] == "run" and not any(arg.startswith("-") for arg in args[1:]):
        from protomcp_host.processes import launch

        launch.prestart(args[1:])
        from protomcp_host.cli.serving import serve_plain

        serve_plain(args[1:])
        return
    from protomcp_host.cli.main import main as cli

    cli()
