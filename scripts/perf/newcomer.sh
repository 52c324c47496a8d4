#!/usr/bin/env bash
# Measures the newcomer path (docs/performance.md, "From a clean clone"): the time from a fresh
# `git clone` of this repository's HEAD to scripts/run.sh's table of settled services, first
# with everything to do (dependencies installed into .deps/, the release build), then again in
# the same clone with the build and the installs done. Uses the default ports (8000-8004…), so
# nothing else may listen on them. Prints Markdown.
#
#   scripts/perf/newcomer.sh [--timeout SECONDS]   (default 1800 per run)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
timeout=1800
while (($#)); do
  case "$1" in
    --timeout) timeout="$2"; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "newcomer: unknown option $1" >&2; exit 2 ;;
  esac
done
scratch="$(mktemp -d)"
run_pid=""
cleanup() {
  if [ -n "$run_pid" ]; then kill -TERM "$run_pid" 2>/dev/null || true; wait "$run_pid" 2>/dev/null || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT
git clone --quiet "$root" "$scratch/clone"

# one_run LOG: seconds from starting run.sh until it prints its table; run.sh is stopped after.
one_run() {
  local log="$1" started deadline
  started=$(date +%s.%N)
  deadline=$((SECONDS + timeout))
  (cd "$scratch/clone" && exec scripts/run.sh) >"$log" 2>&1 &
  run_pid=$!
  until grep -q '^SERVICE ' "$log"; do
    if ! kill -0 "$run_pid" 2>/dev/null; then echo "newcomer: run.sh ended early; see $log" >&2; tail -20 "$log" >&2; exit 1; fi
    ((SECONDS <= deadline)) || { echo "newcomer: no table within $timeout s" >&2; exit 1; }
    sleep 0.5
  done
  local took
  took=$(echo "$(date +%s.%N) - $started" | bc)
  kill -TERM "$run_pid" 2>/dev/null || true
  wait "$run_pid" 2>/dev/null || true
  run_pid=""
  printf '%.0f' "$took"
}
first=$(one_run "$scratch/first.log")
second=$(one_run "$scratch/second.log")
echo "| path | seconds |"
echo "|---|---|"
echo "| clean clone → all services answering (installs and release build included) | $first |"
echo "| the same again (build and installs done) | $second |"
echo
echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%d)."
echo
echo "Table printed by the second run:"
echo '```'
sed -n '/^SERVICE /,/^$/p' "$scratch/second.log"
echo '```'
