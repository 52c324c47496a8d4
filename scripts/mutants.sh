#!/usr/bin/env bash
# Mutation testing with cargo-mutants (docs/testing.md, "Mutation testing"): each mutant is a
# small bug put into the code that .cargo/mutants.toml names (the contract crate and the
# server's request path), and the tests of its crate must fail on it. A mutant they pass on
# "survived": a behaviour no test pins. The contract crate is tested by all of its tests, the
# server by its unit tests (--lib; its e2e tests take minutes per run).
#
#   scripts/mutants.sh [--package contract|mcp-http-gateway] [--re REGEX]
#       every mutant (about 40 min for the contract crate, hours for the server), or those
#       whose name (path:line:column: what is replaced) matches REGEX
#   scripts/mutants.sh --in-diff [--base REV] [--budget SECONDS] [--after-tests]
#       every mutant on a line changed since the base (uncommitted changes included), made in
#       place in this tree (cargo-mutants puts each file back, also when interrupted) and built
#       with the test profile, reusing the test build. The base (scripts/lib/mutants-base.sh):
#       REV; else on a branch off main its merge base with main (or origin/main); on main,
#       HEAD's parent (the commit being tested); for a repository's first commit, the empty
#       tree (every line is new). A shallow clone fetches the history it lacks first; with no
#       base to be found, the run fails: it never takes an unknown change for none. Within a
#       time budget (default 300 s; 0: none): a mutant left untested fails the run as "not
#       run", never counted as caught. --after-tests (scripts/test.sh, right after the whole
#       suite passed): no baseline run, fixed timeouts
#
# Installs cargo-mutants (pinned, into .deps/cargo-tools). A whole run works on a copy of the
# tree (your working files are never touched), with the `mutants` profile (no debug info).
# Reports: target/mutants/<package>/mutants.out/. Ends with one line: "mutants: BASE .. HEAD:
# M in scope, C caught, T timed out (caught), U unviable (did not build), S survived, N not run".
# Exit status: 0 every mutant in scope was caught (or none is in scope); 1 a mutant survived or
# was not run (listed), no base could be found, or cargo-mutants failed (--list included);
# 2 usage.
set -euo pipefail

# The comment above, from its second line to the blank one before `set`.
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

in_diff=0 after_tests=0 base_given="" budget=300 packages=(contract mcp-http-gateway) only=()
while (($#)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --in-diff) in_diff=1 ;;
    --after-tests) after_tests=1 ;;
    --base) base_given="${2:?--base needs a revision}"; shift ;;
    --budget) budget="${2:?--budget needs seconds}"; shift ;;
    --re) only=(--re "${2:?--re needs a regular expression}"); shift ;;
    --package)
      case "${2:-}" in
        contract | mcp-http-gateway) packages=("$2") ;;
        *) echo "mutants: --package is contract or mcp-http-gateway" >&2; exit 2 ;;
      esac
      shift ;;
    *) echo "mutants: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ "$budget" =~ ^[0-9]+$ ]] || { echo "mutants: --budget is whole seconds (0: no limit)" >&2; exit 2; }
if [ -n "$base_given" ] && ((!in_diff)); then
  echo "mutants: --base goes with --in-diff" >&2
  exit 2
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."
version=27.1.0
tools="$PWD/.deps/cargo-tools"
if [ "$("$tools/bin/cargo-mutants" mutants --version 2>/dev/null | awk '{print $2}')" != "$version" ]; then
  # A debug build without debug info: cargo-mutants only drives cargo, and this builds in
  # half the time of a release build.
  CARGO_PROFILE_DEV_DEBUG=false cargo install --locked --debug --root "$tools" --version "$version" cargo-mutants
fi
export PATH="$tools/bin:$PATH"
# A mutant fails property tests on purpose: no regression files in the tree, no long shrinking.
export PROPTEST_DISABLE_FAILURE_PERSISTENCE=1 PROPTEST_MAX_SHRINK_TIME=2000
out="$PWD/target/mutants"
mkdir -p "$out"

common=(--no-shuffle ${only[@]+"${only[@]}"})
deadline=0 scope="every mutant"
if ((in_diff)); then
  # shellcheck source=scripts/lib/mutants-base.sh
  . scripts/lib/mutants-base.sh
  mutants_base "$base_given" || exit 1
  echo "mutants: the change is diffed against $base_short ($base_why)"
  scope="$base_short .. HEAD"
  git diff "$base" -- '*.rs' >"$out/change.diff"
  if [ ! -s "$out/change.diff" ]; then
    # Nothing to test is a pass, and a real one: the base is known.
    echo "mutants: no Rust change since $base_short; no mutant to test"
    exit 0
  fi
  common+=(--in-diff "$out/change.diff" --in-place --profile test)
  # The suite has just passed on this tree, so no baseline run: fixed timeouts replace the ones
  # cargo-mutants would derive from it.
  if ((after_tests)); then common+=(--baseline skip --timeout 120 --build-timeout 600); fi
  if ((budget > 0)); then deadline=$((SECONDS + budget)); fi
fi

status=0 survived=() stopped=""
total=0 total_caught=0 total_timeout=0 total_unviable=0 total_missed=0 total_not_run=0
for package in "${packages[@]}"; do
  args=(-p "$package" -o "$out/$package")
  if [ "$package" = mcp-http-gateway ]; then args+=(--cargo-test-arg=--lib); fi
  # Which mutants are in scope: a --list that fails says nothing about that, so the run fails
  # (its error is on stderr above), never "no mutant in scope".
  code=0
  cargo mutants --list "${common[@]}" "${args[@]}" >"$out/$package.list" || code=$?
  if ((code != 0)); then
    echo "mutants: $package: cargo mutants --list failed (exit $code), so which mutants are in scope is unknown; its error is above" >&2
    exit 1
  fi
  listed="$(grep -c . "$out/$package.list" || true)"
  total=$((total + listed))
  if ((listed == 0)); then
    echo "mutants: $package: no mutant in scope"
    continue
  fi
  rm -rf "$out/$package/mutants.out"
  run=(cargo mutants "${common[@]}" "${args[@]}")
  if ((deadline)); then
    left=$((deadline - SECONDS))
    if ((left <= 0)); then
      echo "mutants: $package: $listed in scope, none run: the time budget of $budget s is spent"
      total_not_run=$((total_not_run + listed))
      stopped="the time budget of $budget s is spent"
      continue
    fi
    # SIGINT: cargo-mutants puts back the mutated file and stops; what it tested is recorded.
    run=(timeout --signal=INT --kill-after=60 "$left" "${run[@]}")
  fi
  code=0
  "${run[@]}" || code=$?
  results="$out/$package/mutants.out"
  count() { if [ -s "$results/$1.txt" ]; then grep -c . "$results/$1.txt"; else echo 0; fi; }
  caught="$(count caught)" missed="$(count missed)" timeout="$(count timeout)" unviable="$(count unviable)"
  not_run=$((listed - caught - missed - timeout - unviable))
  ((not_run >= 0)) || not_run=0
  echo "mutants: $package: $listed in scope: $caught caught, $timeout timed out (caught), $unviable unviable (did not build), $missed survived, $not_run not run"
  total_caught=$((total_caught + caught)) total_timeout=$((total_timeout + timeout))
  total_unviable=$((total_unviable + unviable)) total_missed=$((total_missed + missed))
  total_not_run=$((total_not_run + not_run))
  if ((missed > 0)); then
    mapfile -t lines <"$results/missed.txt"
    survived+=("${lines[@]}")
  fi
  case "$code" in
    0 | 2 | 3) ;;
    124 | 137)
      echo "mutants: $package: stopped at the time budget"
      stopped="the time budget of $budget s is spent" ;;
    *)
      echo "mutants: $package: cargo mutants failed (exit $code); see $results/debug.log" >&2
      stopped="cargo mutants stopped (exit $code)"
      status=1 ;;
  esac
done

if ((${#survived[@]})); then
  echo "mutants: these survived — a test should fail on each, or .cargo/mutants.toml says why it is equivalent:" >&2
  printf '  %s\n' "${survived[@]}" >&2
  status=1
fi
if ((total_not_run)); then
  if ((in_diff)); then
    echo "mutants: $total_not_run of $total mutants of the change were not run (${stopped:-cargo mutants did not reach them}): raise --budget (0: no limit) or run scripts/mutants.sh --in-diff --base $base_arg --budget 0" >&2
  else
    echo "mutants: $total_not_run of $total mutants were not run (${stopped:-cargo mutants did not reach them}); see $out/<package>/mutants.out/debug.log" >&2
  fi
  status=1
fi
echo "mutants: $scope: $total in scope, $total_caught caught, $total_timeout timed out (caught), $total_unviable unviable (did not build), $total_missed survived, $total_not_run not run"
exit "$status"
