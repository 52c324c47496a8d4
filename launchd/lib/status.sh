# shellcheck shell=bash
# Owns reporting: the status command (a coloured table, or --json for scripts: state, health and
# uptime of each target, and notes on stale pid files and mismatched ports) and the health
# command (each target's GET /health, pretty-printed). Sourced by services-manager.sh; defines
# functions only.
# shellcheck disable=SC2154 # the settings, S_*, targets, C_* are services-manager.sh's; HP_* probe.sh's

json_str() { # a JSON string literal (names, urls and states here hold no control characters)
  local s="${1//\\/\\\\}"
  printf '"%s"' "${s//\"/\\\"}"
}

# status [SERVICE]: status 1 when any row is RED.
cmd_status() {
  local i name pid state health uptime color row any_red=0 cfg_port json="" sep="" up notes=()
  probe_all "${targets[@]}"
  if [ "$want_json" -eq 0 ]; then
    printf '%s%-*s  %-5s  %-7s  %-9s  %-9s  %s%s\n' "$C_BOLD" "$name_width" SERVICE PORT PID STATE HEALTH UPTIME "$C_OFF"
  fi
  for i in "${targets[@]}"; do
    name="${S_NAME[$i]}"
    find_pid "$i" keep
    pid="$SVC_PID"
    [ -z "$STALE_NOTE" ] || notes+=("$name: $STALE_NOTE")
    probe_read "$i"
    health="$HP_HEALTH"
    if [ "$HP_CODE" != 000 ] && [ -n "$HP_SERVICE" ] && [ "$HP_SERVICE" != "$name" ]; then
      health="other"
      notes+=("$name: port ${S_PORT[$i]} answers as service '$HP_SERVICE'")
    fi
    if [ -n "$pid" ]; then
      state=running
    elif [ "$HP_CODE" != 000 ]; then
      state=unmanaged
      notes+=("$name: something answers on port ${S_PORT[$i]} ($(port_owner "${S_PORT[$i]}")) but it was not started by this script")
    elif [ -n "$STALE_NOTE" ]; then
      state=dead
    elif [ "$mode" = launchd ] && ld_loaded "$i"; then
      state=loaded
    else
      state=stopped
    fi
    case "$state:$health" in
      running:healthy) color=green ;;
      running:degraded | running:unavailable | running:starting | unmanaged:healthy | unmanaged:degraded | unmanaged:unavailable) color=yellow ;;
      *) color=red ;;
    esac
    if [ "$color" = red ]; then any_red=1; up=false; else up=true; fi
    if [ -f "${S_CFG[$i]}" ]; then
      cfg_port="$(config_get "${S_CFG[$i]}" service.port 2>/dev/null || true)"
      if [ -n "$cfg_port" ] && [ "$cfg_port" != "${S_PORT[$i]}" ]; then
        notes+=("$name: the registry says port ${S_PORT[$i]} but ${S_CFG[$i]} says $cfg_port")
      fi
    else
      notes+=("$name: no config file ${S_CFG[$i]}")
    fi
    uptime="-"
    [ -z "$HP_UPTIME" ] || uptime="$(fmt_uptime "$HP_UPTIME")"
    if [ "$want_json" -eq 1 ]; then
      json="$json$sep{\"service\":$(json_str "$name"),\"url\":$(json_str "${S_URL[$i]}"),\"port\":${S_PORT[$i]},\"pid\":${pid:-null},\"state\":$(json_str "$state"),\"health\":$(json_str "$health"),\"http_status\":$((10#$HP_CODE)),\"uptime_seconds\":${HP_UPTIME:-null},\"color\":$(json_str "$color"),\"up\":$up}"
      sep=","
    else
      row="$(printf '%-*s  %-5s  %-7s  %-9s  %-9s  %s' "$name_width" "$name" "${S_PORT[$i]}" "${pid:--}" "$state" "$health" "$uptime")"
      case "$color" in
        green) echo "$C_GREEN$row$C_OFF" ;;
        yellow) echo "$C_YELLOW$row$C_OFF" ;;
        *) echo "$C_RED$row$C_OFF" ;;
      esac
    fi
  done
  if [ "$want_json" -eq 1 ]; then
    printf '{"mode":%s,"services":[%s],"all_up":%s}\n' "$(json_str "$mode")" "$json" \
      "$([ "$any_red" -eq 0 ] && echo true || echo false)"
  fi
  local note
  for note in ${notes[@]+"${notes[@]}"}; do echo "note: $note" >&2; done
  return "$any_red"
}

pretty_json() {
  if command -v jq >/dev/null 2>&1; then jq .
  elif command -v python3 >/dev/null 2>&1; then python3 -m json.tool
  else cat; echo
  fi
}

# health [SERVICE]: status 1 when one does not answer healthy or degraded.
cmd_health() {
  local i doc="" sep="" rc=0 body
  probe_all "${targets[@]}"
  for i in "${targets[@]}"; do
    probe_read "$i"
    if [ "$HP_CODE" = 000 ]; then
      echo "${S_NAME[$i]}: no answer from ${S_URL[$i]}/health" >&2
      body=null
      rc=1
    else
      body="$(cat "$HP_BODY")"
      case "$HP_HEALTH" in healthy | degraded | unavailable) ;; *) rc=1 ;; esac
      [ -n "$body" ] || body=null
    fi
    if [ "${#targets[@]}" -eq 1 ]; then
      doc="$body"
    else
      doc="$doc$sep$(json_str "${S_NAME[$i]}"):$body"
      sep=","
    fi
  done
  [ "${#targets[@]}" -eq 1 ] || doc="{$doc}"
  [ "$doc" = null ] || printf '%s\n' "$doc" | pretty_json
  return "$rc"
}
