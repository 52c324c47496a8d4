# shellcheck shell=bash
# Owns the stop command: SIGTERM to every target at once (launchctl bootout in launchd mode),
# each given its grace period (limits.shutdown_grace_ms + 1 s) to drain, SIGKILL only after
# that (and said), then what it left in its session reaped. Sourced by services-manager.sh;
# defines functions only.
# shellcheck disable=SC2154 # the settings, S_*, targets and C_* are services-manager.sh's

# stop [SERVICE]: status 0 when every target is gone, 1 when one survived SIGKILL.
cmd_stop() {
  local started_ms i pid name pids=() graces=() deadlines=() killed=() pending=() still=() rc=0 now
  started_ms="$(now_ms)"
  for i in "${targets[@]}"; do
    name="${S_NAME[$i]}"
    find_pid "$i"
    pid="$SVC_PID"
    [ -z "$STALE_NOTE" ] || echo "$name: $STALE_NOTE"
    if [ -z "$pid" ]; then
      if [ "$mode" = launchd ] && ld_loaded "$i"; then
        launchctl bootout "$ld_domain/$(ld_label "$i")" 2>/dev/null || true
        echo "$name: unloaded $(ld_label "$i") (was not running)"
      else
        echo "$name: not running"
      fi
      continue
    fi
    if [ "$mode" = launchd ]; then
      # bootout unloads the job (so KeepAlive does not bring it back) and sends SIGTERM.
      launchctl bootout "$ld_domain/$(ld_label "$i")" 2>/dev/null || true
    else
      kill -TERM "$pid" 2>/dev/null || true
    fi
    pids[i]="$pid"
    graces[i]="$(grace_ms "$i")"
    deadlines[i]=$((started_ms + graces[i] + 1000))
    pending+=("$i")
  done

  while [ "${#pending[@]}" -gt 0 ]; do
    still=()
    now="$(now_ms)"
    for i in "${pending[@]}"; do
      name="${S_NAME[$i]}"
      pid="${pids[$i]}"
      if ! pid_alive "$pid"; then
        reap_session "$pid" "$name"
        rm -f "$(pid_file "$i")"
        echo "$name: stopped (pid $pid) in $(fmt_ms $((now - started_ms)))"
      elif [ "$now" -ge "${deadlines[$i]}" ]; then
        kill -KILL "$pid" 2>/dev/null || true
        reap_session "$pid" "$name"
        rm -f "$(pid_file "$i")"
        killed+=("$i")
        echo "${C_RED}$name: did not exit within its grace period (${graces[$i]} ms + 1 s) after SIGTERM: sent SIGKILL to pid $pid${C_OFF}" >&2
      else
        still+=("$i")
      fi
    done
    pending=(${still[@]+"${still[@]}"})
    [ "${#pending[@]}" -eq 0 ] || sleep 0.1
  done
  # A SIGKILLed process may take a moment to go; confirm.
  for i in ${killed[@]+"${killed[@]}"}; do
    pid="${pids[$i]}"
    now=$(($(now_ms) + 2000))
    while pid_alive "$pid" && [ "$(now_ms)" -lt "$now" ]; do sleep 0.1; done
    if pid_alive "$pid"; then
      echo "${S_NAME[$i]}: pid $pid is still there after SIGKILL" >&2
      rc=1
    fi
  done
  [ "${#pids[@]}" -eq 0 ] || echo "${C_BOLD}stopped in $(fmt_ms $(($(now_ms) - started_ms)))${C_OFF}"
  return "$rc"
}
