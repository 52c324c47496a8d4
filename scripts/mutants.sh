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
#       only the mutants on lines changed since REV (default HEAD~1: the commit being tested,
#       uncommitted changes included), made in place in this tree (cargo-mutants puts each
#       file back, also when interrupted) and built with the test profile, reusing the test
#       build; within a time budget (default 300 s): mutants it leaves untested are listed as
#       "not run", never counted as caught. --after-tests (scripts/test.sh, right after the
#       whole suite passed): no baseline run, fixed timeouts
#
# Installs cargo-mutants (pinned, into .deps/cargo-tools). A whole run works on a copy of the
# tree (your working files are never touched), with the `mutants` profile (no debug info).
# Reports: target/mutants/<package>/mutants.out/.
# Exit status: 0 every tested mutant was caught, 1 a mutant survived (listed) or the run
# failed, 2 usage.
set -euo pipefail

usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; }

in_diff=0 after_tests=0 base_given=0 base=HEAD~1 budget=300 packages=(contract mcp-http-gateway) only=()
while (($#)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --in-diff) in_diff=1 ;;
    --after-tests) after_tests=1 ;;
    --base) base="${2:?--base needs a revision}" base_given=1; shift ;;
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
[[ "$budget" =~ ^[0-9]+$ ]] || { echo "mutants: --budget is whole seconds" >&2; exit 2; }

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

common=(--no-shuffle "${only[@]}")
deadline=0
if ((in_diff)); then
  if ! git rev-parse --verify --quiet "$base^{commit}" >/dev/null; then
    # A shallow clone or a first commit has no parent: nothing is known to have changed.
    if ((base_given)); then echo "mutants: no revision '$base' to diff against" >&2; exit 1; fi
    echo "mutants: not run: no commit before this one to diff against"
    exit 0
  fi
  git diff "$base" -- '*.rs' >"$out/change.diff"
  if [ ! -s "$out/change.diff" ]; then
    echo "mutants: no Rust change since $base; no mutant to test"
    exit 0
  fi
  common+=(--in-diff "$out/change.diff" --in-place --profile test)
  # The suite has just passed on this tree, so no baseline run: fixed timeouts replace the ones
  # cargo-mutants would derive from it.
  if ((after_tests)); then common+=(--baseline skip --timeout 120 --build-timeout 600); fi
  deadline=$((SECONDS + budget))
fi

status=0 survived=() not_run=0
for package in "${packages[@]}"; do
  args=(-p "$package" -o "$out/$package")
  if [ "$package" = mcp-http-gateway ]; then args+=(--cargo-test-arg=--lib); fi
  listed="$(cargo mutants --list "${common[@]}" "${args[@]}" | grep -c . || true)"
  if [ "$listed" -eq 0 ]; then
    echo "mutants: $package: no mutant in scope"
    continue
  fi
  rm -rf "$out/$package/mutants.out"
  run=(cargo mutants "${common[@]}" "${args[@]}")
  if ((deadline)); then
    left=$((deadline - SECONDS))
    if ((left <= 0)); then
      echo "mutants: $package: $listed mutants not run (the time budget of ${budget} s is spent)"
      not_run=$((not_run + listed))
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
  tested=$((caught + missed + timeout + unviable))
  echo "mutants: $package: $listed in scope: $caught caught, $timeout timed out (caught), $unviable unviable (did not build), $missed survived, $((listed - tested)) not run"
  not_run=$((not_run + listed - tested))
  if ((missed > 0)); then
    mapfile -t lines <"$results/missed.txt"
    survived+=("${lines[@]}")
  fi
  case "$code" in
    0 | 2 | 3) ;;
    124 | 130) echo "mutants: $package: stopped at the time budget" ;;
    *) echo "mutants: $package: cargo mutants failed (exit $code); see $results/debug.log" >&2; status=1 ;;
  esac
done

if ((${#survived[@]})); then
  echo "mutants: these survived — a test should fail on each, or .cargo/mutants.toml says why it is equivalent:" >&2
  printf '  %s\n' "${survived[@]}" >&2
  status=1
fi
if ((not_run)); then echo "mutants: not run: $not_run (neither caught nor survived)"; fi
exit "$status"
