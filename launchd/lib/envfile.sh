# shellcheck shell=bash
# Owns reading KEY=VALUE files (install.env, gateway.env, an --env-file) for every launchd/
# script, so that they all read one the same way: comments and blank lines skipped, one pair of
# surrounding quotes removed from the value (as systemd's EnvironmentFile= does), nothing
# expanded. Needs common.sh (warn). Sourced; defines functions only.

# Prints FILE's valid lines as KEY=VALUE. A line that is not KEY=VALUE is skipped with a
# warning or, with "strict", ends it: status 1, said on stderr.
read_env_file() { # FILE [strict]
  local line key value
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in '' | '#'*) continue ;; esac
    key="${line%%=*}"
    value="${line#*=}"
    if [ "$key" = "$line" ] || ! [[ "$key" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
      if [ "${2:-}" = strict ]; then
        warn "$1: not a KEY=VALUE line: $line"
        return 1
      fi
      warn "$1: ignoring a line that is not KEY=VALUE: $line"
      continue
    fi
    case "$value" in
      \"*\") value="${value#\"}"; value="${value%\"}" ;;
      \'*\') value="${value#\'}"; value="${value%\'}" ;;
    esac
    printf '%s=%s\n' "$key" "$value"
  done <"$1"
}

# One value of FILE (the last, when KEY is there twice; empty when the file or KEY is absent).
env_value() { # FILE KEY
  [ -f "$1" ] || return 0
  read_env_file "$1" | sed -n "s/^$2=//p" | tail -n 1
}
