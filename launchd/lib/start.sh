# shellcheck shell=bash
# Owns the start command: start what is not running (launchd or process mode), then poll every
# service's GET /health at once until each is up or the timeout passes, and say why each one
# that did not come up did not (it exited, with its log's last lines, or it does not answer).
# Sourced by services-manager.sh; defines functions only.
# shellcheck disable=SC2154,SC2034 # the settings, S_*, targets and C_* are services-manager.sh's; HP_* probe.sh's

LAUNCH_PIDS=() # by service index (process mode): the pid we started, for its exit code
FAIL_REASON=() # by service index: why it was not started
LAUNCH_ERR=""  # why launch_process / launch_launchd could not start a service

# Why service i did not come up: exited (with its code) or still not answering, and its log.
explain_not_up() {
  local i="$1" name="${S_NAME[$1]}" pid rc
  if [ "$mode" = process ]; then
    pid="${LAUNCH_PIDS[$i]:-}"
    if [ -n "$pid" ] && ! pid_alive "$pid"; then
      rc=0
      wait "$pid" 2>/dev/null || rc=$?
      rm -f "$(pid_file "$i")"
      echo "  $name: exited with status $rc"
      log_tail "$i"
      return
    fi
  else
    if [ -z "$(ld_pid "$i")" ]; then
      echo "  $name: not running (launchd last exit code: $(ld_last_exit "$i"))"
      log_tail "$i"
      return
    fi
  fi
  pid="${LAUNCH_PIDS[$i]:-$(ld_pid "$i" 2>/dev/null || true)}"
  case "$HP_HEALTH" in
    down) echo "  $name: running (pid ${pid:-?}) but ${S_URL[$i]}/health does not answer; left running ('stop $name' stops it)" ;;
    *)
      local as=""
      [ -z "$HP_SERVICE" ] || as=", as service \"$HP_SERVICE\""
      echo "  $name: ${S_URL[$i]}/health answers $HP_CODE ($HP_HEALTH$as)"
      ;;
  esac
  log_tail "$i"
}

# start [SERVICE]: status 0 when every target is up (healthy, degraded or unavailable), else 1.
cmd_start() {
  local started_ms i pending=() failed=() still=() up_ms name spin=0 frames="|/-\\" waited rc
  started_ms="$(now_ms)"
  if [ "$mode" = process ]; then
    bin="$(resolve_bin)"
  fi
  for i in "${targets[@]}"; do
    name="${S_NAME[$i]}"
    find_pid "$i"
    [ -z "$STALE_NOTE" ] || echo "$name: $STALE_NOTE"
    if [ -n "$SVC_PID" ]; then
      echo "$name: already running (pid $SVC_PID)"
      pending+=("$i")
      continue
    fi
    rc=0
    if [ "$mode" = process ]; then
      launch_process "$i" || rc=$?
    else
      launch_launchd "$i" || rc=$?
    fi
    if [ "$rc" -eq 0 ]; then
      pending+=("$i")
    else
      failed+=("$i")
      FAIL_REASON[i]="$LAUNCH_ERR"
      echo "${C_RED}$name: not started: $LAUNCH_ERR${C_OFF}" >&2
    fi
  done

  # Wait for /health, all services at once, until the deadline.
  local deadline=$((started_ms + start_timeout * 1000)) now tty=0
  [ -t 2 ] && tty=1
  while [ "${#pending[@]}" -gt 0 ]; do
    still=()
    probe_all "${pending[@]}"
    for i in "${pending[@]}"; do
      name="${S_NAME[$i]}"
      probe_read "$i"
      if is_up "$i"; then
        up_ms=$((HP_AT_MS - started_ms))
        [ "$tty" -eq 0 ] || printf '\r\033[K' >&2
        if [ "$HP_HEALTH" = healthy ]; then
          echo "${C_GREEN}$name: up in $(fmt_ms "$up_ms") (healthy)${C_OFF}"
        else
          echo "${C_YELLOW}$name: up in $(fmt_ms "$up_ms") ($HP_HEALTH: see services-manager.sh health $name)${C_OFF}"
        fi
        continue
      fi
      # A process we started that has exited will not come up.
      if [ "$mode" = process ] && [ -n "${LAUNCH_PIDS[$i]:-}" ] && ! pid_alive "${LAUNCH_PIDS[$i]}"; then
        failed+=("$i")
        continue
      fi
      still+=("$i")
    done
    pending=(${still[@]+"${still[@]}"})
    [ "${#pending[@]}" -gt 0 ] || break
    now="$(now_ms)"
    if [ "$now" -ge "$deadline" ]; then
      failed+=("${pending[@]}")
      break
    fi
    if [ "$tty" -eq 1 ]; then
      waited=""
      for i in "${pending[@]}"; do waited="$waited ${S_NAME[$i]}"; done
      printf '\r\033[K%s waiting for%s (%s of %s s)' "${frames:spin%4:1}" "$waited" \
        "$(fmt_ms $((now - started_ms)))" "$start_timeout" >&2
      spin=$((spin + 1))
    fi
    sleep 0.2
  done
  [ "$tty" -eq 0 ] || printf '\r\033[K' >&2

  local total_ms=$(($(now_ms) - started_ms)) ok=$((${#targets[@]} - ${#failed[@]}))
  if [ "${#failed[@]}" -eq 0 ]; then
    echo "${C_BOLD}all ${#targets[@]} up in $(fmt_ms "$total_ms")${C_OFF}"
    return 0
  fi
  {
    echo "${C_RED}${C_BOLD}$ok of ${#targets[@]} up after $(fmt_ms "$total_ms"); not up:${C_OFF}"
    local to_probe=()
    for i in "${failed[@]}"; do [ -n "${FAIL_REASON[$i]:-}" ] || to_probe+=("$i"); done
    probe_all ${to_probe[@]+"${to_probe[@]}"}
    for i in "${failed[@]}"; do
      if [ -n "${FAIL_REASON[$i]:-}" ]; then
        echo "  ${S_NAME[$i]}: not started: ${FAIL_REASON[$i]}"
        continue
      fi
      probe_read "$i"
      explain_not_up "$i"
    done
  } >&2
  return 1
}
