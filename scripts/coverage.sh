#!/usr/bin/env bash
# Line coverage of the workspace's Rust code (docs/testing.md), unit and end-to-end tests alike,
# without the bats tests and the load test that scripts/test.sh adds (which also gates on it):
# `cargo llvm-cov` builds everything with LLVM's source-based coverage, so the gateway binary
# the e2e tests start is instrumented too and its profiles are merged with the tests' own (the
# e2e harness stops each gateway with SIGTERM under this script: a process killed outright
# writes no profile). Installs cargo-llvm-cov (pinned, into .deps/cargo-tools) and rustup's
# llvm-tools, which match the toolchain's LLVM, and the servers the tests talk to
# (scripts/lib/coverage.sh).
# Writes target/coverage/html/index.html, target/coverage/summary.txt (per file) and
# target/coverage/crates.txt (per crate, and in total). Extra arguments go to `cargo test`;
# --report-only reports the profiles of the last run again.
#
#   scripts/coverage.sh [--report-only | -- TEST_FILTER...]
set -euo pipefail
run=1
case "${1:-}" in
  -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  --report-only) run=0; shift ;;
  --) shift ;;
esac
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/install-mcp-servers.sh
scripts/install-discovery-model.sh >/dev/null
scripts/install-litellm.sh
scripts/install-arcadedb.sh
scripts/install-test-tools.sh
scripts/install-fuzz-tools.sh
# shellcheck source=scripts/lib/coverage.sh
. scripts/lib/coverage.sh
out="$PWD/target/coverage"
mkdir -p "$out"
export CONFORMANCE_REPORT_DIR="$out/conformance"
if ((run)); then
  coverage_env --clean-profiles
  # Every workspace crate rebuilt, so no binary of an earlier build is measured.
  cargo llvm-cov clean --workspace
  cargo test --workspace --locked -- "$@"
else
  coverage_env --keep-profiles
fi
coverage_report "$out"
