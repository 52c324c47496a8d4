#!/usr/bin/env bash
# Where the gateway's time goes on a hot route: starts the release gateway with server-everything
# over stdio (the demo service), drives ROUTE with wrk at 100 connections, samples the gateway
# process with `perf record` (Debian's linux-perf) meanwhile, and prints the top symbols by
# their own share of the samples (target/perf/profile-<name>.txt; the raw perf.data beside it
# for `perf report` or a flamegraph).
#
#   scripts/perf/profile.sh tools|echo [--duration SECONDS] [--no-build] [--dwarf]
#
# --dwarf records call graphs from DWARF unwinding (the release build keeps no frame pointers,
# so plain -g stops at the first frame): then `perf report -i target/perf/perf-ROUTE.data
# --children` shows what each function costs with its callees.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
route="${1:-}"
shift || true
duration=10
build=1
call_graph=(-g)
while (($#)); do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --dwarf) call_graph=(--call-graph "dwarf,16384"); shift ;;
    *) echo "profile: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$route" in
  tools) path=/tools; body="" ;;
  echo) path=/call-tool; body='{"tool":"echo","arguments":{"message":"hi"}}' ;;
  -h|--help|"") sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "profile: ROUTE is tools or echo" >&2; exit 2 ;;
esac
command -v perf >/dev/null || { echo "profile: needs perf (Debian package linux-perf)" >&2; exit 2; }
command -v wrk >/dev/null || { echo "profile: needs wrk (Debian package wrk)" >&2; exit 2; }
if ((build)); then cargo build --release --locked -p mcp-http-gateway --bin mcp-http-gateway; fi
# shellcheck source=scripts/lib/cargo-target.sh
source "$root/scripts/lib/cargo-target.sh"
gateway="$(cargo_target_dir "$root")/release/mcp-http-gateway"
# shellcheck source=scripts/lib/processes.sh
source "$root/scripts/lib/processes.sh"
everything_js="$root/.deps/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
config="$work/demo.yaml"
cat >"$config" <<EOF
service: { name: demo, port: $(free_port) }
logging: { level: warn, format: json }   # as goals.sh: the access line is not what is profiled
security: { rate_limit: 100000000 }
limits: { max_concurrent_calls: 1024, queue_depth: 4096 }
providers:
  - { name: everything, kind: mcp, command: node, args: ["$everything_js", stdio] }
EOF
"$gateway" serve --config "$config" >"$work/gateway.log" 2>&1 &
gateway_pid=$!
pids+=("$gateway_pid")
url="http://127.0.0.1:$(port_of "$config")"
wait_http "$url/health" 60
out="$root/target/perf"
mkdir -p "$out"
data="$out/perf-$route.data"
WRK_BODY="$body" wrk -t2 -c100 -d"${duration}s" -s scripts/perf/report.lua "$url$path" >"$work/wrk.txt" &
wrk_pid=$!
perf record -F 999 "${call_graph[@]}" -o "$data" -p "$gateway_pid" -- sleep "$((duration - 1))" 2>/dev/null
wait "$wrk_pid"
{
  echo "# perf: $route ($path), wrk 100 connections, ${duration} s; $(tail -1 "$work/wrk.txt")"
  perf report -i "$data" --no-children --sort symbol --percent-limit 0.7 --stdio 2>/dev/null \
    | grep -E "^ +[0-9]+\.[0-9]+%" | sed -E "s/ +-? +-? *$//" | head -30
} | tee "$out/profile-$route.txt"
