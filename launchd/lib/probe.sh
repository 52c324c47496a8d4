# shellcheck shell=bash
# Owns asking services how they are: GET /health of several services in parallel (one slow
# service does not hold up the others), what the answer means (the "up" criterion), and who
# holds a port. Sourced by services-manager.sh; defines functions only.
# shellcheck disable=SC2154,SC2034 # $tmp and S_* are services-manager.sh's; HP_* are for its commands
#
# probe_all I... asks; probe_read I then sets HP_CODE (000 = no answer), HP_CURL_RC (curl's exit
# status: 7 = connection refused), HP_HEALTH (healthy, degraded, unavailable, starting, stopping,
# unhealthy, down), HP_STATE, HP_UPTIME, HP_SERVICE (the name it answered with), HP_BODY (a file) and
# HP_AT_MS (when the answer came).

probe_all() {
  local i pids=() p
  for i in "$@"; do
    rm -f "$tmp/probe.$i.body" "$tmp/probe.$i.result"
    (
      rc=0
      code="$(curl -s -m 3 --connect-timeout 1 -o "$tmp/probe.$i.body" -w '%{http_code}' \
        "${S_URL[$i]}/health" 2>/dev/null)" || rc=$?
      echo "${code:-000} $rc $(now_ms)" >"$tmp/probe.$i.result"
    ) &
    pids+=("$!")
  done
  # Only these: the gateways this script started are its children too.
  for p in ${pids[@]+"${pids[@]}"}; do wait "$p" || true; done
}

probe_read() {
  local result
  result="$(cat "$tmp/probe.$1.result" 2>/dev/null || echo "000 7 $(now_ms)")"
  HP_CODE="${result%% *}"
  HP_AT_MS="${result##* }"
  result="${result% *}"
  HP_CURL_RC="${result##* }"
  HP_BODY="$tmp/probe.$1.body"
  [ -f "$HP_BODY" ] || : >"$HP_BODY"
  HP_STATE="" HP_UPTIME="" HP_SERVICE=""
  if [ "$HP_CODE" = 000 ]; then
    HP_HEALTH=down
    return 0
  fi
  # Compact JSON from the gateway; "state", "uptime_seconds" and "service" (with a string value)
  # each occur once in it, in data or, with a 503, in meta.health.
  HP_STATE="$(sed -n 's/.*"state"[[:space:]]*:[[:space:]]*"\([A-Z_]*\)".*/\1/p' "$HP_BODY" | head -n 1)"
  HP_UPTIME="$(sed -n 's/.*"uptime_seconds"[[:space:]]*:[[:space:]]*\([0-9]*\).*/\1/p' "$HP_BODY" | head -n 1)"
  HP_SERVICE="$(sed -n 's/.*"service"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$HP_BODY" | head -n 1)"
  case "$HP_CODE:$HP_STATE" in
    200:HEALTHY) HP_HEALTH=healthy ;;
    200:DEGRADED) HP_HEALTH=degraded ;;
    # Running, but no tool can run (every backend missing): up, as degraded is.
    503:UNAVAILABLE) HP_HEALTH=unavailable ;;
    *:INITIALIZING) HP_HEALTH=starting ;;
    *:SHUTTING_DOWN | *:STOPPED) HP_HEALTH=stopping ;;
    *) HP_HEALTH=unhealthy ;;
  esac
}

probe() { probe_all "$1"; probe_read "$1"; }

# The "up" criterion: /health answers as the service we asked for, running: healthy, degraded,
# or unavailable (503 UNAVAILABLE: running, but no tool can run until its backend is there).
is_up() { # i, after probe_read i
  case "$HP_HEALTH" in
    healthy | degraded | unavailable) [ "$HP_SERVICE" = "${S_NAME[$1]}" ] ;;
    *) return 1 ;;
  esac
}

# Who listens on a TCP port (best effort: ss on Linux, lsof elsewhere).
port_owner() {
  local out=""
  if command -v ss >/dev/null 2>&1; then
    # users:(("python3",pid=4242,fd=3)) -> python3 (pid 4242)
    out="$(ss -Hltnp "sport = :$1" 2>/dev/null |
      sed -n 's/.*users:(("\([^"]*\)",pid=\([0-9]*\).*/\1 (pid \2)/p' | head -n 1)"
  elif command -v lsof >/dev/null 2>&1; then
    out="$(lsof -nP -iTCP:"$1" -sTCP:LISTEN 2>/dev/null | awk 'NR == 2 { print $1 " (pid " $2 ")" }')"
  fi
  echo "${out:-unknown process}"
}
