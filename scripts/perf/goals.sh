#!/usr/bin/env bash
# The goals of the hot path and the child pools (docs/performance.md, "Goals"), each a ratio of
# two measurements made in this one run on this machine, so the machine's speed cancels out:
#  1. echo through the gateway (wrk, 100 connections, POST /call-tool, server-everything over
#     one stdio child) against the same server's own ceiling over one child, driven directly by
#     an MCP client (example mcp_direct, rmcp, 100 callers): goal ≥ 0.80;
#  2. GET /tools (server-everything's tools and mcp-server-time's) against a bare axum handler
#     answering the same `data` bytes with a fresh request id and timestamp (example
#     hello_axum), 100 connections: goal ≥ 0.60, with the gateway's p99 < 5 ms;
#  3. get_current_time through a pool of two mcp-server-time children (`instances: 2`) against
#     one child, wrk at 100 connections: goal ≥ 1.6.
# Prints a Markdown table (also to target/perf/goals.md) and exits 1 when a goal is missed,
# unless --report-only.
#
#   scripts/perf/goals.sh [--duration SECONDS] [--no-build] [--report-only]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
duration=10
build=1
strict=1
while (($#)); do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --report-only) strict=0; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "goals: unknown option $1" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null || { echo "goals: needs wrk (Debian package wrk)" >&2; exit 2; }
command -v jq >/dev/null || { echo "goals: needs jq" >&2; exit 2; }

if ((build)); then
  cargo build --release --locked -p mcp-http-gateway --bin mcp-http-gateway
  cargo build --release --locked -p loadtest --example hello_axum --example mcp_direct
fi
release="${CARGO_TARGET_DIR:-$root/target}/release"
gateway="$release/mcp-http-gateway"
# shellcheck source=scripts/lib/processes.sh
source "$root/scripts/lib/processes.sh"
everything_js="$root/.deps/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
time_bin="$root/.deps/venv/bin/mcp-server-time"
[[ -f "$everything_js" && -x "$time_bin" ]] || { echo "goals: run scripts/install-mcp-servers.sh first" >&2; exit 2; }
mkdir -p "$root/target/perf"
report="$root/target/perf/goals.md"

# service NAME PROVIDERS_YAML: a config on a free port; prints its path.
service() {
  local file="$work/$1.yaml"
  cat >"$file" <<EOF
service: { name: $1, port: $(free_port) }
logging: { level: warn, format: json }
security: { rate_limit: 100000000 }
limits: { max_concurrent_calls: 1024, queue_depth: 4096 }
providers:
$2
EOF
  echo "$file"
}
# start CONFIG VAR: serves it until the script ends (in this shell, so that the exit trap
# stops it); sets VAR to its URL once healthy.
start() {
  "$gateway" serve --config "$1" >"$1.log" 2>&1 &
  pids+=($!)
  local url
  url="http://127.0.0.1:$(port_of "$1")"
  wait_http "$url/health" 60 || { echo "goals: $1 did not start" >&2; cat "$1.log" >&2; exit 1; }
  printf -v "$2" '%s' "$url"
}
# wrk_json URL [BODY]: one wrk run at 100 connections; its JSON line.
wrk_json() {
  WRK_BODY="${2:-}" wrk -t2 -c100 -d"${duration}s" -s scripts/perf/report.lua "$1" | tail -1
}
ratio() { jq -n --argjson a "$1" --argjson b "$2" '($a / $b * 100 | round) / 100'; }
verdict() { # RATIO GOAL [EXTRA_OK]
  if jq -en --argjson r "$1" --argjson g "$2" '$r >= $g' >/dev/null && [[ "${3:-true}" == true ]]; then echo met; else echo MISSED; fi
}

demo="$(service demo "  - { name: everything, kind: mcp, command: node, args: [\"$everything_js\", stdio] }
  - { name: time, kind: mcp, command: \"$time_bin\", args: [--local-timezone, UTC] }")"
pooled="$(service pooled "  - { name: time, kind: mcp, command: \"$time_bin\", args: [--local-timezone, UTC], instances: 2 }")"
demo_url="" pooled_url=""
start "$demo" demo_url
start "$pooled" pooled_url
curl -fsS "$demo_url/tools" | jq -cj .data >"$work/tools-data.json"
hello_port="$(free_port)"
"$release/examples/hello_axum" "$hello_port" "$work/tools-data.json" &
pids+=($!)
wait_http "http://127.0.0.1:$hello_port/" 10

# 1. echo: the gateway against the server's own one-child ceiling.
echo_gw="$(wrk_json "$demo_url/call-tool" '{"tool":"echo","arguments":{"message":"hi"}}')"
echo_direct="$("$release/examples/mcp_direct" 100 "$duration" echo '{"message":"hi"}' -- node "$everything_js" stdio 2>/dev/null | tail -1)"
echo_direct_rps="$(sed -E 's/.*: ([0-9]+) calls\/s.*/\1/' <<<"$echo_direct")"
# 2. GET /tools against the bare handler with the same bytes.
tools_hello="$(wrk_json "http://127.0.0.1:$hello_port/")"
tools_gw="$(wrk_json "$demo_url/tools")"
# 3. a pool of two mcp-server-time children against one.
time_body='{"tool":"get_current_time","arguments":{"timezone":"UTC"}}'
time_one="$(wrk_json "$demo_url/call-tool" "$time_body")"
time_two="$(wrk_json "$pooled_url/call-tool" "$time_body")"

rps() { jq -r .rps <<<"$1"; }
errors() { jq -r .errors <<<"$1"; }
echo_ratio="$(ratio "$(rps "$echo_gw")" "$echo_direct_rps")"
tools_ratio="$(ratio "$(rps "$tools_gw")" "$(rps "$tools_hello")")"
tools_p99="$(jq -r .p99_ms <<<"$tools_gw")"
p99_ok="$(jq -n --argjson p "$tools_p99" '$p < 5')"
pool_ratio="$(ratio "$(rps "$time_two")" "$(rps "$time_one")")"
all_errors=$(( $(errors "$echo_gw") + $(errors "$tools_gw") + $(errors "$tools_hello") + $(errors "$time_one") + $(errors "$time_two") ))
{
  echo "## Goals ($(date -u +%Y-%m-%dT%H:%M:%SZ); $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); ${duration} s per run, 100 connections)"
  echo
  echo "| goal | measured | reference | ratio | goal | verdict |"
  echo "|---|---|---|---:|---:|---|"
  echo "| echo through the gateway vs server-everything's own one-child ceiling | $(rps "$echo_gw") req/s (p99 $(jq -r .p99_ms <<<"$echo_gw") ms) | $echo_direct_rps calls/s (mcp_direct) | $echo_ratio | ≥ 0.80 | $(verdict "$echo_ratio" 0.8) |"
  echo "| GET /tools vs bare axum, same bytes, fresh id and timestamp | $(rps "$tools_gw") req/s (p99 $tools_p99 ms) | $(rps "$tools_hello") req/s (p99 $(jq -r .p99_ms <<<"$tools_hello") ms) | $tools_ratio | ≥ 0.60, p99 < 5 ms | $(verdict "$tools_ratio" 0.6 "$p99_ok") |"
  echo "| get_current_time, instances: 2 vs one child | $(rps "$time_two") req/s (p99 $(jq -r .p99_ms <<<"$time_two") ms) | $(rps "$time_one") req/s (p99 $(jq -r .p99_ms <<<"$time_one") ms) | $pool_ratio | ≥ 1.6 | $(verdict "$pool_ratio" 1.6) |"
  echo
  echo "Errors (socket errors and non-2xx answers) over every wrk run: $all_errors. GET /tools answers $(wc -c <"$work/tools-data.json") bytes of data."
} | tee "$report"
if ((strict)) && grep -q MISSED "$report"; then exit 1; fi
if ((strict)) && ((all_errors > 0)); then echo "goals: $all_errors errors" >&2; exit 1; fi
