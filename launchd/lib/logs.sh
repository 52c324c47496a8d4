# shellcheck shell=bash
# Owns the services' log files: where each is (launchd mode: the plists' log folder; process
# mode: the state folder's logs/), their last lines for "why did it not come up", and the logs
# command (one log as it is, or every one prefixed with its service's name; -f follows).
# Sourced by services-manager.sh; defines functions only.
# shellcheck disable=SC2154,SC2034 # the settings, S_*, targets and C_* are services-manager.sh's; follower_pids its EXIT trap's

log_file() { echo "$log_dir/${S_NAME[$1]}.log"; }

# Last lines of a service's log, indented, for "why did it not come up".
log_tail() {
  local f
  f="$(log_file "$1")"
  if [ -s "$f" ]; then
    echo "    last lines of $f:"
    tail -n "${2:-8}" "$f" | sed 's/^/    | /'
  else
    echo "    (its log $f is empty)"
  fi
}

# logs [SERVICE] [-n N] [-f]: status 1 when there was no log to show.
cmd_logs() {
  local i f name prefix shown=0 many=0
  [ "${#targets[@]}" -le 1 ] || many=1
  for i in "${targets[@]}"; do
    name="${S_NAME[$i]}"
    f="$(log_file "$i")"
    prefix=""
    [ "$many" -eq 0 ] || prefix="$(printf '%s%-*s |%s ' "$C_BOLD" "$name_width" "$name" "$C_OFF")"
    if [ ! -f "$f" ]; then
      echo "$name: no log yet ($f)" >&2
      [ "$follow" -eq 1 ] || continue
      mkdir -p "$(dirname "$f")"
    fi
    shown=$((shown + 1))
    if [ "$follow" -eq 1 ]; then
      # $! is tail's pid; its awk ends when tail does.
      tail -n "$lines" -F "$f" 2>/dev/null > >(awk -v p="$prefix" '{ print p $0; fflush() }') &
      follower_pids+=("$!")
    else
      tail -n "$lines" "$f" | awk -v p="$prefix" '{ print p $0 }'
    fi
  done
  if [ "$follow" -eq 1 ]; then
    wait
  fi
  [ "$shown" -gt 0 ] || return 1
}
