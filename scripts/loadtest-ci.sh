#!/usr/bin/env bash
# CI's short load test: the release gateway serves every service of config/ (on free ports, so
# a gateway already running on 8000-8004 is not disturbed), with the backends CI has — ArcadeDB
# with the fixture code graph for code-graph-rag, the LiteLLM proxy with mock models for
# ai-gateway, the MCP servers of .deps/ for the demo service — and the goose suite
# (crates/loadtest) runs against each service that is healthy, baseline then load, LOADTEST_RUN_TIME
# per phase (default 10s). Services that are not healthy here (seekr and docwell have no MCP
# server in CI) are listed as skipped. Reports land in LOADTEST_REPORT_DIR (default
# target/loadtest/<service>/: goose's HTML per phase, summary.md, summary.json) and all
# summaries in one summary.md there (also appended to $GITHUB_STEP_SUMMARY when set).
# Exit 0 when every verdict passed, 1 when one failed, 2 when the run could not be made.
#
#   scripts/loadtest-ci.sh [--profile release|dev] [--run-time 10s] [--users 100]
#                          [--service NAME]... [-- LOADTEST OPTIONS...]
#
# --profile dev uses the debug binaries `cargo test` already built (scripts/test.sh does this, to
# spare CI a release build); options after `--` go to every loadtest run (e.g. the budgets).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

run_time="${LOADTEST_RUN_TIME:-10s}"
users=100
profile=release
only=()
extra=()
while (($#)); do
  case "$1" in
    --profile) profile="$2"; shift 2 ;;
    --run-time) run_time="$2"; shift 2 ;;
    --users) users="$2"; shift 2 ;;
    --service) only+=("$2"); shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "loadtest-ci: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$profile" in
  release) bin_dir="$root/target/release" ;;
  dev) bin_dir="$root/target/debug" ;;
  *) echo "loadtest-ci: --profile is release or dev" >&2; exit 2 ;;
esac
out="${LOADTEST_REPORT_DIR:-$root/target/loadtest}"

# shellcheck source=scripts/lib/processes.sh
source "$root/scripts/lib/processes.sh"

if [[ "$profile" == release ]]; then
  cargo build --release --locked -p mcp-http-gateway -p loadtest
else
  cargo build --locked -p mcp-http-gateway -p loadtest
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
  port_by_service[$name]="$(port_of "$(shipped_config "$name" "$work/config")")"
done
MCP_EVERYTHING_JS="$root/.deps/node_modules/@modelcontextprotocol/server-everything/dist/index.js" \
MCP_SERVER_TIME="$root/.deps/venv/bin/mcp-server-time" \
AI_GATEWAY_BASE_URL="http://127.0.0.1:$litellm_port/v1" AI_GATEWAY_API_KEY="sk-gateway-test-key" \
CODE_GRAPH_BOLT_URI="$BOLT_URL" CODE_GRAPH_BOLT_USER="$BOLT_USER" \
CODE_GRAPH_BOLT_PASSWORD="${BOLT_PASSWORD:-code-graph-rag}" \
  "$gateway" serve --config-dir "$work/config" >"$work/gateway.log" 2>&1 &
pids+=($!)
for name in "${!port_by_service[@]}"; do
  wait_http "http://127.0.0.1:${port_by_service[$name]}/health" 60 || {
    echo "loadtest-ci: $name did not answer /health:" >&2; tail -20 "$work/gateway.log" >&2; exit 2
  }
done

mkdir -p "$out"
summary="$out/summary.md"
echo "# Load tests (${run_time} per phase, ${users} users, ${profile} build${extra[*]:+, ${extra[*]}})" >"$summary"
status=0
for name in $(printf '%s\n' "${!port_by_service[@]}" | sort); do
  if ((${#only[@]})) && [[ ! " ${only[*]} " == *" $name "* ]]; then continue; fi
  url="http://127.0.0.1:${port_by_service[$name]}"
  health="$(curl -fsS "$url/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["status"])')"
  if [[ "$health" != healthy ]]; then
    printf '\n## %s — skipped (%s here)\n' "$name" "$health" | tee -a "$summary"
    continue
  fi
  rc=0
  "$loadtest" --url "$url" --users "$users" --run-time "$run_time" --report "$out/$name" \
    ${extra[@]+"${extra[@]}"} >/dev/null || rc=$?
  if [[ -f "$out/$name/summary.md" ]]; then
    printf '\n' >>"$summary"
    sed 's/^## Load test of .* — /## '"$name"' — /' "$out/$name/summary.md" >>"$summary"
  fi
  echo "loadtest-ci: $name exit $rc" >&2
  if ((rc > status)); then status=$rc; fi
done
if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then cat "$summary" >>"$GITHUB_STEP_SUMMARY"; fi
cat "$summary"
exit "$status"
