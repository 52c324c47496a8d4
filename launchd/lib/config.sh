# shellcheck shell=bash
# Owns reading the services' YAML (a service's config, the registry): always through the gateway
# binary (`config get`, `registry list`), so that there is one YAML parser and a script cannot
# read a file otherwise than `serve` does. Sourced by services-manager.sh and render-plists.sh,
# which set $config_reader with find_config_reader. Sourced; defines functions only.
# shellcheck disable=SC2154 # $config_reader is the sourcing script's

# Prints the first CANDIDATE that is an executable with `config get` (a binary given to run the
# services may be an older build or a stand-in that has not); status 1 when none is.
find_config_reader() { # CANDIDATE...
  local c
  for c in "$@"; do
    case "$c" in */*) ;; ?*) c="./$c" ;; esac # run that file, not a namesake on PATH
    if [ -n "$c" ] && [ -f "$c" ] && [ -x "$c" ] && "$c" config get --help >/dev/null 2>&1; then
      echo "$c"
      return 0
    fi
  done
  return 1
}

# The value at dotted KEY of service config FILE, defaults applied, as `serve` would load it:
# strings and numbers bare, objects and arrays as compact JSON. Status 1, the binary saying why
# on stderr, when FILE is invalid or has no such KEY.
config_get() { # FILE KEY
  "$config_reader" config get "$1" "$2"
}

# The registry (services.yaml): one NAME<TAB>URL<TAB>ENABLED (true or false) line per entry.
registry_list() { # FILE
  "$config_reader" registry list "$1"
}

# limits.shutdown_grace_ms of service config FILE; the gateway's default, 5000, when the file is
# missing or invalid or there is no binary to read it with.
grace_ms_of() { # FILE
  local g=""
  if [ -f "$1" ] && [ -n "${config_reader:-}" ]; then
    g="$(config_get "$1" limits.shutdown_grace_ms 2>/dev/null || true)"
  fi
  case "$g" in '' | *[!0-9]*) g=5000 ;; esac
  echo "$g"
}
