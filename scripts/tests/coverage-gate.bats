#!/usr/bin/env bats
# Owns the coverage gate of scripts/test.sh (scripts/lib/coverage_by_crate.py --min): a crate
# under the minimum, or absent from the report, fails the run and is named; lines of the
# `#[cfg(test)]` module closing a file are not counted.

setup() {
  REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
  ROOT="$BATS_TEST_TMPDIR/repo"
  mkdir -p "$ROOT/crates/server/src" "$ROOT/crates/contract/src"
  # Three lines of code, then a test module of two lines (lines 4-6).
  printf 'fn a() {}\nfn b() {}\nfn c() {}\n#[cfg(test)]\nmod tests {\n}\n' >"$ROOT/crates/server/src/a.rs"
  printf 'fn d() {}\n' >"$ROOT/crates/contract/src/b.rs"
  cat >"$BATS_TEST_TMPDIR/lcov.info" <<LCOV
SF:$ROOT/crates/server/src/a.rs
DA:1,1
DA:2,1
DA:3,0
DA:5,0
DA:6,0
end_of_record
SF:$ROOT/crates/contract/src/b.rs
DA:1,3
end_of_record
LCOV
}

gate() { python3 "$REPO/scripts/lib/coverage_by_crate.py" "$BATS_TEST_TMPDIR/lcov.info" "$ROOT" "$@"; }

@test "a crate under the minimum fails the gate and is named; test modules are not counted" {
  run gate --min 90 crates/server crates/contract
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"coverage gate: crates/server 66.7% of 3 lines (at least 90%): UNDER"* ]]
  [[ "$output" == *"coverage gate: crates/contract 100.0% of 1 lines (at least 90%): ok"* ]]
  [[ "$output" == *"FAILED: crates/server under 90%"* ]]
}

@test "every crate at the minimum passes" {
  run gate --min 66 crates/server crates/contract
  [ "$status" -eq 0 ]
}

@test "a crate with no line in the report fails rather than passing unmeasured" {
  run gate --min 50 crates/server crates/wrappers
  [ "$status" -eq 1 ]
  [[ "$output" == *"crates/wrappers 0.0% of 0 lines (at least 50%): NO LINES IN THE REPORT"* ]]
}

@test "scripts/test.sh gates server, contract and wrappers at 90 %" {
  grep -q -- '--min 90 crates/server crates/contract crates/wrappers' "$REPO/scripts/test.sh"
}
