# shellcheck shell=bash
# Owns time for services-manager.sh: the clock in milliseconds (deadlines, how long a start or
# stop took) and durations and uptimes as people read them. Sourced; defines functions only.

# Milliseconds since the epoch (whole seconds where neither bash 5 nor GNU date can do better).
now_ms() {
  if [ -n "${EPOCHREALTIME:-}" ]; then
    local t="${EPOCHREALTIME//[!0-9]/}"
    echo $((10#$t / 1000))
    return
  fi
  local n
  n="$(date +%s%N 2>/dev/null || true)"
  case "$n" in
    *[!0-9]* | "") echo $(($(date +%s) * 1000)) ;;
    *) echo $((10#$n / 1000000)) ;;
  esac
}

fmt_ms() { # 42 -> 42 ms, 1234 -> 1.2 s
  if [ "$1" -lt 1000 ]; then printf '%d ms' "$1"; else printf '%d.%d s' $(($1 / 1000)) $((($1 % 1000) / 100)); fi
}

fmt_uptime() { # seconds -> 3d04h, 2h05m, 4m07s, 12s
  local s=$1
  if [ "$s" -ge 86400 ]; then printf '%dd%02dh' $((s / 86400)) $((s % 86400 / 3600))
  elif [ "$s" -ge 3600 ]; then printf '%dh%02dm' $((s / 3600)) $((s % 3600 / 60))
  elif [ "$s" -ge 60 ]; then printf '%dm%02ds' $((s / 60)) $((s % 60))
  else printf '%ds' "$s"
  fi
}
