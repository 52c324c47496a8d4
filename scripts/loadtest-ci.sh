#!/usr/bin/env bash
# CI's short load test (docs/performance.md): the gateway serves every service of config/ (on
# free ports, so a gateway already running on 8000-8004 is not disturbed), with the backends CI
# has — ArcadeDB with the fixture code graph for code-graph-rag, the LiteLLM proxy with mock
# models for ai-gateway, the MCP servers of .deps/ for the demo service — and the suite
# (crates/loadtest) runs against each service that is healthy: a 1-client baseline, the
# saturation test (closed loop, reported), the open-loop phase at a fifth of the saturation
# throughput (judged: p95 within the service's budget below and within 2× the baseline),
# LOADTEST_RUN_TIME per phase (default 5s). A run that fails a verdict is made once more and
# decides (one short p95 on 2 shared cores is noisy; a slower service fails both). Then the overload test: 5× the admission limit
# calling a slow tool (an `http` provider in front of examples/slow_upstream, 200 ms a call).
#
# seekr and docwell run their built-in search over this repository (no MCP command is set; the
# index goes under the run's scratch folder and is waited for). A service that is not healthy
# here is "not run": listed as such in the summary and in its report folder, never counted as
# passing.
# Reports land in LOADTEST_REPORT_DIR (default target/loadtest/<service>/: summary.md,
# summary.json, goose's saturation.html) and all summaries in one summary.md there (also
# appended to $GITHUB_STEP_SUMMARY when set). Exit 0 when every verdict of every run passed,
# 1 when one failed, 2 when a run could not be made.
#
#   scripts/loadtest-ci.sh [--profile release|dev] [--run-time 5s] [--users 100] [--no-build]
#                          [--service NAME|overload]... [-- LOADTEST OPTIONS...]
#
# --profile dev uses the debug binaries `cargo test` already built (scripts/test.sh does this, to
# spare CI a release build) and the debug budgets below; options after `--` go to every load
# run (they come after the budget, so they win). Binaries come from $CARGO_TARGET_DIR (default
# target/).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

run_time="${LOADTEST_RUN_TIME:-5s}"
users=100
profile=release
build=1
only=()
extra=()
while (($#)); do
  case "$1" in
    --profile) profile="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --run-time) run_time="$2"; shift 2 ;;
    --users) users="$2"; shift 2 ;;
    --service) only+=("$2"); shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "loadtest-ci: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
target_dir="${CARGO_TARGET_DIR:-$root/target}"
# The open-loop p95 budget per service, in ms: what the code meets with margin (2–4× the p95
# measured here, docs/performance.md) and a 5× slower service cannot. The floor under the
# baseline for the 2× verdict: debug builds of client and server on 2 cores jitter by a few ms.
declare -A budget
case "$profile" in
  release) bin_dir="$target_dir/release"; floor_ms=1
    budget=([everything]=5 [code-graph-rag]=8 [ai-gateway]=5 [default]=20) ;;
  dev) bin_dir="$target_dir/debug"; floor_ms=5
    budget=([everything]=25 [code-graph-rag]=20 [ai-gateway]=10 [default]=100) ;;
  *) echo "loadtest-ci: --profile is release or dev" >&2; exit 2 ;;
esac
out="${LOADTEST_REPORT_DIR:-$root/target/loadtest}"

# shellcheck source=scripts/lib/processes.sh
source "$root/scripts/lib/processes.sh"

if ((build)); then
  if [[ "$profile" == release ]]; then
    cargo build --release --locked -p mcp-http-gateway -p loadtest --bins --examples
  else
    cargo build --locked -p mcp-http-gateway -p loadtest --bins --examples
  fi
fi
gateway="$bin_dir/mcp-http-gateway"
loadtest="$bin_dir/loadtest"

# Backends.
eval "$(scripts/bolt-db.sh start --port 0 --data "$work/bolt" \
  --load crates/server/tests/fixtures/code_graph.cypher | grep -E '^BOLT_(URL|USER)=')"
litellm_port="$(free_port)"
env -i PATH=/usr/bin:/bin LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_MODE=PRODUCTION \
  .deps/litellm-venv/bin/litellm --config crates/server/tests/fixtures/litellm.yaml \
  --host 127.0.0.1 --port "$litellm_port" --num_workers 1 --telemetry False \
  >"$work/litellm.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$litellm_port/health/liveliness" 90 || {
  echo "loadtest-ci: LiteLLM did not start:" >&2; tail -20 "$work/litellm.log" >&2; exit 2
}

# The shipped configuration, each service on a free port.
mkdir -p "$work/config"
declare -A port_by_service
for file in config/*.yaml; do
  name="$(basename "$file" .yaml)"
  [[ "$name" == services ]] && continue
  # shipped_config lifts the per-client rate limit: all load comes from one client address.
  file="$(shipped_config "$name" "$work/config")"
  port_by_service[$name]="$(port_of "$file")"
done
MCP_EVERYTHING_JS="$root/.deps/node_modules/@modelcontextprotocol/server-everything/dist/index.js" \
MCP_SERVER_TIME="$root/.deps/venv/bin/mcp-server-time" \
AI_GATEWAY_BASE_URL="http://127.0.0.1:$litellm_port/v1" AI_GATEWAY_API_KEY="sk-gateway-test-key" \
CODE_GRAPH_BOLT_URI="$BOLT_URL" CODE_GRAPH_BOLT_USER="$BOLT_USER" \
CODE_GRAPH_BOLT_PASSWORD="${BOLT_PASSWORD:-code-graph-rag}" \
XDG_CACHE_HOME="$work/cache" \
  env -u SEEKR_MCP_COMMAND -u DOCWELL_MCP_COMMAND \
  "$gateway" serve --config-dir "$work/config" >"$work/gateway.log" 2>&1 &
pids+=($!)
for name in "${!port_by_service[@]}"; do
  wait_answer "http://127.0.0.1:${port_by_service[$name]}/health" 60 || {
    echo "loadtest-ci: $name did not answer /health:" >&2; tail -20 "$work/gateway.log" >&2; exit 2
  }
done
# A search index is built in the background after start: wait (bounded) until none is building.
indexing() {
  curl -sS "$1/health" | python3 -c 'import json,sys; e=json.load(sys.stdin); r=e.get("data") or e.get("meta", {}).get("health") or {}; sys.exit(0 if any((p.get("index") or {}).get("state") == "building" for p in r.get("providers", {}).values()) else 1)'
}
for name in "${!port_by_service[@]}"; do
  deadline=$((SECONDS + 120))
  while indexing "http://127.0.0.1:${port_by_service[$name]}"; do
    ((SECONDS <= deadline)) || { echo "loadtest-ci: $name still indexing after 120 s" >&2; break; }
    sleep 0.2
  done
done
# The tool each service is loaded with when it has none callable without arguments.
declare -A call_of=(
  [seekr]='--tool search_code --args {"query":"provider","limit":5}'
)

mkdir -p "$out"
summary="$out/summary.md"
echo "# Load tests (${run_time} per phase, ${users} clients, ${profile} build${extra[*]:+, ${extra[*]}})" >"$summary"
status=0
passed=(); failed=(); not_run=()
# record NAME RC: files the run's exit code under passed / failed.
record() {
  if (($2 == 0)); then passed+=("$1"); else failed+=("$1"); fi
  echo "loadtest-ci: $1 exit $2" >&2
  if (($2 > status)); then status=$2; fi
}
# append NAME DIR: the run's summary.md into the combined one, titled by NAME.
append() {
  if [[ -f "$2/summary.md" ]]; then
    printf '\n' >>"$summary"
    sed 's/^## \(Load\|Overload\) test of .* — /## '"$1"' — /' "$2/summary.md" >>"$summary"
  fi
}
# load_run DIR: one load run of service $name at $url, its report in DIR; its exit code in rc.
load_run() {
  rc=0
  "$loadtest" --url "$url" --users "$users" --run-time "$run_time" --report "$1" \
    --budget-p95-ms "${budget[$name]:-${budget[default]}}" --latency-floor-ms "$floor_ms" \
    ${call_args[@]+"${call_args[@]}"} \
    ${extra[@]+"${extra[@]}"} >/dev/null || rc=$?
}
for name in $(printf '%s\n' "${!port_by_service[@]}" | sort); do
  if ((${#only[@]})) && [[ ! " ${only[*]} " == *" $name "* ]]; then continue; fi
  url="http://127.0.0.1:${port_by_service[$name]}"
  # 200 has the report in `data`, 503 (no tool can run) in `meta.health`.
  health="$(curl -sS "$url/health" | python3 -c 'import json,sys; e=json.load(sys.stdin); print((e.get("data") or e.get("meta", {}).get("health") or {}).get("status", "unknown"))')"
  rm -rf "${out:?}/$name"; mkdir -p "$out/$name"
  if [[ "$health" != healthy ]]; then
    # Not run is not passed: it says so here, in the summary, and in the service's report.
    reason="the service is $health here (its backend is not available in this run)"
    not_run+=("$name")
    printf '## %s — NOT RUN\n\n%s.\n' "$name" "$reason" >"$out/$name/summary.md"
    printf '{"service": "%s", "status": "not run", "passed": null, "reason": "%s"}\n' \
      "$name" "$reason" >"$out/$name/summary.json"
    printf '\n## %s — NOT RUN: %s\n' "$name" "$reason" >>"$summary"
    echo "loadtest-ci: $name not run ($health)" >&2
    continue
  fi
  call_args=()
  [ -z "${call_of[$name]:-}" ] || read -ra call_args <<<"${call_of[$name]}"
  load_run "$out/$name"
  append "$name" "$out/$name"
  if ((rc == 1)); then
    # A verdict failed. One p95 of a few seconds on 2 shared cores is noisy (the open loop of
    # `everything` once measured 16 ms against a 2x bound of 13.6 ms on an idle machine), so
    # the run is made once more and must pass then; a slower service fails both. Both runs
    # are in the summary.
    echo "loadtest-ci: $name failed a verdict; running it once more" >&2
    load_run "$out/$name/second-run"
    printf '
_%s failed a verdict in its first run above; the second run (below) decides._
' \
      "$name" >>"$summary"
    append "$name (second run)" "$out/$name/second-run"
  fi
  record "$name" "$rc"
done

# The overload test: a service whose one tool calls an upstream taking 200 ms, with admission
# limits; 5× the limit call it. Without admission control in this build (another part of issue
# 14) the limits are left out of the config and the run says that nothing was refused.
if ((${#only[@]} == 0)) || [[ " ${only[*]} " == *" overload "* ]]; then
  limit=4; queue=4; queue_timeout_ms=1000; delay_ms=200
  "$bin_dir/examples/slow_upstream" 0 "$delay_ms" >"$work/upstream.port" &
  pids+=($!)
  until [[ -s "$work/upstream.port" ]]; do sleep 0.05; done
  overload_port="$(free_port)"
  overload_config "$work/overload/overload.yaml" "$overload_port" "$(cat "$work/upstream.port")" "$delay_ms" \
    "max_concurrent_calls: $limit, queue_depth: $queue, queue_timeout_ms: $queue_timeout_ms"
  "$gateway" serve --config "$work/overload/overload.yaml" >"$work/overload.log" 2>&1 &
  pids+=($!)
  wait_http "http://127.0.0.1:$overload_port/health" 60 || {
    echo "loadtest-ci: the overload service did not start:" >&2; tail -20 "$work/overload.log" >&2; exit 2
  }
  rm -rf "${out:?}/overload"
  rc=0
  "$loadtest" --url "http://127.0.0.1:$overload_port" --mode overload --scenario call \
    --admission-limit "$limit" --queue-depth "$queue" --queue-timeout-ms "$queue_timeout_ms" \
    --tool-delay-ms "$delay_ms" --run-time "$run_time" --report "$out/overload" >/dev/null || rc=$?
  append overload "$out/overload"
  record overload "$rc"
fi

{
  printf '\n## Result\n\n'
  printf -- '- passed: %s\n' "${passed[*]:-none}"
  printf -- '- failed: %s\n' "${failed[*]:-none}"
  printf -- '- not run: %s\n' "${not_run[*]:-none}"
} >>"$summary"
if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then cat "$summary" >>"$GITHUB_STEP_SUMMARY"; fi
cat "$summary"
exit "$status"
