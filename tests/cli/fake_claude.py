"""A stand-in for the Claude Code CLI's `claude mcp add|add-json|remove`, parsing arguments as the real
one does (commander.js): options may come anywhere before `--`; `-e/--env` is variadic, so it
takes every following word that is not an option (a name after it included); `--` ends options.
Servers are kept in the JSON file $FAKE_CLAUDE_CONFIG, per scope. The messages are the real
CLI's (recorded from Claude Code 2.x)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def fail(message: str) -> None:
    print(message, file=sys.stderr)
    sys.exit(1)


def parse(words: list[str]) -> tuple[list[str], dict[str, object]]:
    positionals: list[str] = []
    options: dict[str, object] = {"scope": "local", "env": []}
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            positionals += words[i + 1 :]
            break
        if word in ("-s", "--scope"):
            options["scope"] = words[i + 1]
            i += 2
        elif word in ("-e", "--env"):
            i += 1
            while i < len(words) and not words[i].startswith("-"):
                options["env"].append(words[i])  # type: ignore[union-attr]
                i += 1
        elif word.startswith("-") and word != "-":  # (a lone `-` is an argument: standard input)
            fail(f"error: unknown option '{word}'")
        else:
            positionals.append(word)
            i += 1
    if options["scope"] not in ("local", "user", "project"):
        fail(f"Invalid scope: {options['scope']}. Must be one of: local, user, project")
    return positionals, options


def main() -> None:
    store = Path(os.environ["FAKE_CLAUDE_CONFIG"])
    config = json.loads(store.read_text()) if store.exists() else {}
    if sys.argv[1:2] != ["mcp"] or len(sys.argv) < 3:
        fail("fake claude: only `claude mcp add|add-json|remove` are supported")
    command = sys.argv[2]
    positionals, options = parse(sys.argv[3:])
    scope = str(options["scope"])
    servers = config.setdefault(scope, {})
    if command == "add":
        env: dict[str, str] = {}
        for pair in options["env"]:  # type: ignore[union-attr]
            key, equals, value = pair.partition("=")
            if not equals or not key:
                fail(
                    f"Invalid environment variable format: {pair}, "
                    "environment variables should be added as: -e KEY1=value1 -e KEY2=value2"
                )
            env[key] = value
        if len(positionals) < 2:
            fail("error: missing required argument 'commandOrUrl'")
        name, command_line = positionals[0], positionals[1:]
        if name in servers:
            fail(f"MCP server {name} already exists in {scope} config")
        servers[name] = {"type": "stdio", "command": command_line[0], "args": command_line[1:], "env": env}
        store.write_text(json.dumps(config))
        print(f"Added stdio MCP server {name} with command: {' '.join(command_line)} to {scope} config")
    elif command == "add-json":  # `-` reads the JSON from standard input
        if len(positionals) != 2:
            fail("error: missing required argument 'json'")
        name, text = positionals[0], sys.stdin.read() if positionals[1] == "-" else positionals[1]
        if name in servers:
            fail(f"MCP server {name} already exists in {scope} config")
        servers[name] = json.loads(text)
        store.write_text(json.dumps(config))
        print(f"Added stdio MCP server {name} to {scope} config")
    elif command == "remove":
        if len(positionals) != 1:
            fail("error: missing required argument 'name'")
        if positionals[0] not in servers:
            fail(f'No MCP server named "{positionals[0]}" in {scope} scope')
        del servers[positionals[0]]
        store.write_text(json.dumps(config))
        print(f"Removed MCP server {positionals[0]} from {scope} config")
    else:
        fail(f"fake claude: unsupported command {command}")


if __name__ == "__main__":
    main()
