#!/usr/bin/env bats
# Owns the check that the list of what CI does not run (scripts/not-run-in-ci.txt) and its
# documentation (docs/testing.md, "Not run in CI") name the same things, so neither can grow
# or shrink alone, and that scripts/test.sh prints it.

setup() {
  REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
  LIST="$REPO/scripts/not-run-in-ci.txt"
}

# The AREA:NAME of each entry of the list.
listed() { grep -v '^#' "$LIST" | grep . | sed -E 's/^([^:]+:[^:]+):.*/\1/' | sort; }

# The AREA:NAME of each bullet of the docs section: lines "- `AREA:NAME`: why".
documented() {
  sed -n '/^## Not run in CI/,/^## /p' "$REPO/docs/testing.md" |
    sed -nE 's/^- `([^`]+)`.*/\1/p' | sort
}

@test "every entry is AREA:NAME: why" {
  run bash -c "grep -v '^#' '$LIST' | grep . | grep -vE '^[a-z]+:[^:]+: .+'"
  [ "$status" -eq 1 ] || { echo "malformed lines: $output"; false; }
  [ "$(listed | wc -l)" -gt 0 ]
}

@test "docs/testing.md lists exactly what scripts/not-run-in-ci.txt lists" {
  diff <(listed) <(documented)
}

@test "scripts/test.sh prints the list" {
  grep -q 'not-run-in-ci.txt' "$REPO/scripts/test.sh"
}
