#!/usr/bin/env bash
# Where the CPU of an echo call goes on this machine, and whether giving node a core of its own
# changes it (docs/performance.md, "Where echo's last fifth goes"). Each round runs, 5 s each
# and in turn going first:
#   gateway   wrk (2 threads, 100 connections) POST /call-tool echo through a release gateway,
#             server-everything over one stdio child, nothing pinned;
#   pinned    the same through a second gateway whose node child is pinned alone to the last
#             CPU, the gateway and wrk to the others (taskset);
#   direct    the example mcp_direct, 100 callers on one stdio child of its own (the ceiling).
# For each run it prints the calls per second, the machine's idle share (/proc/stat), and the
# CPU time per call of each process (user + system, /proc/PID/stat; bash's `time` for the load
# generators, which for mcp_direct includes its node). The last lines are the medians and the
# medians of the rounds' ratios to direct. Needs the release binaries (see goals.sh), wrk,
# jq, taskset and two or more CPUs.
#
#   scripts/perf/echo-cpu.sh [--rounds N] [--duration SECONDS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
rounds=5
duration=5
while (($#)); do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "echo-cpu: unknown option $1" >&2; exit 2 ;;
  esac
done
for tool in wrk jq taskset; do
  command -v "$tool" >/dev/null || { echo "echo-cpu: needs $tool" >&2; exit 2; }
done
cpus="$(nproc)"
((cpus >= 2)) || { echo "echo-cpu: needs two or more CPUs to pin node apart" >&2; exit 2; }
last_cpu=$((cpus - 1))
others="0-$((cpus - 2))"
# shellcheck source=scripts/lib/cargo-target.sh
source "$root/scripts/lib/cargo-target.sh"
release="$(cargo_target_dir "$root")/release"
gateway="$release/mcp-http-gateway"
direct="$release/examples/mcp_direct"
[[ -x "$gateway" && -x "$direct" ]] || { echo "echo-cpu: build the release binaries first (scripts/perf/goals.sh says how)" >&2; exit 2; }
everything_js="$root/.deps/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[[ -f "$everything_js" ]] || { echo "echo-cpu: run scripts/install-mcp-servers.sh first" >&2; exit 2; }
# shellcheck source=scripts/lib/processes.sh
source "$root/scripts/lib/processes.sh"
# shellcheck source=scripts/lib/bench.sh
source "$root/scripts/lib/bench.sh"
ticks_per_s="$(getconf CLK_TCK)"

everything="  - { name: everything, kind: mcp, command: node, args: [\"$everything_js\", stdio] }"
gw="" gw_pid="" pinned="" pinned_pid=""
start "$(service gateway "$everything")" gw
start "$(service pinned "$everything")" pinned
gw_node="$(pgrep -P "$gw_pid" -x node | head -1)" || true
pinned_node="$(pgrep -P "$pinned_pid" -x node | head -1)" || true
[[ -n "$gw_node" && -n "$pinned_node" ]] || { echo "echo-cpu: a gateway has no node child" >&2; exit 1; }
# Every thread of the pinned gateway to the other CPUs (threads it starts later inherit that),
# then its node, every thread of it, alone to the last one.
taskset -a -p -c "$others" "$pinned_pid" >/dev/null
taskset -a -p -c "$last_cpu" "$pinned_node" >/dev/null

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
idle_total() { awk '/^cpu / { print $5, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }
body='{"tool":"echo","arguments":{"message":"hi"}}'
TIMEFORMAT='%U %S'

# through NAME URL GATEWAY_PID NODE_PID [CPUS]: one wrk run (on CPUS when given); appends
# "calls/s idle% gateway_us node_us wrk_us errors" to $work/NAME.
through() {
  local g0 n0 i0 t0 g1 n1 i1 t1 out times
  g0="$(cpu_ticks "$3")" n0="$(cpu_ticks "$4")"
  read -r i0 t0 < <(idle_total)
  # A subshell pinned to CPUS runs wrk there; `time` counts it, as a child of this shell.
  times="$({ time (
    [[ -z "${5:-}" ]] || taskset -p -c "$5" "$BASHPID" >/dev/null
    wrk_json "$2/call-tool" "$body" >"$work/wrk.out"
  ); } 2>&1)"
  g1="$(cpu_ticks "$3")" n1="$(cpu_ticks "$4")"
  read -r i1 t1 < <(idle_total)
  out="$(cat "$work/wrk.out")"
  jq -e '.requests > 0' <<<"$out" >/dev/null || { echo "echo-cpu: wrk got no answer from $1" >&2; exit 1; }
  awk -v req="$(jq .requests <<<"$out")" -v rps="$(jq .rps <<<"$out")" -v err="$(jq .errors <<<"$out")" \
    -v g=$((g1 - g0)) -v n=$((n1 - n0)) -v hz="$ticks_per_s" -v w="$times" -v idle=$((i1 - i0)) -v all=$((t1 - t0)) \
    'BEGIN { split(w, x, " "); us = 1e6 / hz / req
             printf "%d %.1f %.1f %.1f %.1f %d\n", rps, idle / all * 100, g * us, n * us, (x[1] + x[2]) * 1e6 / req, err }' >>"$work/$1"
}
# straight: one mcp_direct run; appends "calls/s idle% client_and_node_us" to $work/direct.
straight() {
  local i0 t0 i1 t1 out times
  read -r i0 t0 < <(idle_total)
  times="$({ time "$direct" 100 "$duration" echo '{"message":"hi"}' -- node "$everything_js" stdio \
    >"$work/direct.out" 2>"$work/direct.err"; } 2>&1)" || true
  read -r i1 t1 < <(idle_total)
  out="$(grep ' calls/s' "$work/direct.out" | tail -1)" ||
    { echo "echo-cpu: mcp_direct gave no result" >&2; cat "$work/direct.err" >&2; exit 1; }
  awk -v calls="${out%% *}" -v rate="$(grep -o '[0-9]* calls/s' <<<"$out")" -v w="$times" -v idle=$((i1 - i0)) -v all=$((t1 - t0)) \
    'BEGIN { split(w, x, " "); split(rate, r, " "); printf "%d %.1f %.1f\n", r[1], idle / all * 100, (x[1] + x[2]) * 1e6 / calls }' >>"$work/direct"
}

run_gateway() { through gateway "$gw" "$gw_pid" "$gw_node"; }
run_pinned() { through pinned "$pinned" "$pinned_pid" "$pinned_node" "$others"; }
for ((round = 1; round <= rounds; round++)); do
  trio run_gateway run_pinned straight
  printf 'round %d: gateway %s | pinned %s | direct %s\n' "$round" \
    "$(tail -1 "$work/gateway")" "$(tail -1 "$work/pinned")" "$(tail -1 "$work/direct")" >&2
done

# column_of FILE N [FORMAT]: the median of column N of a run's lines.
column_of() { awk -v c="$2" '{ print $c }' "$work/$1" | median | xargs printf "${3:-%.1f}"; }
ratios() { paste -d' ' "$work/$1" "$work/direct" | awk '{ print $1 / $7 }' | sort -g; }
echo "## Echo's CPU per call ($(date -u +%FT%TZ); $cpus CPUs; $rounds rounds of ${duration}s; medians)"
echo
echo "| run | calls/s | ratio to direct (rounds) | machine idle | gateway µs/call | node µs/call | load generator µs/call | errors |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for run in gateway pinned; do
  label="through the gateway"
  [[ "$run" == pinned ]] && label="through the gateway, node alone on CPU $last_cpu"
  printf '| %s | %s | %.2f (%s) | %s %% | %s | %s | %s (wrk) | %s |\n' "$label" "$(column_of "$run" 1 %.0f)" \
    "$(ratios "$run" | median)" "$(ratios "$run" | awk '{ printf "%s%.2f", (NR > 1 ? " " : ""), $1 }')" \
    "$(column_of "$run" 2)" "$(column_of "$run" 3)" "$(column_of "$run" 4)" "$(column_of "$run" 5)" \
    "$(awk '{ s += $6 } END { print s }' "$work/$run")"
done
printf '| mcp_direct, 100 callers on one child | %s | 1 | %s %% | — | (with the client) | %s (client and node) | — |\n' \
  "$(column_of direct 1 %.0f)" "$(column_of direct 2)" "$(column_of direct 3)"
