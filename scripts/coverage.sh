#!/usr/bin/env bash
# Line coverage of the workspace's Rust code (docs/testing.md), unit and end-to-end tests alike:
# `cargo llvm-cov` builds everything with LLVM's source-based coverage, so the gateway binary
# the e2e tests start is instrumented too and its profiles are merged with the tests' own (the
# e2e harness stops each gateway with SIGTERM under this script: a process killed outright
# writes no profile). Installs cargo-llvm-cov (pinned, into .deps/cargo-tools) and rustup's
# llvm-tools, which match the toolchain's LLVM, and the servers the tests talk to.
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
version=0.9.1
tools="$PWD/.deps/cargo-tools"
if [ "$("$tools/bin/cargo-llvm-cov" llvm-cov --version 2>/dev/null | awk '{print $2}')" != "$version" ]; then
  cargo install --locked --root "$tools" --version "$version" cargo-llvm-cov
fi
rustup component add llvm-tools >/dev/null
export PATH="$tools/bin:$PATH"
scripts/install-mcp-servers.sh
scripts/install-litellm.sh
scripts/install-arcadedb.sh
scripts/install-test-tools.sh
scripts/install-fuzz-tools.sh
out="$PWD/target/coverage"
mkdir -p "$out"
export CONFORMANCE_REPORT_DIR="$out/conformance"
export MHG_TEST_STOP_GRACEFULLY=1
if ((run)); then
  cargo llvm-cov clean --workspace
  cargo llvm-cov --no-report --workspace --locked -- "$@"
fi
# The examples and the test code itself are not what is measured.
ignore='(/tests/|/examples/|/benches/|crates/testkit/|crates/loadtest/)'
cargo llvm-cov report --ignore-filename-regex "$ignore" --html --output-dir "$out"
cargo llvm-cov report --ignore-filename-regex "$ignore" --summary-only >"$out/summary.txt"
cargo llvm-cov report --ignore-filename-regex "$ignore" --lcov --output-path "$out/lcov.info"
# Per crate, without the `#[cfg(test)]` modules at the end of the source files (stable Rust
# cannot mark them uncounted; the lines that run only in tests would inflate the numbers).
python3 scripts/lib/coverage_by_crate.py "$out/lcov.info" "$PWD" >"$out/crates.txt"
cat "$out/crates.txt"
echo "coverage: $out/html/index.html" >&2
