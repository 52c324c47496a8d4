#!/usr/bin/env bash
# Runs every test of the workspace: installs the real MCP servers the tests talk to into .deps/
# (once), then unit, contract-drift and end-to-end tests with cargo-nextest (the e2e tests start
# the real binary on free loopback ports, run the conformance tester against every service of
# config/, and the official MCP conformance suites through the gateway), printing the 15 slowest,
# the bats tests, the short load test, the coverage gate, and mutation testing of the change
# being tested. Everything is built instrumented for line coverage (scripts/lib/coverage.sh, in
# <target>/llvm-cov-target), so every test counts, the bats tests and the load test included:
# server, contract and wrappers must each have at least 90 % of their lines covered.
# Extra arguments go to the test binaries as filters, e.g. `scripts/test.sh mcp_provider`; the coverage gate is
# then not judged (a part of the tests covers a part of the code), and says so.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# How long each step took, printed when the run ends (passed or not), so a slower CI run says
# where its time went (docs/testing.md, "How long a run takes").
step_times=() step_name="" step_start=$SECONDS
step() {
  if [ -n "$step_name" ]; then step_times+=("$(printf '%6d s  %s' $((SECONDS - step_start)) "$step_name")"); fi
  step_name="$1" step_start=$SECONDS
}
# Each test's time, from the JUnit report cargo-nextest writes (.config/nextest.toml): the 15
# slowest, printed when the run ends, passed or not.
junit="$PWD/target/nextest/default/junit.xml"
rm -f "$junit"
print_step_times() {
  step ""
  if [ -f "$junit" ]; then python3 scripts/lib/test_times.py "$junit" --slowest 15 >&2 || true; fi
  echo "test.sh: time per step (total $SECONDS s):" >&2
  printf '  %s\n' "${step_times[@]}" >&2
}
trap print_step_times EXIT
step "install the MCP servers, LiteLLM, ArcadeDB, the discovery model and the test and fuzz tools"
# shellcheck source=scripts/lib/test-deps.sh
. scripts/lib/test-deps.sh
install_test_deps
# The conformance tester's JUnit/JSON reports for each default service land here.
export CONFORMANCE_REPORT_DIR="${CONFORMANCE_REPORT_DIR:-$PWD/target/conformance}"
# shellcheck source=scripts/lib/coverage.sh
. scripts/lib/coverage.sh
step "install cargo-llvm-cov and llvm-tools"
coverage_env --clean-profiles
step "cargo test: build"
built_after="$(mktemp)"
cargo test --workspace --locked --no-run
step "cargo test: run"
# cargo-nextest runs what `cargo test` built, each test in a process of its own, three at a time
# (.config/nextest.toml), and writes the JUnit report read above. The workspace has no doctest.
PATH="$PWD/.deps/nextest-venv/bin:$PATH" cargo nextest run --workspace --locked -- "$@"
# The deployment scripts (launchd/, deploy/systemd/) and run.sh's summary: bats tests against the
# binaries cargo test built, where cargo put them (CARGO_TARGET_DIR counts).
# shellcheck source=scripts/lib/cargo-target.sh
. scripts/lib/cargo-target.sh
debug="$(cargo_target_dir .)/debug"
step "bats"
MCP_GATEWAY_BIN="$debug/mcp-http-gateway" CODE_GRAPH_INDEX_BIN="$debug/code-graph-index" \
  HELLO_PROVIDER_BIN="$debug/hello-provider" bats launchd/tests scripts/tests
# The short load test (3 s per phase, 100 clients; about 3 minutes) with the debug binaries
# `cargo test` just built (--no-build), against every shipped service, hello's gRPC providers included (one not healthy once its
# dependencies settled fails the run, unless scripts/not-run-in-ci.txt lists it), then the
# overload test: no failed or lost request, open-loop p95 within 2× the 1-client baseline, the
# calls' throughput at least a floor × bare axum's (ratios only, no absolute time); overload answers 200 or 503 + Retry-After, some
# refused, admitted calls at 0.7× the upstream's ceiling or more, with a bounded p99
# (docs/performance.md). Reports in target/loadtest/.
step "load test"
scripts/loadtest-ci.sh --profile dev --no-build --run-time 3s
step "coverage report"
# A test executable an earlier build left beside the one this build made of the same crate (another
# feature set, a build of older code): the report would read its old lines as not run. Examples
# too: an example built before a dependency changed links the older server, and its lines of
# service/mod.rs, never run, took the server's coverage from 93 % to 88 %.
coverage_drop_superseded "$debug/deps" "$built_after"
coverage_drop_superseded "$debug/examples" "$built_after"
rm -f "$built_after"
# The coverage gate (SC-012): line coverage of every test above, test modules not counted.
# Reports in target/coverage/ (html/index.html, summary.txt per file, crates.txt per crate).
if (($#)); then
  coverage_report "$PWD/target/coverage"
  echo "coverage gate: not judged: only the tests matching '$*' ran" >&2
else
  coverage_report "$PWD/target/coverage" --min 90 crates/server crates/contract crates/wrappers
fi
# Mutation testing of the change being tested (since the merge base with main; on main, the newest
# commit; uncommitted changes included): every mutant cargo-mutants makes on a changed line of the
# code .cargo/mutants.toml names must fail a unit test. One that survives fails the run, and so
# does one left untested by the 300 s budget, or a change that cannot be told (a shallow clone
# with nothing to fetch from) (docs/testing.md, "Mutation testing").
step "mutation testing"
# cargo-mutants builds the mutated crates' tests in place, here in the coverage build's folder,
# under names of their own: left there, the last mutant's binary would be read by the next run's
# coverage report (which reads every instrumented binary of the folder) with lines of code that
# no longer exist, never run (it once put contract's service_document.rs at 56 %). The
# executables it built go once it is done, passed or not.
mutants_started="$(mktemp)"
mutants_status=0
scripts/mutants.sh --in-diff --after-tests || mutants_status=$?
find "$debug/deps" -maxdepth 1 -type f -perm -u+x -newer "$mutants_started" -delete
rm -f "$mutants_started"
((mutants_status == 0)) || exit "$mutants_status"
step ""
echo "conformance reports: $CONFORMANCE_REPORT_DIR" >&2
# What this run does not test, by name and why (a checked list: docs/testing.md, "Not run in CI").
echo "not run in CI (scripts/not-run-in-ci.txt):" >&2
grep -v '^#' scripts/not-run-in-ci.txt | grep . | sed 's/^/  /' >&2
