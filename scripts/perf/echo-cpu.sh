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
release="${CARGO_TARGET_DIR:-$root/target}/release"
gateway="$release/mcp-http-gateway"
direct="$release/examples/mcp_direct"
[[ -x "$gateway" && -x "$direct" ]] || { echo "echo-cpu: build the release binaries first (scripts/perf/goals.sh says how)" >&2; exit 2; }
everything_js="$root/.deps/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[[ -f "$everything_js" ]] || { echo "echo-cpu: run scripts/install-mcp-servers.sh first" >&2; exit 2; }
# shellcheck source=scripts/lib/processes.sh
source "$root/scripts/lib/processes.sh"
ticks_per_s="$(getconf CLK_TCK)"

# serve NAME VAR [TASKSET...]: a gateway with server-everything on a free port; sets VAR to its
# port, VAR_pid to its process and VAR_node to its node child.
serve() {
  local file="$work/$1.yaml" port
  port="$(free_port)"
  cat >"$file" <<EOF
service: { name: $1, port: $port }
logging: { level: warn, format: json }
security: { rate_limit: 100000000 }
limits: { max_concurrent_calls: 1024, queue_depth: 4096 }
providers:
  - { name: everything, kind: mcp, command: node, args: ["$everything_js", stdio] }
EOF
  "${@:3}" "$gateway" serve --config "$file" >"$file.log" 2>&1 &
  pids+=($!)
  wait_http "http://127.0.0.1:$port/health" 60 || { echo "echo-cpu: $1 did not start" >&2; cat "$file.log" >&2; exit 1; }
  printf -v "$2" '%s' "$port"
  printf -v "$2_pid" '%s' "$!"
  printf -v "$2_node" '%s' "$(pgrep -P "$!" -x node | head -1)"
}
gw="" gw_pid="" gw_node="" pinned="" pinned_pid="" pinned_node=""
serve gateway gw
serve pinned pinned taskset -c "$others"
[[ -n "$gw_node" && -n "$pinned_node" ]] || { echo "echo-cpu: a gateway has no node child" >&2; exit 1; }
taskset -a -p -c "$last_cpu" "$pinned_node" >/dev/null

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
idle_total() { awk '/^cpu / { print $5, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }
body='{"tool":"echo","arguments":{"message":"hi"}}'
TIMEFORMAT='%U %S'

# through NAME PORT GATEWAY_PID NODE_PID [TASKSET...]: one wrk run; appends
# "calls/s idle% gateway_us node_us wrk_us errors" to $work/NAME.
through() {
  local g0 n0 i0 t0 g1 n1 i1 t1 out times
  g0="$(cpu_ticks "$3")" n0="$(cpu_ticks "$4")"
  read -r i0 t0 < <(idle_total)
  times="$({ time WRK_BODY="$body" "${@:5}" wrk -t2 -c100 -d"${duration}s" -s scripts/perf/report.lua \
    "http://127.0.0.1:$2/call-tool" >"$work/wrk.out"; } 2>&1)"
  g1="$(cpu_ticks "$3")" n1="$(cpu_ticks "$4")"
  read -r i1 t1 < <(idle_total)
  out="$(tail -1 "$work/wrk.out")"
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

runs=(gateway pinned direct)
for ((round = 1; round <= rounds; round++)); do
  # Each of the three goes first in turn: on a shared VM the second of two runs back to back
  # can win by 20 % (docs/performance.md).
  for ((k = 0; k < 3; k++)); do
    case "${runs[(round + k) % 3]}" in
      gateway) through gateway "$gw" "$gw_pid" "$gw_node" ;;
      pinned) through pinned "$pinned" "$pinned_pid" "$pinned_node" taskset -c "$others" ;;
      direct) straight ;;
    esac
  done
  printf 'round %d: gateway %s | pinned %s | direct %s\n' "$round" \
    "$(tail -1 "$work/gateway")" "$(tail -1 "$work/pinned")" "$(tail -1 "$work/direct")" >&2
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
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
