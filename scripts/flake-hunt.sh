#!/usr/bin/env bash
# Hunts flaky end-to-end tests: runs the whole e2e suite (or the tests matching FILTER) N times
# while LOAD extra processes keep the cores busy, as a shared CI machine is, and reports every
# test that failed in any run, with how often. A test that fails once in N loaded runs fails
# sometime in CI; fix its wait (poll for the event with a deadline) or its bound (a ratio
# against a reference measured in the same test), never by retrying it.
#
#   scripts/flake-hunt.sh [-n N] [--load LOAD] [FILTER...]
#
# N defaults to 3, LOAD to 2 (busy loops, each at 100 % of one core, stopped when the script
# ends). The tests run in the coverage build scripts/test.sh makes (the same binaries, no
# second build of the workspace); FLAKE_HUNT_NO_SETUP=1 skips the installs and that
# environment (a shell that has them already, the script's own tests). Each run's output is in
# target/flake-hunt/run-K.log.
# Exit 0 when no test failed, 1 when one did, 2 when a run could not be made.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs=3 load=2 filters=()
while (($#)); do
  case "$1" in
    -n) runs="$2"; shift 2 ;;
    --load) load="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "flake-hunt: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) filters+=("$1"); shift ;;
  esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "flake-hunt: -n takes a count of runs, got '$runs'" >&2; exit 2; }
[[ "$load" =~ ^[0-9]+$ ]] || { echo "flake-hunt: --load takes a count of processes, got '$load'" >&2; exit 2; }

if [ -z "${FLAKE_HUNT_NO_SETUP:-}" ]; then
  # shellcheck source=scripts/lib/test-deps.sh
  . scripts/lib/test-deps.sh
  install_test_deps
  # shellcheck source=scripts/lib/coverage.sh
  . scripts/lib/coverage.sh
  coverage_env --keep-profiles
fi
cargo test -p mcp-http-gateway --test e2e --locked --no-run || exit 2

out="${FLAKE_HUNT_OUT:-$PWD/target/flake-hunt}"
rm -rf "$out"; mkdir -p "$out"
busy=()
# shellcheck disable=SC2317 # called by the trap
stop_load() { ((${#busy[@]} == 0)) || kill "${busy[@]}" 2>/dev/null || true; }
trap stop_load EXIT
for ((i = 0; i < load; i++)); do
  (while :; do :; done) &
  busy+=($!)
done

declare -A failed=()
started=$SECONDS
for ((run = 1; run <= runs; run++)); do
  log="$out/run-$run.log"
  echo "flake-hunt: run $run of $runs (load $load) …" >&2
  status=0
  # As scripts/test.sh runs them: cargo-nextest, one process per test, three at a time.
  PATH="$PWD/.deps/nextest-venv/bin:$PATH" \
    cargo nextest run -p mcp-http-gateway --test e2e --locked -- "${filters[@]}" >"$log" 2>&1 || status=$?
  # nextest's lines for a test that failed, hung or crashed: `  FAIL [ 1.2s] (3/9) BINARY NAME`.
  names="$(sed -nE 's/^ *(FAIL|TIMEOUT|SIG[A-Z]+|ABORT) +\[[^]]*\] +(\([0-9]+\/[0-9]+\) +)?[^ ]+ +([^ ]+)$/\3/p' "$log" | sort -u)"
  if ((status != 0)) && [ -z "$names" ]; then
    echo "flake-hunt: run $run failed without a failing test (see $log):" >&2
    tail -20 "$log" >&2
    exit 2
  fi
  grep -E '^ *Summary ' "$log" | sed "s/^ */  run $run: /" >&2 || true
  for name in $names; do
    failed["$name"]=$((${failed["$name"]:-0} + 1))
  done
done

echo "flake-hunt: $runs runs with $load busy processes in $((SECONDS - started)) s" >&2
if ((${#failed[@]} == 0)); then
  echo "flake-hunt: no test failed" >&2
  exit 0
fi
echo "flake-hunt: tests that failed (runs failed of $runs):" >&2
for name in "${!failed[@]}"; do
  printf '  %s  %s\n' "${failed[$name]}" "$name"
done | sort -rn >&2
exit 1
