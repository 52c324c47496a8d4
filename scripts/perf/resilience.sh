#!/usr/bin/env bash
# A flapping upstream under load, with and without the resilience mechanisms (issue 35;
# docs/performance.md): one gateway release binary serves two services in front of the SAME HTTP
# API (tests/fixtures/fault_api.py) in `flap` mode — down (503) for the first DOWN ms of every
# PERIOD ms, measured from the start of each run — and wrk POSTs /call-tool for its `lookup` tool
# over kept-alive connections, each request with a key of its own (scripts/perf/resilience.lua:
# no cache or coalescing can answer it). The variants:
#   bare       the http provider with breaker, retry and cache disabled;
#   resilient  the defaults (the GET tool is read-only by its annotation, so it is retried
#              and shared).
# Per run: requests/s, answered/s (successful answers per second: the fair figure in a closed
# loop, where a fast refusal frees its connection for the next request and so inflates both
# requests/s and the share of errors), p50/p99 of every answer, the errors callers saw (envelopes with
# "success":false, by code) and the calls that reached the upstream (its GET /stats). Any answer
# that is not an envelope, or any socket error, fails the script.
#
#   scripts/perf/resilience.sh [--release-dir DIR] [--duration SECONDS] [--connections C]
#                              [--rounds N] [--period-ms PERIOD] [--down-ms DOWN]
#
# DIR defaults to release/ where cargo puts its builds (build first: cargo build --release -p
# mcp-http-gateway); SECONDS to 12 per run (a multiple of PERIOD keeps every run's share of down
# time the same); C to 32 connections (2 wrk threads); N to 1 round; PERIOD to 4000 and DOWN to
# 1000 (25% of the time down). Needs wrk, jq, curl and python3. Prints Markdown.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
release=""
duration=12
connections=32
rounds=1
period_ms=4000
down_ms=1000
while (($#)); do
  case "$1" in
    --release-dir) release="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --period-ms) period_ms="$2"; shift 2 ;;
    --down-ms) down_ms="$2"; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "resilience: unknown option $1" >&2; exit 2 ;;
  esac
done
for tool in wrk jq curl python3; do
  command -v "$tool" >/dev/null || { echo "resilience: needs $tool" >&2; exit 2; }
done
((down_ms > 0 && down_ms < period_ms)) || { echo "resilience: needs 0 < --down-ms < --period-ms" >&2; exit 2; }
# shellcheck source=scripts/lib/cargo-target.sh
source "$root/scripts/lib/cargo-target.sh"
[ -n "$release" ] || release="$(cargo_target_dir "$root")/release" || exit 2
gateway="$release/mcp-http-gateway"
[ -x "$gateway" ] || { echo "resilience: no binary at $gateway" >&2; exit 2; }
# shellcheck source=scripts/lib/processes.sh
source "$root/scripts/lib/processes.sh"

# The upstream: port 0, so it says which one it took on its first line.
python3 crates/server/tests/fixtures/fault_api.py --port 0 >"$work/api.out" 2>"$work/api.err" &
pids+=("$!")
deadline=$((SECONDS + 10))
until grep -q '^listening on ' "$work/api.out" 2>/dev/null; do
  ((SECONDS <= deadline)) || { echo "resilience: fault_api.py did not start" >&2; cat "$work/api.err" >&2; exit 1; }
  sleep 0.05
done
api="http://127.0.0.1:$(awk 'NR == 1 { print $3 }' "$work/api.out")"
control() { # JSON: sets the upstream's fault
  curl -fsS -X POST "$api/control" -H 'Content-Type: application/json' -d "$1" >/dev/null
}

# service NAME PORT RESILIENCE: a service config with the api provider in front of the upstream.
service() {
  cat >"$work/config/$1.yaml" <<YAML
service: { name: $1, port: $2 }
logging: { level: warn, format: json }
monitoring: { health_check_interval: 60 }
security: { rate_limit: 100000000 }
limits: { call_timeout_ms: 5000, max_concurrent_calls: 1024, queue_depth: 1024 }
dependencies:
  flaky: { kind: http, base_url: "$api", health_path: /health }
providers:
  - name: api
    kind: http
    dependency: flaky
    resilience: $3
    tools:
      - name: lookup
        description: Looks a key up
        input_schema: { type: object, properties: { key: { type: string } }, required: [key] }
        method: GET
        path: /lookup
        query: { key: "{{ key }}" }
YAML
}
mkdir -p "$work/config"
bare_port="$(free_port)" resilient_port="$(free_port)"
service bare "$bare_port" '{ breaker: { enabled: false }, retry: { enabled: false }, cache: { enabled: false } }'
service resilient "$resilient_port" '{}'
if ! checked="$("$gateway" check-config "$work/config" 2>&1)"; then
  echo "resilience: $gateway refuses the benchmark's config; a gateway without the resilience section (issue 35) cannot run it:" >&2
  echo "$checked" >&2
  exit 2
fi

"$gateway" serve --config-dir "$work/config" >"$work/gateway.log" 2>&1 &
gateway_pid="$!"
pids+=("$gateway_pid")
for port in "$bare_port" "$resilient_port"; do
  wait_http "http://127.0.0.1:$port/health" 30 || {
    kill -0 "$gateway_pid" 2>/dev/null || echo "resilience: the gateway exited" >&2
    cat "$work/gateway.log" >&2
    exit 1
  }
done
# Each service answers a call while the upstream is up.
control '{"mode": "ok"}'
for port in "$bare_port" "$resilient_port"; do
  answer="$(curl -sS -X POST "http://127.0.0.1:$port/call-tool" -H 'Content-Type: application/json' \
    -d '{"tool":"lookup","arguments":{"key":"probe"}}')"
  if [ "$(echo "$answer" | jq -r '.success and .data.key == "probe"')" != true ]; then
    echo "resilience: a call through port $port failed with the upstream up: $answer" >&2
    exit 1
  fi
done

run() { # PORT: one wrk run against the flapping upstream; prints the wrk line with the upstream's calls
  local line stats
  control "{\"mode\": \"flap\", \"status\": 503, \"period_ms\": $period_ms, \"down_ms\": $down_ms}"
  curl -fsS -X POST "$api/stats/reset" >/dev/null
  line=$(wrk -t2 -c "$connections" -d "${duration}s" --timeout 10s -s scripts/perf/resilience.lua \
    "http://127.0.0.1:$1" | tail -1)
  stats="$(curl -fsS "$api/stats")"
  if [ "$(echo "$line" | jq '.errors + .bad')" != 0 ]; then
    echo "resilience: socket errors or answers that are not envelopes: $line" >&2
    exit 1
  fi
  echo "$line" | jq -c --argjson stats "$stats" '. + {upstream: $stats}'
}

echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)); wrk $(wrk -v 2>&1 | head -1 | awk '{print $2}'), $connections connections kept alive, ${duration} s per run; POST /call-tool lookup, a key of its own per request, every answer checked. The upstream (fault_api.py) flaps: 503 for the first $down_ms ms of every $period_ms ms."
echo
echo "| round | variant | requests/s | answered/s | p50 ms | p99 ms | errors callers saw | error rate | by code | upstream calls | upstream calls ÷ requests | upstream 503s |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"
for round in $(seq 1 "$rounds"); do
  for variant in bare resilient; do
    case "$variant" in
      bare) line=$(run "$bare_port") ;;
      resilient) line=$(run "$resilient_port") ;;
    esac
    echo "$line" | jq -r --arg round "$round" --arg variant "$variant" '
      def pct: . * 10000 | round / 100;
      "| \($round) | \($variant) | \(.rps) | \(.ok / .requests * .rps | round) | \(.p50_ms) | \(.p99_ms) | \(.failed) | \(.failed / .requests | pct) % | "
      + ([.codes | to_entries[] | select(.value > 0) | "\(.key) \(.value)"] | join(", ") | if . == "" then "none" else . end)
      + " | \(.upstream.calls) | \(.upstream.calls / .requests * 100 | round / 100) | \(.upstream.by_status["503"] // 0) |"'
  done
done
