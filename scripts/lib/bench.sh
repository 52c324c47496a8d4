# shellcheck shell=bash disable=SC2154  # $work, $gateway, $duration, $round: the sourcing script's
# Sourced by the benchmarks that measure the gateway in rounds against a reference
# (scripts/perf/goals.sh, scripts/perf/echo-cpu.sh), after scripts/lib/processes.sh: a service
# config as they all measure it, starting it, one wrk run at 100 connections, the turns the
# measurements of a round take at going first, and medians. The sourcing script sets $gateway,
# $duration and, inside its loop, $round.

# service NAME PROVIDERS_YAML: a config on a free port, logging at warn and limits out of the
# way (what is measured is the request, not the access line or admission); prints its path.
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

# start CONFIG VAR [SERVE_ARGS...]: serves it until the script ends (in this shell, so that
# the exit trap stops it); sets VAR to its URL once healthy and VAR_pid to its process id.
start() {
  "$gateway" serve --config "$1" "${@:3}" >"$1.log" 2>&1 &
  pids+=($!)
  printf -v "$2_pid" '%s' "$!"
  local url
  url="http://127.0.0.1:$(port_of "$1")"
  wait_http "$url/health" 60 || { echo "${0##*/}: $1 did not start" >&2; cat "$1.log" >&2; exit 1; }
  printf -v "$2" '%s' "$url"
}

# wrk_json URL [BODY]: one wrk run at 100 connections (a POST of BODY when given); its JSON line
# (scripts/perf/report.lua).
wrk_json() {
  WRK_BODY="${2:-}" wrk -t2 -c100 -d"${duration}s" -s scripts/perf/report.lua "$1" | tail -1
}

# pair A B: runs the two measurements of a goal back to back, A first in odd rounds and B first
# in even ones: on a shared VM the second of two back-to-back runs is often the faster (an A/B
# of one build against itself shows it), so a fixed order would bias every ratio one way.
pair() {
  if ((round % 2)); then "$1"; "$2"; else "$2"; "$1"; fi
}
# trio A B C: three measurements, each first in turn.
trio() {
  case $((round % 3)) in
    1) "$1"; "$2"; "$3" ;;
    2) "$2"; "$3"; "$1" ;;
    *) "$3"; "$1"; "$2" ;;
  esac
}

# median: the median of the numbers on standard input, one per line.
median() {
  sort -g | awk '{ v[NR] = $1 } END { printf "%.10g\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
