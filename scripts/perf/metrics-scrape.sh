#!/usr/bin/env bash
# Measures what a Prometheus scrape of GET /metrics costs with 100 tools, against GET /health
# and GET /tools of the same service in the same run (docs/performance.md, "Metrics scrape").
# The service has one `http` provider with 100 tools (t000…t099) on an `http` dependency that is
# the service itself (each tool GETs its /tools; /health of /health would wait on itself), so no other process competes for the cores;
# every tool is called once first, so each has its series filled.
#
#   scripts/perf/metrics-scrape.sh [--binary PATH] [--duration SECONDS]
#
# PATH defaults to release/mcp-http-gateway where cargo puts its builds (CARGO_TARGET_DIR
# counts; build it first: this script builds nothing); SECONDS to 10 per wrk run. Prints a
# Markdown table.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
gateway=""
duration=10
while (($#)); do
  case "$1" in
    --binary) gateway="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "metrics-scrape: unknown option $1" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null || { echo "metrics-scrape: needs wrk (Debian package wrk)" >&2; exit 2; }
# shellcheck source=scripts/lib/cargo-target.sh
source "$root/scripts/lib/cargo-target.sh"
[ -n "$gateway" ] || gateway="$(cargo_target_dir "$root")/release/mcp-http-gateway" || exit 2
[ -x "$gateway" ] || { echo "metrics-scrape: no binary at $gateway" >&2; exit 2; }
# shellcheck source=scripts/lib/processes.sh
source "$root/scripts/lib/processes.sh"

port="$(free_port)"
config="$work/metered.yaml"
{
  cat <<YAML
service: { name: metered, port: $port }
logging: { level: warn, format: json }
monitoring: { metrics_enabled: true }
dependencies:
  self: { kind: http, base_url: "http://127.0.0.1:$port", health_path: /tools }
providers:
  - name: hundred
    kind: http
    dependency: self
    tools:
YAML
  for i in $(seq -w 0 99); do
    echo "      - { name: t0$i, description: Tool $i, input_schema: { type: object }, path: /tools }"
  done
} >"$config"

"$gateway" serve --config "$config" >"$work/gateway.log" 2>&1 &
pids+=("$!")
wait_http "http://127.0.0.1:$port/health" 30 || { cat "$work/gateway.log" >&2; exit 1; }
for i in $(seq -w 0 99); do
  curl -fsS -o /dev/null -X POST "http://127.0.0.1:$port/tools/t0$i"
done
curl -fsS "http://127.0.0.1:$port/metrics" >"$work/metrics.txt"
tools=$(curl -fsS "http://127.0.0.1:$port/tools" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]["tools"]))')

echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)); wrk $(wrk -v 2>&1 | head -1 | awk '{print $2}'); ${duration} s per run; $tools tools."
echo "/metrics: $(wc -c <"$work/metrics.txt") bytes, $(grep -vc '^#' "$work/metrics.txt") samples."
echo
echo "| request | connections | req/s | p50 ms | p95 ms | p99 ms | errors |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for connections in 1 10; do
  threads=$((connections < 2 ? 1 : 2))
  for path in /health /tools /metrics; do
    line=$(WRK_BODY='' wrk -t"$threads" -c"$connections" -d"${duration}s" -s scripts/perf/report.lua \
      "http://127.0.0.1:$port$path" | tail -1)
    python3 - "$path" "$connections" "$line" <<'PY'
import json, sys
path, connections, r = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
print(f"| GET {path} | {connections} | {r['rps']:,.0f} | {r['p50_ms']:.3f} | {r['p95_ms']:.3f} | {r['p99_ms']:.3f} | {r['errors']} |".replace(",", " "))
PY
  done
done
