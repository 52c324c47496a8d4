#!/usr/bin/env bash
# Owns the day-to-day running of the gateway's services, docker-compose style: start, stop,
# restart, status, logs and health of every service of the registry (config/services.yaml), or
# of one. On macOS it drives the LaunchAgents that launchd/install.sh installed (launchctl);
# wherever launchctl is absent (Linux) it runs the binary itself as detached background
# processes, with pid files and log files in a state folder. Runs on bash 3.2 (macOS) and later.
# This file reads the command line and settings and dispatches; the work is in its lib/ folder
# (launchd/lib in the checkout, PREFIX/lib/services-manager when installed), one concern a
# file. See docs/operations.md.
set -euo pipefail
# bash 5.2 would make "&" in ${var//pattern/replacement} stand for the match.
shopt -u patsub_replacement 2>/dev/null || true

# ---------------------------------------------------------------------------------------------
# Where things are

# This file's real folder: a symlink to the script (say in ~/bin) still finds its lib/.
self="${BASH_SOURCE[0]}"
while [ -L "$self" ]; do
  link="$(readlink "$self")"
  case "$link" in /*) self="$link" ;; *) self="$(dirname "$self")/$link" ;; esac
done
script_dir="$(cd -P "$(dirname "$self")" && pwd)"
# In the repository this is the checkout (launchd/..); in an installation the prefix (bin/..).
root="$(cd -P "$script_dir/.." && pwd)"
# Written by launchd/install.sh next to the installed copy of this script.
install_env="$root/install.env"
lib_dir="$script_dir/lib"
[ -d "$lib_dir" ] || lib_dir="$root/lib/services-manager"
if [ ! -f "$lib_dir/common.sh" ]; then
  echo "services-manager: its lib/ folder is missing (looked in $script_dir/lib and $lib_dir)" >&2
  exit 1
fi
# Where the gateway binary may be, after --bin / MCP_GATEWAY_BIN and before PATH: beside this
# script (an installation), the default installation; in a checkout also its release build,
# added below (add_checkout_bin) where cargo says it is.
default_bins=("$script_dir/mcp-http-gateway"
  "${XDG_DATA_HOME:-$HOME/.local/share}/mcp-http-gateway/bin/mcp-http-gateway")

prog=services-manager
# shellcheck source=SCRIPTDIR/lib/common.sh
source "$lib_dir/common.sh"
# shellcheck source=SCRIPTDIR/lib/clock.sh
source "$lib_dir/clock.sh"
# shellcheck source=SCRIPTDIR/lib/envfile.sh
source "$lib_dir/envfile.sh"
# shellcheck source=SCRIPTDIR/lib/config.sh
source "$lib_dir/config.sh"
# shellcheck source=SCRIPTDIR/lib/services.sh
source "$lib_dir/services.sh"
# shellcheck source=SCRIPTDIR/lib/probe.sh
source "$lib_dir/probe.sh"
# shellcheck source=SCRIPTDIR/lib/process.sh
source "$lib_dir/process.sh"
# shellcheck source=SCRIPTDIR/lib/launchd.sh
source "$lib_dir/launchd.sh"
# shellcheck source=SCRIPTDIR/lib/logs.sh
source "$lib_dir/logs.sh"
# shellcheck source=SCRIPTDIR/lib/start.sh
source "$lib_dir/start.sh"
# shellcheck source=SCRIPTDIR/lib/stop.sh
source "$lib_dir/stop.sh"
# shellcheck source=SCRIPTDIR/lib/status.sh
source "$lib_dir/status.sh"
# shellcheck source=SCRIPTDIR/lib/overview.sh
source "$lib_dir/overview.sh"

usage() {
  cat <<'EOF'
Usage: services-manager.sh COMMAND [SERVICE] [OPTIONS]

Commands (each for every enabled service of the registry, or for the one SERVICE named):
  start     Start, then wait until each answers GET /health as running (healthy, degraded, or
            unavailable: 503, no tool can run); say which did not come up and why (its last log
            lines).
  stop      SIGTERM, wait for the gateway's drain (limits.shutdown_grace_ms of the service's
            config + 1 s), SIGKILL only after that (and say so).
  restart   stop, then start.
  status    A table: service, port, pid, state, health, uptime. GREEN = running and healthy,
            YELLOW = degraded or unavailable (or answering but not run by this script), RED = down.
  logs      The last lines of the service's log (of every service's, each line prefixed with
            the service's name); -f follows them.
  health    GET /health, pretty-printed (all services: one JSON object by service name).
  status-page
            One HTML page for people that lists each service with its port, its health read
            now and a link to its live status page (http://HOST:PORT/status); written as
            status.html in the log folder, its path printed, and opened in the browser (open on
            macOS, else xdg-open when present). Exit 0 once written, whatever the health.

Options:
  --json              status: one JSON document instead of the table.
  -f, --follow        logs: keep following.
  --no-open           status-page: write the page and print its path, do not open it.
  -n, --lines N       logs: how many lines to show first (default 50).
  --timeout SECONDS   start/restart: how long to wait for /health (default 15;
                      MCP_GATEWAY_START_TIMEOUT).
  --config-dir DIR    The services' YAML files, <DIR>/<service>.yaml (MCP_GATEWAY_CONFIG_DIR;
                      default: the config/ folder beside this script's folder).
  --registry FILE     The registry (MCP_GATEWAY_REGISTRY; default <config dir>/services.yaml).
  --bin PATH          The mcp-http-gateway binary, in process mode (MCP_GATEWAY_BIN; default:
                      the one beside this script, else the installed one, else the
                      checkout's release build where cargo puts it (CARGO_TARGET_DIR
                      counts), else on PATH). The YAML files are read with it too (config
                      get, registry list), or, when it cannot, with the first of the others
                      that can.
  --state-dir DIR     Process mode: pid files in DIR/run, logs in DIR/logs
                      (MCP_GATEWAY_STATE_DIR; default ${XDG_STATE_HOME:-~/.local/state}/mcp-http-gateway).
  --mode MODE         launchd or process (MCP_GATEWAY_MODE; default launchd where launchctl
                      exists, else process).
  --label-prefix P    launchd mode: job labels are P.<service> (MCP_GATEWAY_LABEL_PREFIX; default
                      the one install.sh recorded, else com.bastion).
  --color WHEN        auto, always or never (default auto: only on a terminal, never with
                      NO_COLOR set).
  -h, --help          This text.

Environment also read: MCP_GATEWAY_LOG_DIR (launchd mode's log folder; default the one
install.sh recorded, else ~/Library/Logs/mcp-http-gateway), MCP_GATEWAY_ENV_FILE (process mode:
KEY=VALUE lines added to each service's environment; default <config dir>/gateway.env).

A registry entry is `{ name: NAME, url: "http://HOST:PORT", enabled: true }`; entries with
`enabled: false` are skipped. Process mode starts `mcp-http-gateway serve --config
<config dir>/NAME.yaml` in its own session, detached from the terminal.

Exit codes: 0 all good (every service concerned is up: healthy, degraded or unavailable); 1 some
service is down, did not start or stop, or an operation failed; 2 usage error (unknown command,
option or service).
EOF
}

# ---------------------------------------------------------------------------------------------
# Arguments

command=""
service_arg=""
want_json=0
follow=0
open_page=1
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
    --no-open) open_page=0 ;;
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
  start | stop | restart | status | logs | health | status-page) ;;
  "") usage >&2; exit 2 ;;
  *) die_usage "unknown command '$command'" ;;
esac
[[ "$lines" =~ ^[0-9]+$ ]] || die_usage "--lines wants a number, not '$lines'"
if ! [[ "$start_timeout" =~ ^[1-9][0-9]*$ ]]; then
  die_usage "--timeout wants a positive number of seconds, not '$start_timeout'"
fi
[ "$want_json" -eq 0 ] || [ "$command" = status ] || die_usage "--json goes with status"
[ "$follow" -eq 0 ] || [ "$command" = logs ] || die_usage "-f goes with logs"
[ "$open_page" -eq 1 ] || [ "$command" = status-page ] || die_usage "--no-open goes with status-page"

set_colors "$color_when" || die_usage "--color wants auto, always or never, not '$color_when'"

mode="$opt_mode"
if [ -z "$mode" ]; then
  if command -v launchctl >/dev/null 2>&1; then mode=launchd; else mode=process; fi
fi
case "$mode" in
  launchd) command -v launchctl >/dev/null 2>&1 || die "--mode launchd: launchctl is not on PATH" ;;
  process) ;;
  *) die_usage "--mode wants launchd or process, not '$mode'" ;;
esac

# ---------------------------------------------------------------------------------------------
# Settings

config_dir="${opt_config_dir:-$root/config}"
[ -d "$config_dir" ] || die "config folder $config_dir does not exist (--config-dir / MCP_GATEWAY_CONFIG_DIR)"
config_dir="$(cd -P "$config_dir" && pwd)"
registry="${opt_registry:-$config_dir/services.yaml}"
[ -f "$registry" ] || die "registry $registry does not exist (--registry / MCP_GATEWAY_REGISTRY)"

state_dir="${opt_state_dir:-${XDG_STATE_HOME:-$HOME/.local/state}/mcp-http-gateway}"
label_prefix="${opt_label_prefix:-$(env_value "$install_env" LABEL_PREFIX)}"
label_prefix="${label_prefix:-com.bastion}"
if [ "$mode" = launchd ]; then
  log_dir="${MCP_GATEWAY_LOG_DIR:-$(env_value "$install_env" LOG_DIR)}"
  log_dir="${log_dir:-$HOME/Library/Logs/mcp-http-gateway}"
else
  log_dir="$state_dir/logs"
fi
run_dir="$state_dir/run"
# install.sh --systemd: the systemd user manager runs these services, not this script.
systemd_managed=0
if [ "$mode" = process ] && [ "$(env_value "$install_env" SYSTEMD)" = 1 ]; then systemd_managed=1; fi
env_file="${MCP_GATEWAY_ENV_FILE:-$config_dir/gateway.env}"

# In a checkout, its release build joins $default_bins: where cargo says it put it (so
# CARGO_TARGET_DIR and build.target-dir count), not target/. Asking cargo takes a tenth of a
# second, so only when that build could be used: no binary before it runs the services or
# reads the configuration. Outside a checkout (an installation) there is nothing to ask.
add_checkout_bin() {
  local dir
  [ -f "$root/Cargo.toml" ] && [ -f "$root/scripts/lib/cargo-target.sh" ] || return 0
  # shellcheck source=SCRIPTDIR/../scripts/lib/cargo-target.sh
  source "$root/scripts/lib/cargo-target.sh"
  dir="$(cargo_target_dir "$root" 2>/dev/null)" || return 0
  default_bins+=("$dir/release/mcp-http-gateway")
}

# The YAML is read by the gateway binary (config get, registry list): the one given, else the
# usual ones; MCP_GATEWAY_BIN also when --bin names a binary that cannot read it.
config_reader="$(find_config_reader "$opt_bin" "${MCP_GATEWAY_BIN:-}" "${default_bins[@]}")" ||
  config_reader=""
if [ -z "$config_reader" ] ||
  { [ -z "$opt_bin" ] && [ ! -x "${default_bins[0]}" ] && [ ! -x "${default_bins[1]}" ]; }; then
  add_checkout_bin
fi
if [ -z "$config_reader" ]; then
  config_reader="$(find_config_reader "${default_bins[@]}" "$(command -v mcp-http-gateway 2>/dev/null || true)")" ||
    die "no mcp-http-gateway binary that can read the configuration (config get, registry list): not installed, no release build where cargo puts it, not on PATH (give --bin or MCP_GATEWAY_BIN)"
fi

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

load_services
select_targets

# ---------------------------------------------------------------------------------------------
# Dispatch

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
  status-page) cmd_status_page ;;
esac
