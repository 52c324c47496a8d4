#!/usr/bin/env bats
# Owns the decisions of scripts/mutants.sh (issue 31, item 2: mutation testing fails closed),
# without building anything: which revision --in-diff diffs against (on main HEAD's parent, on
# a branch the merge base with main, a first commit against the empty tree, a shallow clone
# deepened from its remote or else a failure), that a failing `cargo mutants --list` fails the
# run, and that a mutant left untested (the budget spent, cargo-mutants stopped) fails it too.
# Each test runs a copy of the script in a throwaway git repository, where .deps/cargo-tools/bin
# (which the script puts first on PATH) holds a stand-in cargo-mutants (its version only) and a
# stand-in cargo: `cargo mutants --list` prints FAKE_LIST or fails with FAKE_LIST_FAIL; a run
# records the first FAKE_CAUGHT listed mutants as caught and the next FAKE_MISSED as survived,
# then sleeps FAKE_SLEEP seconds or exits FAKE_EXIT.

# shellcheck disable=SC2030,SC2031 # each test exports the stand-in's FAKE_* for itself
bats_require_minimum_version 1.5.0

setup() {
  REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
  export GIT_AUTHOR_NAME=test GIT_AUTHOR_EMAIL=test@example.invalid
  export GIT_COMMITTER_NAME=test GIT_COMMITTER_EMAIL=test@example.invalid
  export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
  export FAKE_CALLS="$BATS_TEST_TMPDIR/cargo.calls"
  unset FAKE_LIST FAKE_LIST_FAIL FAKE_CAUGHT FAKE_MISSED FAKE_SLEEP FAKE_EXIT
  ORIGIN="$BATS_TEST_TMPDIR/origin"
}

# commit DIR FILE TEXT: appends TEXT to FILE in repository DIR and commits it.
commit() {
  mkdir -p "$(dirname "$1/$2")"
  echo "$3" >>"$1/$2"
  git -C "$1" add "$2"
  git -C "$1" commit -q -m "$3"
}

# A repository at $ORIGIN on main: `fn one` then `fn two` in src/lib.rs.
make_origin() {
  git init -q -b main "$ORIGIN"
  commit "$ORIGIN" src/lib.rs "fn one() {}"
  commit "$ORIGIN" src/lib.rs "fn two() {}"
}

# Puts the script under test and the stand-in tools into checkout DIR (untracked).
# The origin with a branch `feature` of two commits off main (its fork point in $fork), and
# one more commit on main after the fork; main is checked out.
make_feature_branch() {
  make_origin
  fork="$(git -C "$ORIGIN" rev-parse HEAD)"
  git -C "$ORIGIN" checkout -q -b feature
  commit "$ORIGIN" src/lib.rs "fn three() {}"
  commit "$ORIGIN" src/lib.rs "fn four() {}"
  git -C "$ORIGIN" checkout -q main
  commit "$ORIGIN" src/other.rs "fn five() {}"
}

install_script() {
  mkdir -p "$1/scripts/lib" "$1/.deps/cargo-tools/bin"
  cp "$REPO/scripts/mutants.sh" "$1/scripts/"
  cp "$REPO/scripts/lib/mutants-base.sh" "$1/scripts/lib/"
  printf '#!/bin/sh\necho "cargo-mutants 27.1.0"\n' >"$1/.deps/cargo-tools/bin/cargo-mutants"
  cat >"$1/.deps/cargo-tools/bin/cargo" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
echo "cargo $*" >>"$FAKE_CALLS"
[ "$1" = mutants ] || { echo "stand-in cargo: only 'cargo mutants' is expected, not '$1'" >&2; exit 101; }
shift
list=0 out=""
while (($#)); do
  case "$1" in
    --list) list=1 ;;
    -o) out="$2"; shift ;;
  esac
  shift
done
if ((list)); then
  if [ -n "${FAKE_LIST_FAIL:-}" ]; then echo "$FAKE_LIST_FAIL" >&2; exit 1; fi
  printf '%s' "${FAKE_LIST:-}"
  exit 0
fi
mkdir -p "$out/mutants.out"
caught="${FAKE_CAUGHT:-0}" missed="${FAKE_MISSED:-0}"
printf '%s' "${FAKE_LIST:-}" | awk -v n="$caught" 'NR <= n' >"$out/mutants.out/caught.txt"
printf '%s' "${FAKE_LIST:-}" | awk -v a="$caught" -v n="$missed" 'NR > a && NR <= a + n' >"$out/mutants.out/missed.txt"
if [ -n "${FAKE_SLEEP:-}" ]; then exec sleep "$FAKE_SLEEP"; fi
exit "${FAKE_EXIT:-0}"
EOF
  chmod +x "$1/.deps/cargo-tools/bin/cargo-mutants" "$1/.deps/cargo-tools/bin/cargo"
}

short() { git -C "$1" rev-parse --short "$2"; }

THREE=$'src/lib.rs:1:1: replace a\nsrc/lib.rs:2:1: replace b\nsrc/lib.rs:3:1: replace c\n'

@test "a failing cargo mutants --list fails the run and shows its error (not 'no mutant in scope')" {
  make_origin
  install_script "$ORIGIN"
  export FAKE_LIST_FAIL="error: the stand-in's --list broke"
  run "$ORIGIN/scripts/mutants.sh" --in-diff --package contract
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"error: the stand-in's --list broke"* ]]
  [[ "$output" == *"contract: cargo mutants --list failed (exit 1)"* ]]
  [[ "$output" != *"no mutant in scope"* ]]
  # A whole run too.
  run "$ORIGIN/scripts/mutants.sh" --package contract
  [ "$status" -eq 1 ]
  [[ "$output" == *"error: the stand-in's --list broke"* ]]
}

@test "on main: diffed against HEAD's parent, the commit being tested; all caught is exit 0" {
  make_origin
  install_script "$ORIGIN"
  export FAKE_LIST="$THREE" FAKE_CAUGHT=3
  run "$ORIGIN/scripts/mutants.sh" --in-diff --package contract
  echo "$output"
  [ "$status" -eq 0 ]
  local parent
  parent="$(short "$ORIGIN" HEAD~1)"
  [[ "$output" == *"diffed against $parent (HEAD's parent: HEAD is on main"* ]]
  [[ "$output" == *"mutants: $parent .. HEAD: 3 in scope, 3 caught, 0 timed out (caught), 0 unviable (did not build), 0 survived, 0 not run"* ]]
  grep -q -- "--in-diff $ORIGIN/target/mutants/change.diff" "$FAKE_CALLS"
  grep -qx '+fn two() {}' "$ORIGIN/target/mutants/change.diff"
  run ! grep -qx '+fn one() {}' "$ORIGIN/target/mutants/change.diff"
}

@test "a detached copy with no main and no remote: diffed against HEAD's parent" {
  make_origin
  install_script "$ORIGIN"
  git -C "$ORIGIN" checkout --quiet --detach
  git -C "$ORIGIN" branch --quiet -D main
  export FAKE_LIST="$THREE" FAKE_CAUGHT=3
  run "$ORIGIN/scripts/mutants.sh" --in-diff --package contract
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"diffed against $(short "$ORIGIN" HEAD~1) (HEAD's parent: no branch main here and no remote"* ]]
}

@test "on a branch off main: diffed against the merge base, so every commit of the branch counts" {
  local fork
  make_feature_branch
  git -C "$ORIGIN" checkout -q feature
  install_script "$ORIGIN"
  export FAKE_LIST="$THREE" FAKE_CAUGHT=3
  run "$ORIGIN/scripts/mutants.sh" --in-diff --package contract
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"diffed against $(short "$ORIGIN" "$fork") (the merge base of HEAD with main)"* ]]
  grep -qx '+fn three() {}' "$ORIGIN/target/mutants/change.diff"
  grep -qx '+fn four() {}' "$ORIGIN/target/mutants/change.diff"
  run ! grep -q 'fn five' "$ORIGIN/target/mutants/change.diff"
}

@test "no Rust change since the base: exit 0, naming the base, and cargo-mutants is not asked" {
  make_origin
  commit "$ORIGIN" README.md "a line of prose"
  install_script "$ORIGIN"
  run "$ORIGIN/scripts/mutants.sh" --in-diff
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"no Rust change since $(short "$ORIGIN" HEAD~1); no mutant to test"* ]]
  [ ! -e "$FAKE_CALLS" ]
}

@test "a repository's first commit: every line is new, diffed against the empty tree" {
  git init -q -b main "$ORIGIN"
  commit "$ORIGIN" src/lib.rs "fn one() {}"
  install_script "$ORIGIN"
  export FAKE_LIST="$THREE" FAKE_CAUGHT=3
  run "$ORIGIN/scripts/mutants.sh" --in-diff --package contract
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"diffed against the empty tree (HEAD is the first commit"* ]]
  grep -qx '+fn one() {}' "$ORIGIN/target/mutants/change.diff"
  [[ "$output" == *"mutants: the empty tree .. HEAD: 3 in scope, 3 caught"* ]]
}

@test "a shallow clone of one commit with no remote: exit 1, saying what is missing and how to give --base" {
  make_origin
  git clone -q --depth 1 "file://$ORIGIN" "$BATS_TEST_TMPDIR/shallow"
  git -C "$BATS_TEST_TMPDIR/shallow" remote remove origin
  install_script "$BATS_TEST_TMPDIR/shallow"
  export FAKE_LIST="$THREE" FAKE_CAUGHT=3
  run "$BATS_TEST_TMPDIR/shallow/scripts/mutants.sh" --in-diff
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"cannot tell which lines changed: HEAD is on main, and its parent is not in this shallow clone (and no remote to fetch it from)"* ]]
  [[ "$output" == *"scripts/mutants.sh --in-diff --base REV"* ]]
  [ ! -e "$FAKE_CALLS" ]
  # A --base it does not have fails too.
  run "$BATS_TEST_TMPDIR/shallow/scripts/mutants.sh" --in-diff --base HEAD~1
  [ "$status" -eq 1 ]
  [[ "$output" == *"no commit 'HEAD~1' in this repository to diff against (a shallow clone"* ]]
}

@test "a shallow clone with its remote fetches the parent it lacks, then diffs against it" {
  make_origin
  git clone -q --depth 1 "file://$ORIGIN" "$BATS_TEST_TMPDIR/shallow"
  install_script "$BATS_TEST_TMPDIR/shallow"
  export FAKE_LIST="$THREE" FAKE_CAUGHT=3
  run "$BATS_TEST_TMPDIR/shallow/scripts/mutants.sh" --in-diff --package contract
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"fetching it from origin"* ]]
  [[ "$output" == *"diffed against $(short "$ORIGIN" HEAD~1) (HEAD's parent"* ]]
}

@test "a shallow clone of a branch fetches main and the history to the merge base" {
  local fork
  make_feature_branch
  git clone -q --depth 1 --branch feature "file://$ORIGIN" "$BATS_TEST_TMPDIR/shallow"
  install_script "$BATS_TEST_TMPDIR/shallow"
  export FAKE_LIST="$THREE" FAKE_CAUGHT=3
  run "$BATS_TEST_TMPDIR/shallow/scripts/mutants.sh" --in-diff --package contract
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"diffed against $(short "$ORIGIN" "$fork") (the merge base of HEAD with origin/main)"* ]]
  grep -qx '+fn three() {}' "$BATS_TEST_TMPDIR/shallow/target/mutants/change.diff"
}

@test "mutants the time budget does not reach fail the run: N of M not run, and what to do" {
  make_origin
  install_script "$ORIGIN"
  # Both packages list three; the first gets one tested before the budget of 1 s ends, the
  # second none.
  export FAKE_LIST="$THREE" FAKE_CAUGHT=1 FAKE_SLEEP=30
  run "$ORIGIN/scripts/mutants.sh" --in-diff --budget 1
  echo "$output"
  [ "$status" -eq 1 ]
  local parent
  parent="$(short "$ORIGIN" HEAD~1)"
  [[ "$output" == *"contract: stopped at the time budget"* ]]
  [[ "$output" == *"mcp-http-gateway: 3 in scope, none run: the time budget of 1 s is spent"* ]]
  [[ "$output" == *"mutants: 5 of 6 mutants of the change were not run (the time budget of 1 s is spent): raise --budget (0: no limit) or run scripts/mutants.sh --in-diff --base $parent --budget 0"* ]]
  [[ "$output" == *"mutants: $parent .. HEAD: 6 in scope, 1 caught, 0 timed out (caught), 0 unviable (did not build), 0 survived, 5 not run"* ]]
}

@test "--budget 0 sets no limit" {
  make_origin
  install_script "$ORIGIN"
  export FAKE_LIST="$THREE" FAKE_CAUGHT=3 FAKE_SLEEP=2
  run "$ORIGIN/scripts/mutants.sh" --in-diff --package contract --budget 0
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"3 in scope, 3 caught"*"0 not run"* ]]
  run ! grep -q timeout "$FAKE_CALLS"
}

@test "cargo-mutants stopping before the end fails the run, counting what it did not test" {
  make_origin
  install_script "$ORIGIN"
  export FAKE_LIST="$THREE" FAKE_CAUGHT=1 FAKE_EXIT=4
  run "$ORIGIN/scripts/mutants.sh" --in-diff --package contract
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"contract: cargo mutants failed (exit 4)"* ]]
  [[ "$output" == *"2 of 3 mutants of the change were not run (cargo mutants stopped (exit 4))"* ]]
}

@test "a mutant that survives fails the run and is listed" {
  make_origin
  install_script "$ORIGIN"
  export FAKE_LIST="$THREE" FAKE_CAUGHT=2 FAKE_MISSED=1 FAKE_EXIT=2
  run "$ORIGIN/scripts/mutants.sh" --in-diff --package contract
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"these survived"*"src/lib.rs:3:1: replace c"* ]]
  [[ "$output" == *"3 in scope, 2 caught, 0 timed out (caught), 0 unviable (did not build), 1 survived, 0 not run"* ]]
}
