#!/usr/bin/env bash
# Reproduces the numbers of docs/performance.md on this machine: builds the release binaries,
# starts ArcadeDB (fixture graph) and the services on free loopback ports, then measures
#  - wrk (an independent client) at 1, 10, 100 connections: GET /tools, GET /health, POST
#    /call-tool through the stdio MCP bridge (server-everything's echo, mcp-server-time's
#    get_current_time) and through the Cypher provider (list_projects on ArcadeDB);
#  - the same tool calls made directly against the MCP servers (rmcp client, example
#    mcp_direct), so the gateway's own overhead is a number;
#  - a bare axum server (example hello_axum) as the ceiling;
#  - idle and loaded (peak) RSS per service (the four shipped ones without backends, the demo
#    and code-graph-rag with theirs), time from start to the four shipped services answering
#    /health (one process, and one process each), time from SIGTERM to exit with 100 calls in
#    flight;
#  - the load suite (crates/loadtest) against the demo and code-graph-rag services: baseline,
#    saturation, open loop;
#  - the overload test at 1×, 2× and 5× the admission limit of a service whose tool calls
#    examples/slow_upstream (200 ms a call): accepted/s, 503 share, admitted p99 (through the
#    gateway's admission control, `limits.max_concurrent_calls`);
#  - the goals of the hot path and the child pools as ratios within this run
#    (scripts/perf/goals.sh: echo vs the one-child ceiling, GET /tools vs bare axum with the
#    same bytes, a pool of two mcp-server-time children vs one).
# Results: target/perf/results.md (and the loadtest reports beside it).
#
#   scripts/perf.sh [--duration SECONDS] [--suite-only] [--no-build]
#
# --duration: seconds per wrk/mcp_direct run and per load-suite phase (default 10);
# --suite-only: only the load suite and the overload test; --no-build: use the binaries in
# release/ where cargo puts its builds (CARGO_TARGET_DIR counts) as they are.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
duration=10
full=1
build=1
while (($#)); do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --suite-only) full=0; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "perf: unknown option $1" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null || { echo "perf: needs wrk (Debian package wrk)" >&2; exit 2; }

out="$root/target/perf"
rm -rf "$out"; mkdir -p "$out"
results="$out/results.md"
# shellcheck source=scripts/lib/processes.sh
source "$root/scripts/lib/processes.sh"
now_ms() { date +%s%3N; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
peak_kb() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }

if ((build)); then cargo build --release --locked -p mcp-http-gateway -p loadtest --bins --examples; fi
# The goals first, on a quiet machine (their own processes, stopped when they end).
((full)) && scripts/perf/goals.sh --no-build --report-only --duration "$duration" >/dev/null
# shellcheck source=scripts/lib/cargo-target.sh
source "$root/scripts/lib/cargo-target.sh"
release="$(cargo_target_dir "$root")/release"
gateway="$release/mcp-http-gateway"
deps="$root/.deps"
export MCP_EVERYTHING_JS="$deps/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
export MCP_SERVER_TIME="$deps/venv/bin/mcp-server-time"

{
  echo "# Performance run $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -sr); wrk $(wrk -v 2>&1 | head -1 | awk '{print $2}'); ${duration} s per run."
} >"$results"

# A shipped config on a free port, in $work/config-<name>/.
config_for() { shipped_config "$1" "$work/config-$1"; }

if ((full)); then
# --- start to healthy: the four shipped services, one process, no backends (degraded is up).
four="$work/four"; mkdir -p "$four"
for name in ai-gateway code-graph-rag seekr docwell; do cp "$(config_for "$name")" "$four/"; done
started=$(now_ms)
"$gateway" serve --config-dir "$four" >"$work/four.log" 2>&1 &
four_pid=$!; pids+=("$four_pid")
for f in "$four"/*.yaml; do wait_answer "http://127.0.0.1:$(port_of "$f")/health" 30; done
up_ms=$(( $(now_ms) - started ))
kill -TERM "$four_pid"; wait "$four_pid" || true
{ echo; echo "## Start"; echo; echo "The four shipped services (one process, \`serve --config-dir\`, no backends, so degraded or unavailable): all answer /health ${up_ms} ms after start."; } >>"$results"

# --- the four shipped services as separate processes (as services-manager.sh runs them), no
# backends: start time, idle RSS, and RSS after 5 s of GET /tools + GET /health at 100 connections.
started=$(now_ms)
declare -A own_pid
for f in "$four"/*.yaml; do
  name="$(basename "$f" .yaml)"
  "$gateway" serve --config "$f" >"$work/own-$name.log" 2>&1 &
  own_pid[$name]=$!; pids+=("$!")
done
for f in "$four"/*.yaml; do wait_answer "http://127.0.0.1:$(port_of "$f")/health" 30; done
own_up_ms=$(( $(now_ms) - started ))
{
  echo; echo "As four processes (one per service): all answer /health ${own_up_ms} ms after start."
  echo; echo "| shipped service, no backend (own process) | RSS idle | RSS peak after GET /tools + /health, 100 connections |"
  echo "|---|---:|---:|"
} >>"$results"
for f in "$four"/*.yaml; do
  name="$(basename "$f" .yaml)"; pid="${own_pid[$name]}"; url="http://127.0.0.1:$(port_of "$f")"
  idle=$(rss_kb "$pid")
  wrk -t2 -c100 -d5s "$url/tools" >/dev/null
  wrk -t2 -c100 -d5s "$url/health" >/dev/null
  echo "| $name | $((idle / 1024)) MiB | $(( $(peak_kb "$pid") / 1024 )) MiB |" >>"$results"
  kill -TERM "$pid"; wait "$pid" || true
done

fi
# --- the services under test, one process each (RSS per service).
eval "$(scripts/bolt-db.sh start --port 0 --data "$work/bolt" --load crates/server/tests/fixtures/code_graph.cypher | grep -E '^BOLT_(URL|USER)=')"
demo_cfg="$(config_for everything)"; graph_cfg="$(config_for code-graph-rag)"
"$gateway" serve --config "$demo_cfg" >"$work/demo.log" 2>&1 &
demo_pid=$!; pids+=("$demo_pid")
CODE_GRAPH_BOLT_URI="$BOLT_URL" CODE_GRAPH_BOLT_USER="$BOLT_USER" CODE_GRAPH_BOLT_PASSWORD=code-graph-rag \
  "$gateway" serve --config "$graph_cfg" >"$work/graph.log" 2>&1 &
graph_pid=$!; pids+=("$graph_pid")
demo="http://127.0.0.1:$(port_of "$demo_cfg")"; graph="http://127.0.0.1:$(port_of "$graph_cfg")"
wait_http "$demo/health" 60; wait_http "$graph/health" 60
until curl -fsS "$graph/health" | grep -q '"status":"healthy"'; do sleep 0.1; done
until curl -fsS "$demo/health" | grep -q '"status":"healthy"'; do sleep 0.1; done
demo_idle=$(rss_kb "$demo_pid"); graph_idle=$(rss_kb "$graph_pid")

if ((full)); then
hello_port=$(free_port)
"$release/examples/hello_axum" "$hello_port" & pids+=($!)
wait_http "http://127.0.0.1:$hello_port/" 10

run_wrk() { # label url body
  local label="$1" url="$2" body="$3" c line
  for c in 1 10 100; do
    line=$(WRK_BODY="$body" wrk -t "$((c < 2 ? 1 : 2))" -c "$c" -d "${duration}s" -s scripts/perf/report.lua "$url" | tail -1)
    echo "| $label | $c | $(echo "$line" | jq -r '"\(.rps) | \(.p50_ms) | \(.p95_ms) | \(.p99_ms) | \(.errors)"') |" >>"$results"
  done
}
{
  echo; echo "## wrk against the gateway (and a bare axum server)"; echo
  echo "| request | connections | req/s | p50 ms | p95 ms | p99 ms | errors |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
} >>"$results"
run_wrk "bare axum, static JSON (ceiling)" "http://127.0.0.1:$hello_port/" ""
run_wrk "GET /tools (15 tools)" "$demo/tools" ""
run_wrk "GET /health (2 MCP servers)" "$demo/health" ""
run_wrk "call echo (server-everything, stdio)" "$demo/call-tool" '{"tool":"echo","arguments":{"message":"hi"}}'
run_wrk "call get_current_time (mcp-server-time, stdio)" "$demo/call-tool" '{"tool":"get_current_time","arguments":{"timezone":"UTC"}}'
run_wrk "call list_projects (Cypher on ArcadeDB)" "$graph/call-tool" '{"tool":"list_projects","arguments":{}}'
demo_peak=$(peak_kb "$demo_pid"); graph_peak=$(peak_kb "$graph_pid")

{
  echo; echo "## The same calls straight to the MCP server (rmcp client over stdio, no gateway)"; echo
  echo "| call | concurrency | result |"; echo "|---|---:|---|"
} >>"$results"
for c in 1 10 100; do
  echo "| echo (server-everything) | $c | $("$release/examples/mcp_direct" "$c" "$duration" echo '{"message":"hi"}' -- node "$MCP_EVERYTHING_JS" stdio 2>/dev/null | tail -1) |" >>"$results"
done
for c in 1 10 100; do
  echo "| get_current_time (mcp-server-time) | $c | $("$release/examples/mcp_direct" "$c" "$duration" get_current_time '{"timezone":"UTC"}' -- "$MCP_SERVER_TIME" --local-timezone UTC 2>/dev/null | tail -1) |" >>"$results"
done

{
  echo; echo "## Memory (RSS of the gateway process; MCP children not included)"; echo
  echo "| service | idle | peak after the wrk runs |"; echo "|---|---:|---:|"
  echo "| everything (2 stdio MCP servers) | $((demo_idle / 1024)) MiB | $((demo_peak / 1024)) MiB |"
  echo "| code-graph-rag (Cypher, Bolt pool) | $((graph_idle / 1024)) MiB | $((graph_peak / 1024)) MiB |"
} >>"$results"

fi
# --- the load suite: baseline, saturation (closed loop), open loop at 0.2 × saturation.
{ echo; echo "## Load test suite (crates/loadtest, ${duration}s per phase)"; } >>"$results"
for pair in "everything $demo" "code-graph-rag $graph"; do
  read -r name url <<<"$pair"
  "$release/loadtest" --url "$url" --run-time "${duration}s" --report "$out/loadtest-$name" >/dev/null || true
  { echo; sed 's/^## /### /; s/^### \(baseline\|saturation\|open loop\|Verdicts\)/#### \1/' "$out/loadtest-$name/summary.md"; } >>"$results"
done

# --- overload: 1×, 2×, 5× the admission limit calling a tool whose upstream takes 200 ms.
limit=4; queue=4; queue_timeout_ms=1000; delay_ms=200
"$release/examples/slow_upstream" 0 "$delay_ms" >"$work/upstream.port" &
pids+=($!)
until [[ -s "$work/upstream.port" ]]; do sleep 0.05; done
overload_port="$(free_port)"; mkdir -p "$work/overload"
overload_config "$work/overload/overload.yaml" "$overload_port" "$(cat "$work/upstream.port")" "$delay_ms" \
  "max_concurrent_calls: $limit, queue_depth: $queue, queue_timeout_ms: $queue_timeout_ms"
{
  echo; echo "## Overload (max_concurrent_calls $limit, queue_depth $queue, queue_timeout_ms $queue_timeout_ms; the tool's upstream takes $delay_ms ms; ${duration}s per run)"; echo
} >>"$results"
"$gateway" check-config "$work/overload/overload.yaml" >/dev/null
{
  "$gateway" serve --config "$work/overload/overload.yaml" >"$work/overload.log" 2>&1 &
  pids+=($!)
  wait_http "http://127.0.0.1:$overload_port/health" 60
  {
    echo "| callers | accepted calls/s | 503 share | admitted p50 ms | admitted p99 ms | lost | verdicts |"
    echo "|---|---:|---:|---:|---:|---:|---|"
  } >>"$results"
  for multiple in 1 2 5; do
    "$release/loadtest" --url "http://127.0.0.1:$overload_port" --mode overload --scenario call \
      --admission-limit "$limit" --queue-depth "$queue" --queue-timeout-ms "$queue_timeout_ms" \
      --tool-delay-ms "$delay_ms" --overload-multiple "$multiple" --run-time "${duration}s" \
      --report "$out/overload-$multiple" >/dev/null || true
    jq -r --arg m "$multiple" '.phases[0] as $p | ($p.total.requests + $p.refused) as $answered
      | "| \($m)× (\($p.users)) | \($p.total.rps * 10 | round / 10) | \(if $answered > 0 then ($p.refused * 1000 / $answered | round / 10) else 0 end) % | \($p.total.p50_ms * 10 | round / 10) | \($p.total.p99_ms * 10 | round / 10) | \($p.lost) | \(if .passed then "pass" else "FAIL" end) |"' \
      "$out/overload-$multiple/summary.json" >>"$results"
  done
}

if ((full)); then
# --- SIGTERM with 100 calls in flight (each takes 3 s upstream).
calls=()
for i in $(seq 100); do
  curl -s -o /dev/null -w '%{http_code}\n' -X POST "$demo/call-tool" -H 'Content-Type: application/json' \
    -d '{"tool":"trigger-long-running-operation","arguments":{"duration":3,"steps":1}}' >"$work/inflight-$i" &
  calls+=($!)
done
until curl -fsS "$demo/health" | grep -q '"active_calls":100'; do sleep 0.05; done
stop_started=$(now_ms)
kill -TERM "$demo_pid"
while kill -0 "$demo_pid" 2>/dev/null && ! grep -q zombie "/proc/$demo_pid/status" 2>/dev/null; do sleep 0.01; done
stop_ms=$(( $(now_ms) - stop_started ))
wait "$demo_pid" || true
for pid in "${calls[@]}"; do wait "$pid" || true; done
ok=$(cat "$work"/inflight-* | grep -c '^200$' || true)
{ echo; echo "## Shutdown"; echo; echo "SIGTERM with 100 calls in flight (trigger-long-running-operation, 3 s each): the process exited ${stop_ms} ms after the signal; ${ok} of 100 calls answered 200."; } >>"$results"

fi
if ((full)); then { echo; cat "$out/goals.md"; } >>"$results"; fi
cat "$results"
