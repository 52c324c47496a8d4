# shellcheck shell=bash
# Owns which services services-manager.sh acts on and what it knows of each: the registry's
# enabled entries as parallel arrays (S_NAME, S_URL, S_PORT, S_CFG; index = position among
# them), the targets of this run (every one, or the one named), and per service its grace
# period and its pid, in either mode. Sourced; defines functions only.
# shellcheck disable=SC2154,SC2034 # the settings are services-manager.sh's; targets, name_width its commands'

S_NAME=() S_URL=() S_PORT=() S_CFG=()

# Fills S_* from the registry (`registry list` of the gateway binary). A bad name or URL, or a
# name listed twice, is an error; naming a disabled service is a usage error.
load_services() {
  local entries why name url enabled port existing
  local url_re='^https?://([^/:]+|\[[^]/]+\]):([0-9]+)/?$'
  if ! entries="$(registry_list "$registry" 2>"$tmp/registry.err")"; then
    why="$(cat "$tmp/registry.err")" # it names the file
    die "cannot read the registry: ${why:-$registry}"
  fi
  while IFS=$'\t' read -r name url enabled; do
    [ -n "$name$url" ] || continue
    [[ "$name" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "$registry: '$name' is not a service name"
    [[ "$url" =~ $url_re ]] || die "$registry: service '$name': url '$url' is not http(s)://HOST:PORT"
    port="${BASH_REMATCH[2]}"
    for existing in ${S_NAME[@]+"${S_NAME[@]}"}; do
      [ "$existing" != "$name" ] || die "$registry: service '$name' is listed twice"
    done
    if [ "$enabled" = false ]; then
      if [ "$service_arg" = "$name" ]; then
        die_usage "service '$name' is disabled in $registry (set enabled: true to manage it)"
      fi
      continue
    fi
    S_NAME+=("$name")
    S_URL+=("${url%/}")
    S_PORT+=("$port")
    S_CFG+=("$config_dir/$name.yaml")
  done <<EOF_ENTRIES
$entries
EOF_ENTRIES
  [ "${#S_NAME[@]}" -gt 0 ] || die "$registry lists no enabled service"
}

# Sets targets (the indexes this run acts on: the service named, else all) and name_width (the
# longest of their names, for the columns).
select_targets() {
  local i
  targets=()
  if [ -n "$service_arg" ]; then
    for i in "${!S_NAME[@]}"; do
      [ "${S_NAME[$i]}" != "$service_arg" ] || targets+=("$i")
    done
    [ "${#targets[@]}" -eq 1 ] ||
      die_usage "unknown service '$service_arg'; the registry has: ${S_NAME[*]}"
  else
    targets=("${!S_NAME[@]}")
  fi
  name_width=7
  for i in "${targets[@]}"; do
    [ "${#S_NAME[$i]}" -le "$name_width" ] || name_width="${#S_NAME[$i]}"
  done
}

grace_ms() { # i -> limits.shutdown_grace_ms of the service's config (5000 when unset)
  grace_ms_of "${S_CFG[$1]}"
}

# SVC_PID = the pid of service i (empty when not running), from launchd or from the pid file;
# STALE_NOTE = what was wrong with a pid file (process mode).
STALE_NOTE=""
SVC_PID=""
find_pid() { # i [keep]
  if [ "$mode" = launchd ]; then
    STALE_NOTE=""
    SVC_PID="$(ld_pid "$1")"
  else
    proc_find_pid "$@"
  fi
}
