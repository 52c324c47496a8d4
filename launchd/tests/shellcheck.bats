#!/usr/bin/env bats
# Owns linting the deployment scripts: every script of launchd/ and its lib/, scripts/ and its
# lib/, and these tests must be shellcheck-clean (info level included), so CI enforces it.

load helpers

@test "shellcheck: launchd/*.sh, launchd/lib/*.sh, scripts/*.sh, .ci/run and the tests are clean" {
  command -v shellcheck >/dev/null 2>&1 || {
    echo "shellcheck is not installed: run scripts/install-test-tools.sh" >&2
    return 1
  }
  run shellcheck --severity=info --external-sources \
    "$REPO"/launchd/*.sh "$REPO"/launchd/lib/*.sh "$REPO"/scripts/*.sh "$REPO"/scripts/lib/*.sh \
    "$REPO/.ci/run" "$REPO"/launchd/tests/*.bash "$REPO"/launchd/tests/*.bats
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "every deployment script opens with a comment saying what it owns, uses strict mode and has --help" {
  local f
  for f in "$REPO"/launchd/*.sh "$REPO/scripts/install-test-tools.sh"; do
    sed -n 2p "$f" | grep -q '^# Owns' || { echo "$f: line 2 does not say what it owns" >&2; return 1; }
    grep -q '^set -euo pipefail$' "$f" || { echo "$f: no set -euo pipefail" >&2; return 1; }
    "$f" --help | grep -qi usage || { echo "$f: --help prints no usage" >&2; return 1; }
  done
}
