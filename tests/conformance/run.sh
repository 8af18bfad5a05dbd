#!/usr/bin/env bash
# Runs the official MCP conformance suite (pinned in package.json) against
# `protomcp run examples/tools/everything.py --transport http` on a free loopback port.
# Fails when a scenario fails that is not listed in expected-failures.yml, or when a listed
# one now passes. Usage: tests/conformance/run.sh   (after `npm ci` in tests/conformance)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="$here/node_modules/.bin"
log="$(mktemp)"
cd "$root"
python3 -m protomcp_host run examples/tools/everything.py --transport http --port 0 </dev/null 2>"$log" &
server=$!
trap 'kill -TERM $server 2>/dev/null || true; wait $server 2>/dev/null || true; rm -f "$log"' EXIT
url=""
for _ in $(seq 1 300); do  # up to 30 s for the host to start
  url="$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$log" | head -n1 || true)"
  [ -n "$url" ] && break
  kill -0 $server 2>/dev/null || { cat "$log" >&2; echo "conformance: protomcp did not start" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { cat "$log" >&2; echo "conformance: no URL from protomcp after 30 s" >&2; exit 1; }
timeout 600 "$bin/node" "$bin/conformance" server --url "$url" \
  --expected-failures "$here/expected-failures.yml"
