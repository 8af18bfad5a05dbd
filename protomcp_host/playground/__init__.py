"""The dev playground (`protomcp dev --ui`): a page on loopback that is a real MCP client of
the host (its own session), plus a read-only view of the other sessions' messages and the
host's reloads, load errors and crashes. Sits on top, beside cli: may import app and the
layers below; only cli imports it. Static files (no build step) live in static/."""
