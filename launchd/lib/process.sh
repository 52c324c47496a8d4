# shellcheck shell=bash
# Owns process mode (wherever launchctl is absent): finding the binary, starting a gateway
# detached in a session of its own with its pid file and log, telling a live gateway from a
# stale pid file, and reaping what a stopped gateway left in its session; also the process
# checks launchd mode shares (pid_alive). Sourced by services-manager.sh; defines functions only.
# shellcheck disable=SC2154,SC2034 # the settings and S_* are services-manager.sh's; LAUNCH_* are start.sh's

# The gateway binary that runs the services: --bin / MCP_GATEWAY_BIN, else the first of
# $default_bins that exists, else the one on PATH.
resolve_bin() {
  local candidate
  if [ -n "$opt_bin" ]; then
    [ -x "$opt_bin" ] || die "binary $opt_bin (--bin / MCP_GATEWAY_BIN) is not an executable file"
    echo "$(cd -P "$(dirname "$opt_bin")" && pwd)/$(basename "$opt_bin")"
    return
  fi
  for candidate in "${default_bins[@]}"; do
    if [ -x "$candidate" ]; then echo "$candidate"; return; fi
  done
  candidate="$(command -v mcp-http-gateway 2>/dev/null || true)"
  [ -n "$candidate" ] || die "no mcp-http-gateway binary: not installed, no release build where cargo puts it, not on PATH (give --bin or MCP_GATEWAY_BIN)"
  echo "$candidate"
}

pid_alive() { # pid: exists and is not a zombie
  local stat=""
  kill -0 "$1" 2>/dev/null || return 1
  if [ -r "/proc/$1/stat" ]; then
    stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
    stat="${stat##*) }"
    stat="${stat%% *}"
  else
    stat="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
  fi
  case "$stat" in Z* | X* | "") return 1 ;; esac
}

# The command line of a process, arguments separated by spaces, with a trailing space.
pid_cmdline() {
  if [ -r "/proc/$1/cmdline" ]; then
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null
  else
    printf '%s ' "$(ps -o command= -p "$1" 2>/dev/null)"
  fi
}

# Is pid the gateway serving service i? (Guards against pid files whose pid was reused.)
pid_is_service() { # pid i
  pid_alive "$1" || return 1
  case "$(pid_cmdline "$1")" in *" serve --config ${S_CFG[$2]} "*) return 0 ;; esac
  return 1
}

pid_file() { echo "$run_dir/${S_NAME[$1]}.pid"; }

# Sets SVC_PID to the pid of service i, or to nothing. A pid file whose process is gone (or is
# now another program) is stale: STALE_NOTE says so, and it is removed unless the second
# argument is "keep" (status reports it as dead: the service crashed). A gateway serving this
# config without a pid file (the file was deleted) is adopted.
proc_find_pid() { # i [keep]
  local f pid
  f="$(pid_file "$1")"
  STALE_NOTE="" SVC_PID=""
  if [ -f "$f" ]; then
    pid="$(tr -dc '0-9' <"$f")"
    if [ -n "$pid" ] && pid_is_service "$pid" "$1"; then
      SVC_PID="$pid"
      return 0
    fi
    if [ "${2:-}" = keep ]; then
      STALE_NOTE="pid file $f names pid ${pid:-?}, which is gone: crashed or killed"
    else
      rm -f "$f"
      STALE_NOTE="stale pid file (pid ${pid:-?} is gone) removed"
    fi
  fi
  [ "$systemd_managed" -eq 0 ] || return 0
  pid="$(ps -A -o pid= -o command= 2>/dev/null |
    awk -v want=" serve --config ${S_CFG[$1]} " '{ if (index($0 " ", want)) { print $1; exit } }')"
  if [ -n "$pid" ] && pid_is_service "$pid" "$1"; then
    mkdir -p "$run_dir"
    echo "$pid" >"$f"
    STALE_NOTE="running without a pid file: adopted pid $pid"
    SVC_PID="$pid"
  fi
}

# Starts service i; when it cannot be started, returns 1 with LAUNCH_ERR saying why.
launch_process() { # i
  local i="$1" name="${S_NAME[$1]}" cfg="${S_CFG[$1]}" log pid f kv in_use
  local envs=()
  if [ ! -f "$cfg" ]; then
    LAUNCH_ERR="no config file $cfg"
    return 1
  fi
  if [ -f "$env_file" ]; then
    while IFS= read -r kv; do envs+=("$kv"); done < <(read_env_file "$env_file")
  fi
  probe "$i"
  # Something answers HTTP, or accepts the connection and then says nothing (28 timeout, 52
  # empty reply, 56 reset, 35/16 TLS/HTTP2 talk); 7 = refused = free.
  case "$HP_CODE:$HP_CURL_RC" in 000:28 | 000:52 | 000:56 | 000:35 | 000:16 | [1-9]*) in_use=1 ;; *) in_use=0 ;; esac
  if [ "$in_use" -eq 1 ]; then
    if [ "$HP_SERVICE" = "$name" ]; then
      LAUNCH_ERR="port ${S_PORT[$i]} already serves '$name' ($(port_owner "${S_PORT[$i]}")), not started by this script; stop that one first"
    else
      local as=""
      [ -z "$HP_SERVICE" ] || as=" (it answers as service \"$HP_SERVICE\")"
      LAUNCH_ERR="port ${S_PORT[$i]} is in use by $(port_owner "${S_PORT[$i]}")$as; stop it or change the port in $registry and $cfg"
    fi
    return 1
  fi
  mkdir -p "$run_dir" "$log_dir"
  log="$(log_file "$i")"
  # Keep one previous log when it grew past 10 MiB.
  if [ -f "$log" ] && [ "$(wc -c <"$log" | tr -d ' ')" -gt 10485760 ]; then
    mv -f "$log" "$log.1"
  fi
  local detach=()
  if command -v setsid >/dev/null 2>&1; then detach=(setsid); else detach=(nohup); fi
  # exec all the way down: the pid of the subshell becomes the gateway's. setsid puts it in a
  # session of its own (no terminal, no SIGHUP when this shell's terminal goes), which its MCP
  # children stay in (each in a process group of its own). Descriptors above 2 are closed so that
  # nothing (a test runner's pipes) waits for the gateway.
  (
    cd "$config_dir" || exit
    exec env ${envs[@]+"${envs[@]}"} "${detach[@]}" "$bin" serve --config "$cfg"
  ) </dev/null >>"$log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  pid=$!
  f="$(pid_file "$i")"
  echo "$pid" >"$f.tmp" && mv -f "$f.tmp" "$f"
  LAUNCH_PIDS[i]="$pid"
  echo "$name: started pid $pid (log $log)"
}

# Live (not zombie) processes of the session a gateway leads (setsid made it the leader; the
# MCP servers it spawns are in the session, each in a process group of its own), the gateway
# itself excepted. Where ps knows no session ids (macOS), its process group.
session_members() { # pid
  local table
  if table="$(ps -A -o pid= -o sid= -o stat= 2>/dev/null)"; then :
  else table="$(ps -A -o pid= -o pgid= -o stat= 2>/dev/null)" || return 0
  fi
  printf '%s\n' "$table" | awk -v g="$1" '$2 == g && $1 != g && $3 !~ /^Z/ { printf "%s ", $1 }'
}

# Process mode: what a stopped gateway left running in its session (MCP servers it could not
# stop, having been SIGKILLed) gets SIGTERM, then SIGKILL after 2 s.
reap_session() { # pid name
  [ "$mode" = process ] || return 0
  local left until p
  left="$(session_members "$1")"
  [ -n "$left" ] || return 0
  echo "$2: pids $left- left in the session of pid $1: sending SIGTERM" >&2
  for p in $left; do kill -TERM "$p" 2>/dev/null || true; done
  until=$(($(now_ms) + 2000))
  while [ -n "$(session_members "$1")" ] && [ "$(now_ms)" -lt "$until" ]; do sleep 0.1; done
  left="$(session_members "$1")"
  if [ -n "$left" ]; then
    echo "$2: sending SIGKILL to $left" >&2
    for p in $left; do kill -KILL "$p" 2>/dev/null || true; done
  fi
}
