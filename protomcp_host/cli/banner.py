"""What `protomcp run`/`dev` print for a person at a terminal: what is served, and the
client entry that serves it."""

from __future__ import annotations

import orjson

from protomcp_host import __version__
from protomcp_host.app import Host
from protomcp_host.cli.install import default_name, server_entry
from protomcp_host.processes.launch import label_of
from protomcp_host.tool_events import plural


def banner(host: Host, url: str | None, reload: bool, token_env: str | None = None) -> str:
    """`token_env`: the variable --auth-token-env names (the entries then send its token)."""
    if url is None:
        return stdio_banner(host, reload)
    return http_banner(host, url, reload, token_env) + _sign_in_lines(host)


def _sign_in_lines(host: Host) -> str:
    """--oauth-provider: where clients come in, and the redirect URI the provider must know."""
    server = host.settings.oauth_server
    if server is None:
        return ""
    return (
        f"\nOAuth: clients connect to {server.resource} (in place of the address above) and sign in "
        f"there; register {server.callback_url} as the redirect URI of the app at the identity provider."
    )


def _skills_line(host: Host) -> list[str]:
    """--skills: the skills served beside the tools."""
    skills = host.features.skills
    if skills is None:
        return []
    return [f"  and {plural(len(skills), 'skill')}: {', '.join(skill.name for skill in skills.ordered())}"]


def stdio_banner(host: Host, reload: bool) -> str:
    """What a person who started protomcp in a terminal needs to know."""
    entry = {"mcpServers": {default_name(host.files): server_entry(host.files, dev=reload)}}
    files = ", ".join(map(label_of, host.files))
    lines = [
        f"protomcp {__version__}: serving {plural(len(host.catalog), 'tool')} from {files}",
        f"  {', '.join(host.catalog.names())}",
        *_skills_line(host),
        f"Install it in a client with `protomcp install claude-desktop {' '.join(map(str, host.files))}"
        f"{' --dev' if reload else ''}` (or claude-code, cursor, vscode, gemini-cli, goose). "
        "The entry it writes:",
        "  " + orjson.dumps(entry).decode(),
    ]
    if reload:
        lines.append(
            "Watching for changes: save a tool file and its process reloads; edited tool bodies work at "
            "once in every client. Added or removed tools reach Claude Code, VS Code and Gemini CLI "
            "(they follow tools/list_changed); Claude Desktop and Cursor need a restart (Cursor: refresh "
            "the server in its MCP settings)."
        )
    lines.append(
        "This terminal is now the MCP stdio channel (clients start protomcp themselves). Ctrl+C quits."
    )
    return "\n".join(lines)


def http_banner(host: Host, url: str, reload: bool, token_env: str | None = None) -> str:
    """The URL, and ready entries for clients configured by URL (with the bearer token, read
    from the client's environment, when the server requires one)."""
    name = default_name(host.files)
    files = ", ".join(map(label_of, host.files))
    kind = "sse" if url.endswith("/sse") else "http"
    entry: dict[str, object] = {"type": kind, "url": url}
    claude = f"claude mcp add --transport {kind} {name} {url}"
    if token_env:
        # ${env:NAME} is how Cursor and VS Code read a variable in mcp.json; the shell expands $NAME.
        entry["headers"] = {"Authorization": f"Bearer ${{env:{token_env}}}"}
        claude += f' --header "Authorization: Bearer ${token_env}"'
    where = "Cursor, VS Code" if token_env else "Cursor, VS Code, Claude Code's .mcp.json"
    lines = [
        f"protomcp {__version__}: serving {plural(len(host.catalog), 'tool')} from {files} at {url}",
        f"  {', '.join(host.catalog.names())}",
        *_skills_line(host),
        f'Add to a client config under "mcpServers" ({where}):',
        "  " + orjson.dumps({name: entry}).decode(),
        f"Claude Code: {claude}",
    ]
    if token_env:
        lines.append(
            f"Clients must send 'Authorization: Bearer <token>' with the value of ${token_env}: set "
            f"{token_env} where the client runs (or paste the token in place of the variable)."
        )
    if reload:
        lines.append("Watching for changes: save a tool file and every session sees the new tools.")
    lines.append("SIGTERM or Ctrl+C stops the server (in-flight calls finish first).")
    return "\n".join(lines)
