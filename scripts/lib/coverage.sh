# shellcheck shell=bash
# Sourced by scripts/test.sh and scripts/coverage.sh: line coverage of the workspace's own
# crates with LLVM's source-based coverage (cargo-llvm-cov, pinned, into .deps/cargo-tools;
# rustup's llvm-tools, built from the toolchain's own LLVM). Run from the repository's root.
#
# coverage_env --clean-profiles|--keep-profiles: exports what makes every later cargo build instrumented (`cargo llvm-cov
#   show-env`: a rustc wrapper that instruments only the workspace's crates, and where profiles
#   go), in a target folder of its own, `<cargo's target folder>/llvm-cov-target`, so a plain
#   build elsewhere keeps its artifacts; removes the profiles of an earlier run
#   (--clean-profiles) or keeps them to report them again (--keep-profiles). Every process
#   of an instrumented binary then writes a profile when it exits (the e2e harness stops
#   gateways with SIGTERM for that: MHG_TEST_STOP_GRACEFULLY).
# coverage_drop_superseded DIR STAMP: deletes the test executables (deps/) or examples
#   (examples/) in DIR built before STAMP of a crate or example that has one built after it (the
#   report reads every executable it finds: an older one of code since changed would count its
#   lines as not run).
# coverage_report OUT [--min PERCENT CRATE...]: merges the profiles into OUT/html/index.html,
#   OUT/summary.txt (per file), OUT/lcov.info and OUT/crates.txt (per crate, without the test
#   modules); with --min, the gate (scripts/lib/coverage_by_crate.py): status 1 when a crate
#   is under PERCENT.

coverage_env() {
  local version=0.9.1 tools="$PWD/.deps/cargo-tools" target
  if [ "$("$tools/bin/cargo-llvm-cov" llvm-cov --version 2>/dev/null | awk '{print $2}')" != "$version" ]; then
    # A debug build without debug info, as for cargo-mutants: cargo-llvm-cov drives cargo and
    # LLVM's tools, which do the work, and this builds in half the time of a release build
    # (117 s on 2 cores, the longest step of a fresh run but the build).
    CARGO_PROFILE_DEV_DEBUG=false cargo install --locked --debug --root "$tools" --version "$version" cargo-llvm-cov
  fi
  rustup component add llvm-tools >/dev/null 2>&1 || rustup component add llvm-tools
  export PATH="$tools/bin:$PATH"
  # shellcheck source=scripts/lib/cargo-target.sh
  . scripts/lib/cargo-target.sh
  target="$(cargo_target_dir .)" || return 1
  export CARGO_TARGET_DIR="$target/llvm-cov-target"
  eval "$(cargo llvm-cov show-env --sh 2>/dev/null)"
  export MHG_TEST_STOP_GRACEFULLY=1
  case "${1:-}" in
    --clean-profiles) cargo llvm-cov clean --workspace --profraw-only ;;
    --keep-profiles) ;;
    *) echo "coverage_env: --clean-profiles or --keep-profiles" >&2; return 2 ;;
  esac
}

coverage_drop_superseded() {
  local dir="$1" stamp="$2" f name
  local -A fresh=()
  # The crates of the executables built after STAMP (this build).
  for f in "$dir"/*; do
    [[ -f "$f" && -x "$f" && "$f" != *.so && "$f" -nt "$stamp" ]] || continue
    name="${f##*/}"
    fresh["${name%-*}"]=1
  done
  for f in "$dir"/*; do
    [[ -f "$f" && -x "$f" && "$f" != *.so && ! "$f" -nt "$stamp" ]] || continue
    name="${f##*/}"
    if [[ -n "${fresh["${name%-*}"]:-}" ]]; then
      rm -f "$f"
    fi
  done
}

coverage_report() {
  local out="$1"
  shift
  # The examples and the test code itself are not what is measured.
  local ignore='(/tests/|/examples/|/benches/|crates/testkit/|crates/loadtest/)'
  mkdir -p "$out"
  cargo llvm-cov report --ignore-filename-regex "$ignore" --html --output-dir "$out"
  cargo llvm-cov report --ignore-filename-regex "$ignore" --summary-only >"$out/summary.txt"
  cargo llvm-cov report --ignore-filename-regex "$ignore" --lcov --output-path "$out/lcov.info"
  # Per crate, without the `#[cfg(test)]` modules at the end of the source files (stable Rust
  # cannot mark them uncounted; the lines that run only in tests would inflate the numbers).
  local status=0
  python3 scripts/lib/coverage_by_crate.py "$out/lcov.info" "$PWD" "$@" >"$out/crates.txt" || status=$?
  cat "$out/crates.txt"
  echo "coverage: $out/html/index.html" >&2
  return "$status"
}
