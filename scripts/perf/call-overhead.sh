#!/usr/bin/env bash
# Measures what the gateway adds to one admitted tool call, at the 50th and 99th percentile: the
# same call (server-everything's `echo`, one stdio child) made one at a time through the gateway
# (wrk, 1 connection, POST /call-tool) and straight to the MCP server (rmcp client, example
# mcp_direct), in the same run (docs/performance.md, "Overhead per admitted call").
#
#   scripts/perf/call-overhead.sh [--release-dir DIR] [--duration SECONDS] [--rounds N]
#
# DIR defaults to release/ where cargo puts its builds (CARGO_TARGET_DIR counts), holding
# mcp-http-gateway and examples/mcp_direct (build them first: cargo build --release -p
# mcp-http-gateway -p loadtest --examples; this script builds nothing); SECONDS to 10 per run;
# N to 2 rounds (gateway, direct, gateway, direct, …), so a disturbance of the shared machine
# shows as a disagreement between rounds. Prints Markdown.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
release=""
duration=10
rounds=2
while (($#)); do
  case "$1" in
    --release-dir) release="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "call-overhead: unknown option $1" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null || { echo "call-overhead: needs wrk (Debian package wrk)" >&2; exit 2; }
# shellcheck source=scripts/lib/cargo-target.sh
source "$root/scripts/lib/cargo-target.sh"
[ -n "$release" ] || release="$(cargo_target_dir "$root")/release" || exit 2
for bin in "$release/mcp-http-gateway" "$release/examples/mcp_direct"; do
  [ -x "$bin" ] || { echo "call-overhead: no binary at $bin" >&2; exit 2; }
done
# shellcheck source=scripts/lib/processes.sh
source "$root/scripts/lib/processes.sh"
everything="$root/.deps/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

port="$(free_port)"
cat >"$work/overhead.yaml" <<YAML
service: { name: overhead, port: $port }
logging: { level: warn, format: json }
security: { rate_limit: 10000000 }
providers:
  - { name: everything, kind: mcp, command: node, args: ["$everything", stdio] }
YAML
"$release/mcp-http-gateway" serve --config "$work/overhead.yaml" >"$work/gateway.log" 2>&1 &
pids+=("$!")
wait_http "http://127.0.0.1:$port/health" 30 || { cat "$work/gateway.log" >&2; exit 1; }

echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)); wrk $(wrk -v 2>&1 | head -1 | awk '{print $2}'); ${duration} s per run."
echo
echo "| round | path | calls/s | p50 ms | p99 ms |"
echo "|---:|---|---:|---:|---:|"
for round in $(seq 1 "$rounds"); do
  line=$(WRK_BODY='{"tool":"echo","arguments":{"message":"hi"}}' \
    wrk -t1 -c1 -d "${duration}s" -s scripts/perf/report.lua "http://127.0.0.1:$port/call-tool" | tail -1)
  echo "| $round | gateway (POST /call-tool) | $(echo "$line" | jq -r '"\(.rps) | \(.p50_ms) | \(.p99_ms)"') |"
  direct=$("$release/examples/mcp_direct" 1 "$duration" echo '{"message":"hi"}' -- node "$everything" stdio 2>/dev/null | tail -1)
  # "N calls in S s at concurrency 1: R calls/s, p50 A ms, p95 B ms, p99 C ms"
  echo "$direct" | sed -E 's/.*: ([0-9.]+) calls\/s, p50 ([0-9.]+) ms, p95 [0-9.]+ ms, p99 ([0-9.]+) ms.*/| '"$round"' | direct (rmcp client) | \1 | \2 | \3 |/'
done
