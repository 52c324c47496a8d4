#!/usr/bin/env bats
# Owns the check that scripts/flake-hunt.sh reports every test that failed in any of its runs,
# with how often, and exits 1 then; 0 when none did; 2 when a run failed with no failing test
# named (a build or harness failure is not a clean bill). A stand-in `cargo` plays the suite.

setup() {
  REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
  BIN="$BATS_TEST_TMPDIR/bin"
  mkdir -p "$BIN"
  # The stand-in: `--no-run` builds nothing; a run prints the nextest lines FAKE_RUNS says for
  # its run number (counted in a file), and fails when one of them failed.
  cat >"$BIN/cargo" <<'EOF'
#!/usr/bin/env bash
[[ " $* " == *" --no-run "* ]] && exit 0
n=$(( $(cat "$FAKE_COUNT" 2>/dev/null || echo 0) + 1 ))
echo "$n" >"$FAKE_COUNT"
lines="$(printf '%s' "$FAKE_RUNS" | sed -n "${n}p" | tr ';' '\n')"
[ -n "$lines" ] && printf '%s\n' "$lines"
echo "     Summary [   1.000s] done"
printf '%s' "$lines" | grep -q 'FAIL \|TIMEOUT \|^BROKEN' && exit 100
exit 0
EOF
  chmod +x "$BIN/cargo"
  export PATH="$BIN:$PATH" FLAKE_HUNT_NO_SETUP=1 FAKE_COUNT="$BATS_TEST_TMPDIR/count"
  export FLAKE_HUNT_OUT="$BATS_TEST_TMPDIR/out"
}

@test "a test that failed in one run of three is reported, with its count" {
  # One run a line; a run's output lines separated by ';' (nextest names a failure twice: when
  # it ends, and again at the end of the run).
  export FAKE_RUNS=$'        PASS [   0.5s] (1/2) e2e a::steady;        FAIL [   2.0s] (2/2) e2e b::flaky;        FAIL [   2.0s] (2/2) e2e b::flaky\n        PASS [   0.5s] (1/1) e2e a::steady\n     TIMEOUT [ 180.0s] (1/1) e2e c::hung'
  run "$REPO/scripts/flake-hunt.sh" -n 3 --load 0
  [ "$status" -eq 1 ] || { echo "$output"; false; }
  [[ "$output" == *"1  b::flaky"* ]] || { echo "$output"; false; }
  [[ "$output" == *"1  c::hung"* ]] || { echo "$output"; false; }
  [[ "$output" != *"a::steady"* ]] || { echo "$output"; false; }
  [ "$(cat "$FAKE_COUNT")" -eq 3 ]
}

@test "no failure in any run passes" {
  export FAKE_RUNS=$'        PASS [   0.5s] (1/1) e2e a::steady\n        PASS [   0.5s] (1/1) e2e a::steady'
  run "$REPO/scripts/flake-hunt.sh" -n 2 --load 1
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [[ "$output" == *"no test failed"* ]]
}

@test "a run that fails without naming a test is an error, not a pass" {
  export FAKE_RUNS=$'BROKEN: could not compile'
  run "$REPO/scripts/flake-hunt.sh" -n 2 --load 0
  [ "$status" -eq 2 ] || { echo "$output"; false; }
}

@test "a bad count is refused" {
  run "$REPO/scripts/flake-hunt.sh" -n zero
  [ "$status" -eq 2 ]
}
