#!/usr/bin/env bash
# What the resilience chain (issue 35: breaker, retry budget, the coalescing key of a read-only
# call) costs on the hot path: echo through the gateway (wrk, 2 threads, 100 kept-alive
# connections, POST /call-tool, server-everything over one stdio child, each request with a
# message of its own so that no call is shared — scripts/perf/resilience.lua — and every
# answer checked for "success":true) by this build and by a BASELINE binary built from before
# the chain, in the same run on the same machine. Each round runs both, the one going first turning from
# round to round (scripts/lib/bench.sh `pair`); the result is the median of the rounds'
# ratios (this build ÷ baseline), which must stay ≥ 0.97 (the issue's 3 %). A third run, the
# same build with `resilience` turned off for the provider, says how much of a difference is
# the chain and how much is the rest of the build. Prints Markdown; exits 1 when the median
# ratio is under the goal, unless --report-only.
#
#   scripts/perf/resilience-overhead.sh --baseline BIN [--release-dir DIR] [--duration SECONDS]
#                                       [--rounds N] [--report-only]
#
# BIN: a release mcp-http-gateway built from the commit before the chain, e.g.
#   git worktree add /tmp/base <rev> && (cd /tmp/base && cargo build --release -p mcp-http-gateway)
# DIR defaults to release/ where cargo puts its builds; SECONDS to 5 per run; N to 5 rounds.
# Needs wrk, jq and the project's .deps (scripts/install-mcp-servers.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
baseline=""
release=""
duration=5
rounds=5
strict=1
while (($#)); do
  case "$1" in
    --baseline) baseline="$2"; shift 2 ;;
    --release-dir) release="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --report-only) strict=0; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "resilience-overhead: unknown option $1" >&2; exit 2 ;;
  esac
done
for tool in wrk jq; do
  command -v "$tool" >/dev/null || { echo "resilience-overhead: needs $tool" >&2; exit 2; }
done
[[ -n "$baseline" && -x "$baseline" ]] || { echo "resilience-overhead: --baseline BIN is required (a release binary from before the chain)" >&2; exit 2; }
# shellcheck source=scripts/lib/cargo-target.sh
source "$root/scripts/lib/cargo-target.sh"
[ -n "$release" ] || release="$(cargo_target_dir "$root")/release" || exit 2
build="$release/mcp-http-gateway"
[ -x "$build" ] || { echo "resilience-overhead: no binary at $build (cargo build --release -p mcp-http-gateway)" >&2; exit 2; }
everything_js="$root/.deps/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[ -f "$everything_js" ] || { echo "resilience-overhead: run scripts/install-mcp-servers.sh first" >&2; exit 2; }
# shellcheck source=scripts/lib/processes.sh
source "$root/scripts/lib/processes.sh"
# shellcheck source=scripts/lib/bench.sh
source "$root/scripts/lib/bench.sh"

provider="  - { name: everything, kind: mcp, command: node, args: [\"$everything_js\", stdio]"
gateway="$baseline"
start "$(service base "$provider }")" base_url
gateway="$build"
start "$(service chain "$provider }")" chain_url
start "$(service off "$provider, resilience: { breaker: { enabled: false }, retry: { enabled: false }, cache: { enabled: false }, outlier: { enabled: false } } }")" off_url

export WRK_TOOL=echo WRK_ARGUMENT=message
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
run() { # run URL PID OUT: the wrk line, with the gateway's CPU µs per call added
  local before after
  before="$(ticks "$2")"
  wrk -t2 -c100 -d"${duration}s" -s scripts/perf/resilience.lua "$1" | tail -1 >"$work/$3"
  after="$(ticks "$2")"
  local bad
  bad="$(jq '.errors + .bad + .failed' "$work/$3")"
  ((bad == 0)) || { echo "resilience-overhead: $bad failed or wrong answers from $1: $(cat "$work/$3")" >&2; exit 1; }
  jq -c --argjson t "$((after - before))" --argjson hz "$(getconf CLK_TCK)" \
    '. + {cpu_us: ($t / $hz * 1e6 / .requests | . * 10 | round / 10)}' "$work/$3" >"$work/$3.cpu"
  mv "$work/$3.cpu" "$work/$3"
}
# shellcheck disable=SC2154  # the URLs and pids are set by `start` (printf -v)
run_base() { run "$base_url" "$base_url_pid" base; }
# shellcheck disable=SC2154
run_chain() { run "$chain_url" "$chain_url_pid" chain; }
# shellcheck disable=SC2154
run_off() { run "$off_url" "$off_url_pid" off; }
echo "| round | calls/s baseline / this build / chain off | ratio | CPU µs per call baseline / this build / chain off | ratio |"
echo "|---|---|---|---|---|"
: >"$work/rps"
: >"$work/cpu"
for ((round = 1; round <= rounds; round++)); do
  trio run_base run_chain run_off
  b="$(jq .rps "$work/base")"; c="$(jq .rps "$work/chain")"; o="$(jq .rps "$work/off")"
  bc="$(jq .cpu_us "$work/base")"; cc="$(jq .cpu_us "$work/chain")"; oc="$(jq .cpu_us "$work/off")"
  rps_ratio="$(jq -n --argjson c "$c" --argjson b "$b" '$c / $b * 1000 | round / 1000')"
  cpu_ratio="$(jq -n --argjson c "$cc" --argjson b "$bc" '$c / $b * 1000 | round / 1000')"
  echo "$rps_ratio" >>"$work/rps"
  echo "$cpu_ratio" >>"$work/cpu"
  echo "| $round | $b / $c / $o | $rps_ratio | $bc / $cc / $oc | $cpu_ratio |"
done
rps_median="$(median <"$work/rps")"
cpu_median="$(median <"$work/cpu")"
echo
echo "Median ratios (this build ÷ baseline): calls/s $rps_median, CPU per call $cpu_median (goal ≤ 1.03); $rounds rounds of ${duration} s, $(nproc) CPUs."
if ((strict)) && ! jq -en --argjson r "$cpu_median" '$r <= 1.03' >/dev/null; then
  echo "resilience-overhead: the chain costs more than 3 % of the gateway's CPU per echo call" >&2
  exit 1
fi
