#!/usr/bin/env bash
# Runs the official MCP conformance suite (pinned in package.json) against
# `protomcp run examples/tools/everything.py --transport http` on a free loopback port, a fresh
# host for each run:
#   1. @modelcontextprotocol/conformance 0.1.16, its active server scenarios: fails when a
#      scenario fails that is not listed in expected-failures.yml, or when a listed one now passes.
#   2. 0.2.0-alpha.12 (the `conformance-next` alias) --requirements 2025-11-25, judged by
#      expected-failures-2025-11-25.yml.
#   3. 0.2.0-alpha.12 --requirements 2026-07-28, judged by expected-failures-2026-07-28.yml
#      (PROTOMCP_CONFORMANCE_2026=0 skips it).
#   4. 0.2.0-alpha.12, the skills extension's server scenarios (sep-2640-*, on no revision's
#      list) against a host that also serves --skills examples/skills, once per era; judged by
#      expected-failures-skills.yml (empty: a FAILURE or WARNING check fails the run).
# Under --requirements the suite scores only the revision's required scenarios (its
# --expected-failures judges those: the file's `server:` list); the scenarios it runs but does
# not score (extension, pending: tasks-*, json-schema-2020-12, header validation...) are judged
# by not_scored.py against the file's `not_scored:` list. Every run is made, then the script
# fails if any failed. Usage: tests/conformance/run.sh   (after `npm ci` in tests/conformance)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="$here/node_modules/.bin"
next="$here/node_modules/conformance-next/dist/index.js"  # 0.2.0-alpha.12 (npm alias)
work="$(mktemp -d)"
server=""
stop_host() {
  if [ -n "$server" ]; then
    kill -TERM "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=""
  fi
}
trap 'stop_host; rm -rf "$work"' EXIT
cd "$root"

# Starts a host on a free port (start_host NAME [more run options]); sets $url.
start_host() {
  local log="$work/host-$1.log"
  shift
  python3 -m protomcp_host run examples/tools/everything.py "$@" --transport http --port 0 </dev/null 2>"$log" &
  server=$!
  url=""
  for _ in $(seq 1 300); do  # up to 30 s for the host to start
    url="$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$log" | head -n1 || true)"
    [ -n "$url" ] && break
    kill -0 "$server" 2>/dev/null || { cat "$log" >&2; echo "conformance: protomcp did not start" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$url" ] || { cat "$log" >&2; echo "conformance: no URL from protomcp after 30 s" >&2; exit 1; }
}

failed=()

# 1. 0.1.16, as before.
echo "== conformance 0.1.16: active server scenarios"
start_host 0.1.16
timeout 600 "$bin/node" "$bin/conformance" server --url "$url" \
  --expected-failures "$here/expected-failures.yml" || failed+=("0.1.16")
stop_host

# 2, 3. 0.2.0-alpha.12, one run per revision.
run_requirements() {
  local revision="$1" expected="$here/expected-failures-$1.yml" out="$work/results-$1"
  echo "== conformance 0.2.0-alpha.12: --requirements $revision"
  "$bin/node" "$next" list --requirements "$revision" >"$work/list-$revision.txt"
  start_host "$revision"
  timeout 600 "$bin/node" "$next" server --url "$url" --requirements "$revision" \
    --expected-failures "$expected" -o "$out" || failed+=("$revision (scored)")
  stop_host
  python3 "$here/not_scored.py" --revision "$revision" --list "$work/list-$revision.txt" \
    --results "$out" --expected "$expected" || failed+=("$revision (not scored)")
}
run_requirements 2025-11-25
if [ "${PROTOMCP_CONFORMANCE_2026:-1}" = 1 ]; then
  run_requirements 2026-07-28
else
  echo "== conformance 0.2.0-alpha.12: --requirements 2026-07-28 skipped (PROTOMCP_CONFORMANCE_2026=0)"
fi

# 4. The skills extension (SEP-2640): extension scenarios run at 2026-07-28 by default; --force
# runs them on the 2025-11-25 wire too.
echo "== conformance 0.2.0-alpha.12: skills extension (sep-2640-*), both eras"
start_host skills --skills examples/skills
for scenario in sep-2640-skills-enumeration sep-2640-skills-manifest sep-2640-skills-directory; do
  timeout 600 "$bin/node" "$next" server --url "$url" --scenario "$scenario" \
    --expected-failures "$here/expected-failures-skills.yml" || failed+=("$scenario (2026-07-28)")
  timeout 600 "$bin/node" "$next" server --url "$url" --scenario "$scenario" --spec-version 2025-11-25 \
    --force --expected-failures "$here/expected-failures-skills.yml" || failed+=("$scenario (2025-11-25)")
done
stop_host

if [ ${#failed[@]} -gt 0 ]; then
  echo "conformance: failed: ${failed[*]}" >&2
  exit 1
fi
echo "conformance: all runs passed"
