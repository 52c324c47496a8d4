# shellcheck shell=bash
# Owns how the launchd/ scripts speak and end: messages on stderr prefixed with the script's
# name ($prog, set before this is sourced), exit status 1 for a failure and 2 for a usage
# error, and the colours of services-manager.sh's output. Sourced; defines functions only.
# shellcheck disable=SC2154,SC2034 # $prog is the sourcing script's; C_* are for its output

# A usage error: exit 2.
die_usage() { echo "$prog: $*" >&2; echo "Run with --help for usage." >&2; exit 2; }
# Something could not be done: exit 1.
die() { echo "$prog: $*" >&2; exit 1; }
warn() { echo "$prog: $*" >&2; }

# Sets C_GREEN, C_YELLOW, C_RED, C_BOLD and C_OFF for WHEN: always, never, or auto (only on a
# terminal, never with NO_COLOR set). Status 1 for another WHEN.
set_colors() { # WHEN
  local on=0
  case "$1" in
    always) on=1 ;;
    never) ;;
    auto) if [ -t 1 ] && [ -z "${NO_COLOR:-}" ] && [ "${TERM:-dumb}" != dumb ]; then on=1; fi ;;
    *) return 1 ;;
  esac
  if [ "$on" -eq 1 ]; then
    C_GREEN=$'\033[32m' C_YELLOW=$'\033[33m' C_RED=$'\033[31m' C_BOLD=$'\033[1m' C_OFF=$'\033[0m'
  else
    C_GREEN="" C_YELLOW="" C_RED="" C_BOLD="" C_OFF=""
  fi
}
