#!/usr/bin/env bash
# Owns the day-to-day running of the gateway's services, docker-compose style: start, stop,
# restart, status, logs and health of every service of the registry (config/services.yaml), or
# of one. On macOS it drives the LaunchAgents that launchd/install.sh installed (launchctl);
# wherever launchctl is absent (Linux) it runs the binary itself as detached background
# processes, with pid files and log files in a state folder. Runs on bash 3.2 (macOS) and later.
# See docs/operations.md.
set -euo pipefail
# bash 5.2 would make "&" in ${var//pattern/replacement} stand for the match.
shopt -u patsub_replacement 2>/dev/null || true

# ---------------------------------------------------------------------------------------------
# Where things are

script_dir="$(cd -P "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# In the repository this is the checkout (launchd/..); in an installation the prefix (bin/..).
root="$(cd -P "$script_dir/.." && pwd)"
# Written by launchd/install.sh next to the installed copy of this script.
install_env="$root/install.env"

usage() {
  cat <<'EOF'
Usage: services-manager.sh COMMAND [SERVICE] [OPTIONS]

Commands (each for every enabled service of the registry, or for the one SERVICE named):
  start     Start, then wait until each answers GET /health with 200 (healthy or degraded);
            say which did not come up and why (its last log lines).
  stop      SIGTERM, wait for the gateway's drain (limits.shutdown_grace_ms of the service's
            config + 1 s), SIGKILL only after that (and say so).
  restart   stop, then start.
  status    A table: service, port, pid, state, health, uptime. GREEN = running and healthy,
            YELLOW = degraded (or answering but not run by this script), RED = down.
  logs      The last lines of the service's log (of every service's, each line prefixed with
            the service's name); -f follows them.
  health    GET /health, pretty-printed (all services: one JSON object by service name).

Options:
  --json              status: one JSON document instead of the table.
  -f, --follow        logs: keep following.
  -n, --lines N       logs: how many lines to show first (default 50).
  --timeout SECONDS   start/restart: how long to wait for /health (default 15;
                      MCP_GATEWAY_START_TIMEOUT).
  --config-dir DIR    The services' YAML files, <DIR>/<service>.yaml (MCP_GATEWAY_CONFIG_DIR;
                      default: the config/ folder beside this script's folder).
  --registry FILE     The registry (MCP_GATEWAY_REGISTRY; default <config dir>/services.yaml).
  --bin PATH          The mcp-http-gateway binary, in process mode (MCP_GATEWAY_BIN; default:
                      the one beside this script, else the installed one, else
                      target/release/mcp-http-gateway of the checkout, else on PATH).
  --state-dir DIR     Process mode: pid files in DIR/run, logs in DIR/logs
                      (MCP_GATEWAY_STATE_DIR; default ${XDG_STATE_HOME:-~/.local/state}/mcp-http-gateway).
  --mode MODE         launchd or process (MCP_GATEWAY_MODE; default launchd where launchctl
                      exists, else process).
  --label-prefix P    launchd mode: job labels are P.<service> (MCP_GATEWAY_LABEL_PREFIX; default
                      the one install.sh recorded, else com.mcp-http-gateway).
  --color WHEN        auto, always or never (default auto: only on a terminal, never with
                      NO_COLOR set).
  -h, --help          This text.

Environment also read: MCP_GATEWAY_LOG_DIR (launchd mode's log folder; default the one
install.sh recorded, else ~/Library/Logs/mcp-http-gateway), MCP_GATEWAY_ENV_FILE (process mode:
KEY=VALUE lines added to each service's environment; default <config dir>/gateway.env).

A registry entry is `{ name: NAME, url: "http://HOST:PORT", enabled: true }`; entries with
`enabled: false` are skipped. Process mode starts `mcp-http-gateway serve --config
<config dir>/NAME.yaml` in its own session, detached from the terminal.

Exit codes: 0 all good (every service concerned is up: healthy or degraded); 1 some service is
down, did not start or stop, or an operation failed; 2 usage error (unknown command, option or
service).
EOF
}

# ---------------------------------------------------------------------------------------------
# Small helpers

die_usage() { echo "services-manager: $*" >&2; echo "Run with --help for usage." >&2; exit 2; }
die() { echo "services-manager: $*" >&2; exit 1; }
warn() { echo "services-manager: $*" >&2; }

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

# A KEY=VALUE file (install.env, gateway.env): prints its valid lines, without comments and
# blank lines, one surrounding pair of quotes removed from the value. Nothing is expanded.
read_env_file() {
  local line key value
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in '' | '#'*) continue ;; esac
    key="${line%%=*}"
    value="${line#*=}"
    if [ "$key" = "$line" ] || ! [[ "$key" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
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

# One value of install.env (empty when absent).
install_setting() {
  [ -f "$install_env" ] || return 0
  read_env_file "$install_env" | sed -n "s/^$1=//p" | tail -n 1
}

# One scalar of a service YAML: yaml_get FILE SECTION KEY (e.g. limits shutdown_grace_ms).
yaml_get() {
  awk -v sec="$2" -v key="$3" '
    /^[^ \t#]/ { insec = ($0 ~ ("^" sec ":[ \t]*(#.*)?$")); next }
    insec && $0 ~ ("^[ \t]+" key ":") {
      v = $0
      sub(/^[^:]*:[ \t]*/, "", v); sub(/[ \t]+#.*$/, "", v); sub(/[ \t]+$/, "", v)
      if (v ~ /^".*"$/ || v ~ /^\047.*\047$/) v = substr(v, 2, length(v) - 2)
      print v; exit
    }' "$1"
}

# The registry: one line NAME|URL|ENABLED per entry of the top-level `services:` list, in flow
# style ({ name: …, url: …, enabled: … }) or block style (- name: … / url: … on the next lines).
parse_registry() {
  awk '
    function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
    function unquote(s) {
      s = trim(s)
      if (s ~ /^".*"$/ || s ~ /^\047.*\047$/) s = substr(s, 2, length(s) - 2)
      return s
    }
    function kv(s,   i, k) {
      i = index(s, ":"); if (i == 0) return
      k = trim(substr(s, 1, i - 1)); sub(/^-[ \t]*/, "", k)
      if (k == "name") name = unquote(substr(s, i + 1))
      else if (k == "url") url = unquote(substr(s, i + 1))
      else if (k == "enabled") enabled = unquote(substr(s, i + 1))
    }
    function emit() {
      if (item) print name "|" url "|" enabled
      item = 0; name = ""; url = ""; enabled = "true"
    }
    BEGIN { enabled = "true" }
    { sub(/(^|[ \t])#.*$/, "") }
    /^[ \t]*$/ { next }
    /^services:[ \t]*$/ { in_list = 1; next }
    /^[^ \t-]/ { if (in_list) emit(); in_list = 0; next }
    !in_list { next }
    /^[ \t]*-[ \t]*\{/ {
      emit(); item = 1
      s = $0; sub(/^[ \t]*-[ \t]*\{/, "", s); sub(/\}[ \t]*$/, "", s)
      n = split(s, parts, ","); for (j = 1; j <= n; j++) kv(parts[j])
      emit(); next
    }
    /^[ \t]*-[ \t]+/ { emit(); item = 1; s = $0; sub(/^[ \t]*-[ \t]+/, "", s); kv(s); next }
    item { kv($0) }
    END { emit() }
  ' "$1"
}

# ---------------------------------------------------------------------------------------------
# Arguments

command=""
service_arg=""
want_json=0
follow=0
lines=50
color_when="auto"
opt_config_dir="${MCP_GATEWAY_CONFIG_DIR:-}"
opt_registry="${MCP_GATEWAY_REGISTRY:-}"
opt_bin="${MCP_GATEWAY_BIN:-}"
opt_state_dir="${MCP_GATEWAY_STATE_DIR:-}"
opt_mode="${MCP_GATEWAY_MODE:-}"
opt_label_prefix="${MCP_GATEWAY_LABEL_PREFIX:-}"
start_timeout="${MCP_GATEWAY_START_TIMEOUT:-15}"

need_value() { [ "$2" -ge 2 ] || die_usage "$1 needs a value"; }
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --json) want_json=1 ;;
    -f | --follow) follow=1 ;;
    -n | --lines) need_value "$1" $#; lines="$2"; shift ;;
    --lines=*) lines="${1#*=}" ;;
    --timeout) need_value "$1" $#; start_timeout="$2"; shift ;;
    --timeout=*) start_timeout="${1#*=}" ;;
    --config-dir) need_value "$1" $#; opt_config_dir="$2"; shift ;;
    --config-dir=*) opt_config_dir="${1#*=}" ;;
    --registry) need_value "$1" $#; opt_registry="$2"; shift ;;
    --registry=*) opt_registry="${1#*=}" ;;
    --bin) need_value "$1" $#; opt_bin="$2"; shift ;;
    --bin=*) opt_bin="${1#*=}" ;;
    --state-dir) need_value "$1" $#; opt_state_dir="$2"; shift ;;
    --state-dir=*) opt_state_dir="${1#*=}" ;;
    --mode) need_value "$1" $#; opt_mode="$2"; shift ;;
    --mode=*) opt_mode="${1#*=}" ;;
    --label-prefix) need_value "$1" $#; opt_label_prefix="$2"; shift ;;
    --label-prefix=*) opt_label_prefix="${1#*=}" ;;
    --color) need_value "$1" $#; color_when="$2"; shift ;;
    --color=*) color_when="${1#*=}" ;;
    -*) die_usage "unknown option '$1'" ;;
    *)
      if [ -z "$command" ]; then command="$1"
      elif [ -z "$service_arg" ]; then service_arg="$1"
      else die_usage "unexpected argument '$1' (one service at most)"
      fi
      ;;
  esac
  shift
done

case "$command" in
  start | stop | restart | status | logs | health) ;;
  "") usage >&2; exit 2 ;;
  *) die_usage "unknown command '$command'" ;;
esac
[[ "$lines" =~ ^[0-9]+$ ]] || die_usage "--lines wants a number, not '$lines'"
if ! [[ "$start_timeout" =~ ^[1-9][0-9]*$ ]]; then
  die_usage "--timeout wants a positive number of seconds, not '$start_timeout'"
fi
[ "$want_json" -eq 0 ] || [ "$command" = status ] || die_usage "--json goes with status"
[ "$follow" -eq 0 ] || [ "$command" = logs ] || die_usage "-f goes with logs"

case "$color_when" in
  always) use_color=1 ;;
  never) use_color=0 ;;
  auto)
    use_color=0
    if [ -t 1 ] && [ -z "${NO_COLOR:-}" ] && [ "${TERM:-dumb}" != dumb ]; then use_color=1; fi
    ;;
  *) die_usage "--color wants auto, always or never, not '$color_when'" ;;
esac
if [ "$use_color" -eq 1 ]; then
  C_GREEN=$'\033[32m' C_YELLOW=$'\033[33m' C_RED=$'\033[31m' C_BOLD=$'\033[1m' C_OFF=$'\033[0m'
else
  C_GREEN="" C_YELLOW="" C_RED="" C_BOLD="" C_OFF=""
fi

mode="$opt_mode"
if [ -z "$mode" ]; then
  if command -v launchctl >/dev/null 2>&1; then mode=launchd; else mode=process; fi
fi
case "$mode" in
  launchd) command -v launchctl >/dev/null 2>&1 || die "--mode launchd: launchctl is not on PATH" ;;
  process) ;;
  *) die_usage "--mode wants launchd or process, not '$mode'" ;;
esac

config_dir="${opt_config_dir:-$root/config}"
[ -d "$config_dir" ] || die "config folder $config_dir does not exist (--config-dir / MCP_GATEWAY_CONFIG_DIR)"
config_dir="$(cd -P "$config_dir" && pwd)"
registry="${opt_registry:-$config_dir/services.yaml}"
[ -f "$registry" ] || die "registry $registry does not exist (--registry / MCP_GATEWAY_REGISTRY)"

state_dir="${opt_state_dir:-${XDG_STATE_HOME:-$HOME/.local/state}/mcp-http-gateway}"
label_prefix="${opt_label_prefix:-$(install_setting LABEL_PREFIX)}"
label_prefix="${label_prefix:-com.mcp-http-gateway}"
if [ "$mode" = launchd ]; then
  log_dir="${MCP_GATEWAY_LOG_DIR:-$(install_setting LOG_DIR)}"
  log_dir="${log_dir:-$HOME/Library/Logs/mcp-http-gateway}"
else
  log_dir="$state_dir/logs"
fi
run_dir="$state_dir/run"
# install.sh --systemd: the systemd user manager runs these services, not this script.
systemd_managed=0
if [ "$mode" = process ] && [ "$(install_setting SYSTEMD)" = 1 ]; then systemd_managed=1; fi
env_file="${MCP_GATEWAY_ENV_FILE:-$config_dir/gateway.env}"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/services-manager.XXXXXX")"
follower_pids=()
cleanup() {
  local p
  for p in ${follower_pids[@]+"${follower_pids[@]}"}; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------------------------
# The services: parallel arrays, index = position in the registry (enabled entries only)

S_NAME=() S_URL=() S_PORT=() S_CFG=()
url_re='^https?://([^/:]+|\[[^]/]+\]):([0-9]+)/?$'
while IFS='|' read -r name url enabled; do
  [ -n "$name$url" ] || continue
  [[ "$name" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "$registry: '$name' is not a service name"
  [[ "$url" =~ $url_re ]] || die "$registry: service '$name': url '$url' is not http(s)://HOST:PORT"
  port="${BASH_REMATCH[2]}"
  for existing in ${S_NAME[@]+"${S_NAME[@]}"}; do
    [ "$existing" != "$name" ] || die "$registry: service '$name' is listed twice"
  done
  case "$enabled" in
    false | False | FALSE | no | No | off | Off)
      if [ "$service_arg" = "$name" ]; then
        die_usage "service '$name' is disabled in $registry (set enabled: true to manage it)"
      fi
      continue
      ;;
  esac
  S_NAME+=("$name")
  S_URL+=("${url%/}")
  S_PORT+=("$port")
  S_CFG+=("$config_dir/$name.yaml")
done < <(parse_registry "$registry")
[ "${#S_NAME[@]}" -gt 0 ] || die "$registry lists no enabled service"

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

grace_ms() { # i -> limits.shutdown_grace_ms of the service's config (5000 when unset)
  local g=""
  [ -f "${S_CFG[$1]}" ] && g="$(yaml_get "${S_CFG[$1]}" limits shutdown_grace_ms)"
  case "$g" in '' | *[!0-9]*) g=5000 ;; esac
  echo "$g"
}

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

# ---------------------------------------------------------------------------------------------
# GET /health of services, in parallel (one slow service does not hold up the others).
# probe_all I... asks; probe_read I then sets HP_CODE (000 = no answer), HP_CURL_RC (curl's exit
# status: 7 = connection refused), HP_HEALTH (healthy, degraded, starting, stopping, unhealthy,
# down), HP_STATE, HP_UPTIME, HP_SERVICE (the name it answered with), HP_BODY (a file) and
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
    *:INITIALIZING) HP_HEALTH=starting ;;
    *:SHUTTING_DOWN | *:STOPPED) HP_HEALTH=stopping ;;
    *) HP_HEALTH=unhealthy ;;
  esac
}

probe() { probe_all "$1"; probe_read "$1"; }

# The "up" criterion: /health answers 200, healthy or degraded, as the service we asked for.
is_up() { # i, after probe_read i
  case "$HP_HEALTH" in healthy | degraded) [ "$HP_SERVICE" = "${S_NAME[$1]}" ] ;; *) return 1 ;; esac
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

# ---------------------------------------------------------------------------------------------
# Processes

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

# Process mode: sets SVC_PID to the pid of service i, or to nothing. A pid file whose process is
# gone (or is now another program) is stale: STALE_NOTE says so, and it is removed unless the
# second argument is "keep" (status reports it as dead: the service crashed). A gateway serving
# this config without a pid file (the file was deleted) is adopted.
STALE_NOTE=""
SVC_PID=""
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

# ---------------------------------------------------------------------------------------------
# launchd

uid="$(id -u)"
ld_domain="gui/$uid"
ld_label() { echo "$label_prefix.${S_NAME[$1]}"; }
ld_plist() { echo "$HOME/Library/LaunchAgents/$(ld_label "$1").plist"; }
ld_print() { launchctl print "$ld_domain/$(ld_label "$1")" 2>/dev/null; }
ld_loaded() { ld_print "$1" >/dev/null; }
ld_pid() { { ld_print "$1" || true; } | awk '/^\tpid = / { print $3; exit }'; }
ld_last_exit() { { ld_print "$1" || true; } | awk -F' = ' '/^\tlast exit code = / { print $2; exit }'; }

# ---------------------------------------------------------------------------------------------
# Mode-independent: SVC_PID = the pid of service i (empty when not running)

find_pid() { # i [keep]
  if [ "$mode" = launchd ]; then
    STALE_NOTE=""
    SVC_PID="$(ld_pid "$1")"
  else
    proc_find_pid "$@"
  fi
}

# ---------------------------------------------------------------------------------------------
# start

LAUNCH_PIDS=() # by service index (process mode): the pid we started, for its exit code
FAIL_REASON=() # by service index: why it was not started

# Start service i; when it cannot be started, return 1 with LAUNCH_ERR saying why.
LAUNCH_ERR=""
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
    cd "$config_dir"
    exec env ${envs[@]+"${envs[@]}"} "${detach[@]}" "$bin" serve --config "$cfg"
  ) </dev/null >>"$log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  pid=$!
  f="$(pid_file "$i")"
  echo "$pid" >"$f.tmp" && mv -f "$f.tmp" "$f"
  LAUNCH_PIDS[i]="$pid"
  echo "$name: started pid $pid (log $log)"
}

launch_launchd() { # i
  local i="$1" name="${S_NAME[$1]}" label plist
  label="$(ld_label "$i")"
  plist="$(ld_plist "$i")"
  if ! ld_loaded "$i"; then
    if [ ! -f "$plist" ]; then
      LAUNCH_ERR="$plist is not installed (run launchd/install.sh)"
      return 1
    fi
    launchctl enable "$ld_domain/$label" 2>/dev/null || true
    if ! launchctl bootstrap "$ld_domain" "$plist"; then
      LAUNCH_ERR="launchctl bootstrap $ld_domain $plist failed"
      return 1
    fi
    echo "$name: loaded $label"
  elif [ -z "$(ld_pid "$i")" ]; then
    launchctl kickstart "$ld_domain/$label" || {
      LAUNCH_ERR="launchctl kickstart $ld_domain/$label failed"
      return 1
    }
    echo "$name: kickstarted $label"
  fi
}

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
          echo "${C_YELLOW}$name: up in $(fmt_ms "$up_ms") (degraded: see services-manager.sh health $name)${C_OFF}"
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

resolve_bin() {
  local candidate
  if [ -n "$opt_bin" ]; then
    [ -x "$opt_bin" ] || die "binary $opt_bin (--bin / MCP_GATEWAY_BIN) is not an executable file"
    echo "$(cd -P "$(dirname "$opt_bin")" && pwd)/$(basename "$opt_bin")"
    return
  fi
  for candidate in "$script_dir/mcp-http-gateway" \
    "${XDG_DATA_HOME:-$HOME/.local/share}/mcp-http-gateway/bin/mcp-http-gateway" \
    "$root/target/release/mcp-http-gateway"; do
    if [ -x "$candidate" ]; then echo "$candidate"; return; fi
  done
  candidate="$(command -v mcp-http-gateway 2>/dev/null || true)"
  [ -n "$candidate" ] || die "no mcp-http-gateway binary: not installed, no target/release build, not on PATH (give --bin or MCP_GATEWAY_BIN)"
  echo "$candidate"
}

# ---------------------------------------------------------------------------------------------
# stop

cmd_stop() {
  local started_ms i pid name pids=() deadlines=() killed=() pending=() still=() rc=0 now
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
    deadlines[i]=$((started_ms + $(grace_ms "$i") + 1000))
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
        echo "${C_RED}$name: did not exit within its grace period ($(grace_ms "$i") ms + 1 s) after SIGTERM: sent SIGKILL to pid $pid${C_OFF}" >&2
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

# ---------------------------------------------------------------------------------------------
# status

json_str() { # a JSON string literal (names, urls and states here hold no control characters)
  local s="${1//\\/\\\\}"
  printf '"%s"' "${s//\"/\\\"}"
}

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
      running:degraded | running:starting | unmanaged:healthy | unmanaged:degraded) color=yellow ;;
      *) color=red ;;
    esac
    if [ "$color" = red ]; then any_red=1; up=false; else up=true; fi
    if [ -f "${S_CFG[$i]}" ]; then
      cfg_port="$(yaml_get "${S_CFG[$i]}" service port)"
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

# ---------------------------------------------------------------------------------------------
# logs

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

# ---------------------------------------------------------------------------------------------
# health

pretty_json() {
  if command -v jq >/dev/null 2>&1; then jq .
  elif command -v python3 >/dev/null 2>&1; then python3 -m json.tool
  else cat; echo
  fi
}

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
      case "$HP_HEALTH" in healthy | degraded) ;; *) rc=1 ;; esac
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

# ---------------------------------------------------------------------------------------------

command -v curl >/dev/null 2>&1 || die "curl is not on PATH (needed for GET /health)"
if [ "$systemd_managed" -eq 1 ]; then
  units="'mcp-http-gateway@${service_arg:-*}.service'"
  case "$command" in
    start | stop | restart)
      die "these services run under systemd (installed with --systemd): systemctl --user $command $units" ;;
    logs)
      [ "$follow" -eq 0 ] || units="$units -f"
      die "these services log to the journal (installed with --systemd): journalctl --user -u $units" ;;
  esac
fi
bin=""
case "$command" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  restart)
    rc=0
    cmd_stop || rc=$?
    cmd_start || rc=$?
    exit "$rc"
    ;;
  status) cmd_status ;;
  logs) cmd_logs ;;
  health) cmd_health ;;
esac
