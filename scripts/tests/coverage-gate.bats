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

@test "a test executable an earlier build left beside this build's of the same crate is dropped" {
  deps="$BATS_TEST_TMPDIR/deps"
  mkdir -p "$deps"
  for f in contract-old contract-lib-new server-kept helper-old libmacro-old.so; do
    printf '#!/bin/sh\n' >"$deps/$f"
    chmod +x "$deps/$f"
  done
  printf 'not an executable\n' >"$deps/contract-old.d"
  touch -d '2 hours ago' "$deps/contract-old" "$deps/server-kept" "$deps/helper-old" \
    "$deps/libmacro-old.so" "$deps/contract-old.d"
  stamp="$BATS_TEST_TMPDIR/stamp"
  touch -d '1 hour ago' "$stamp"
  # Built after the stamp: this build's contract executable (its crate is `contract-lib`), and a
  # newer `helper-x` that makes the old `helper-old` (crate `helper`) superseded.
  printf '#!/bin/sh\n' >"$deps/helper-x"
  chmod +x "$deps/helper-x"
  run bash -c '. "$1/scripts/lib/coverage.sh"; coverage_drop_superseded "$2" "$3"' _ "$REPO" "$deps" "$stamp"
  [ "$status" -eq 0 ]
  [ ! -e "$deps/helper-old" ]
  [ -e "$deps/helper-x" ]
  # No build of `contract` or `server` came after the stamp: theirs stay; so do libraries and
  # files that are not executables.
  [ -e "$deps/contract-old" ] && [ -e "$deps/server-kept" ]
  [ -e "$deps/libmacro-old.so" ] && [ -e "$deps/contract-old.d" ]
  [ -e "$deps/contract-lib-new" ]
}
