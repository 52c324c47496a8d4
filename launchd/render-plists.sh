#!/usr/bin/env bash
# Owns the LaunchAgent plists: renders launchd/service.plist.template into one
# <label prefix>.<service>.plist per service, so that the plists cannot drift from each other.
# launchd/install.sh calls it with the installation's paths, so every plist carries the real
# home folder of the user who installs (none is committed: a committed one could only hold a
# placeholder home to edit by hand). Each service's grace period is read with the gateway binary
# (config get; lib/config.sh). Runs on bash 3.2 (macOS) and later.
set -euo pipefail
# bash 5.2 would make "&" in ${var//pattern/replacement} stand for the match.
shopt -u patsub_replacement 2>/dev/null || true

here="$(cd -P "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd -P "$here/.." && pwd)"
template="$here/service.plist.template"

prog=render-plists
# shellcheck source=SCRIPTDIR/lib/common.sh
source "$here/lib/common.sh"
# shellcheck source=SCRIPTDIR/lib/envfile.sh
source "$here/lib/envfile.sh"
# shellcheck source=SCRIPTDIR/lib/config.sh
source "$here/lib/config.sh"

DEFAULT_SERVICES="ai-gateway code-graph-rag seekr docwell"
DEFAULT_LABEL_PREFIX="com.bastion"
# Seconds launchd waits between two launches of a job: a crash loop restarts within this, but
# does not spin.
THROTTLE_SECONDS=3

usage() {
  cat <<EOF
Usage: launchd/render-plists.sh [OPTIONS]

Renders launchd/service.plist.template into OUT/<label prefix>.<service>.plist, one per service.

  --out DIR            Where the plists go (required; install.sh gives ~/Library/LaunchAgents).
  --prefix DIR         The installation: DIR/bin/mcp-http-gateway, DIR/config/<service>.yaml;
                       also the working directory (default ~/.local/share/mcp-http-gateway).
  --log-dir DIR        Logs: DIR/<service>.log, stdout and stderr (default
                       ~/Library/Logs/mcp-http-gateway).
  --label-prefix P     Job labels P.<service> (default $DEFAULT_LABEL_PREFIX).
  --services "A B"     The services (default "$DEFAULT_SERVICES").
  --config-src DIR     Where to read each service's limits.shutdown_grace_ms, which sets
                       ExitTimeOut (grace + 1 s) (default: config/ of this checkout).
  --binary PATH        The mcp-http-gateway binary that reads them (config get). Default:
                       MCP_GATEWAY_BIN, else this checkout's release or debug build (where
                       cargo puts them: CARGO_TARGET_DIR counts), else the one on PATH; the
                       first that has config get. Without one, every grace period is taken
                       as the default, 5000 ms (and said).
  --env-file FILE      KEY=VALUE lines added to each job's EnvironmentVariables (PATH replaces
                       the default PATH). Values are taken literally.
  --path VALUE         PATH for the jobs. Default: the folders of node, npx, uv, uvx and python3
                       as found on the current PATH, then ~/.local/bin, /opt/homebrew/bin,
                       /usr/local/bin, /usr/bin, /bin, /usr/sbin, /sbin.
  --home DIR           The home folder the defaults above are under (default \$HOME).
  -h, --help           This text.
EOF
}

out="" prefix="" log_dir="" label_prefix="$DEFAULT_LABEL_PREFIX" services="$DEFAULT_SERVICES"
config_src="$repo/config" env_file="" path_value="" home="${HOME:-}" binary=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --out | --prefix | --log-dir | --label-prefix | --services | --config-src | --env-file | --path | --home | --binary)
      [ $# -ge 2 ] || die_usage "$1 needs a value"
      case "$1" in
        --out) out="$2" ;;
        --prefix) prefix="$2" ;;
        --log-dir) log_dir="$2" ;;
        --label-prefix) label_prefix="$2" ;;
        --services) services="$2" ;;
        --config-src) config_src="$2" ;;
        --env-file) env_file="$2" ;;
        --path) path_value="$2" ;;
        --home) home="$2" ;;
        --binary) binary="$2" ;;
      esac
      shift
      ;;
    *) die_usage "unknown argument '$1'" ;;
  esac
  shift
done

[[ "$label_prefix" =~ ^[A-Za-z0-9][A-Za-z0-9.-]*$ ]] || die "label prefix '$label_prefix' may hold letters, digits, '.' and '-'"
[ -n "$home" ] || die "no home folder: set HOME or give --home"
[ -n "$out" ] || die_usage "give --out DIR (where the plists go)"
prefix="${prefix:-$home/.local/share/mcp-http-gateway}"
log_dir="${log_dir:-$home/Library/Logs/mcp-http-gateway}"

# PATH: where the MCP servers' runtimes are, then the usual places.
if [ -z "$path_value" ]; then
  dirs=()
  for tool in node npx uv uvx python3; do
    found="$(command -v "$tool" 2>/dev/null || true)"
    case "$found" in /*) dirs+=("$(dirname "$found")") ;; esac
  done
  dirs+=("$home/.local/bin" /opt/homebrew/bin /usr/local/bin /usr/bin /bin /usr/sbin /sbin)
  for d in "${dirs[@]}"; do
    case ":$path_value:" in *":$d:"*) ;; *) path_value="${path_value:+$path_value:}$d" ;; esac
  done
fi

# Extra environment (lib/envfile.sh; here a line that is not KEY=VALUE is an error).
env_keys=() env_values=()
if [ -n "$env_file" ]; then
  [ -f "$env_file" ] || die "env file $env_file does not exist"
  settings="$(read_env_file "$env_file" strict)" || exit 1
  while IFS= read -r setting; do
    [ -n "$setting" ] || continue
    key="${setting%%=*}"
    value="${setting#*=}"
    if [ "$key" = PATH ]; then
      path_value="$value"
    else
      env_keys+=("$key")
      env_values+=("$value")
    fi
  done <<EOF
$settings
EOF
fi

xml_escape() {
  local s="$1"
  s="${s//&/&amp;}"
  s="${s//</&lt;}"
  s="${s//>/&gt;}"
  s="${s//\"/&quot;}"
  s="${s//\'/&apos;}"
  printf '%s' "$s"
}

extra_env=""
i=0
while [ "$i" -lt "${#env_keys[@]}" ]; do
  extra_env="$extra_env		<key>$(xml_escape "${env_keys[$i]}")</key>
		<string>$(xml_escape "${env_values[$i]}")</string>
"
  i=$((i + 1))
done

# The binary that reads each service's limits.shutdown_grace_ms (grace_ms_of: 5000 when unset,
# unreadable, or no binary can read it).
if ! config_reader="$(find_config_reader "$binary" "${MCP_GATEWAY_BIN:-}")"; then
  # This checkout's builds, where cargo says it put them (CARGO_TARGET_DIR, build.target-dir),
  # not target/; asked only here, as asking takes a tenth of a second. Empty if cargo cannot say.
  # shellcheck source=SCRIPTDIR/../scripts/lib/cargo-target.sh
  source "$repo/scripts/lib/cargo-target.sh"
  target_dir="$(cargo_target_dir "$repo" 2>/dev/null)" || target_dir=""
  config_reader="$(find_config_reader \
    ${target_dir:+"$target_dir/release/mcp-http-gateway" "$target_dir/debug/mcp-http-gateway"} \
    "$(command -v mcp-http-gateway 2>/dev/null || true)")" ||
    warn "no mcp-http-gateway binary with config get (give --binary or MCP_GATEWAY_BIN, or build one): ExitTimeOut assumes every grace period is the default, 5000 ms"
fi

[ -f "$template" ] || die "template $template is missing"
unknown="$(grep -o '@[A-Z_]*@' "$template" | sort -u |
  grep -v -x -e @LABEL@ -e @BINARY@ -e @CONFIG@ -e @WORKDIR@ -e @PATH@ -e @EXTRA_ENV@ \
    -e @THROTTLE@ -e @EXIT_TIMEOUT@ -e @LOG@ | tr '\n' ' ' || true)"
[ -z "$unknown" ] || die "$template has placeholders this script does not fill: $unknown"
grep -q "$(printf '^@EXTRA_ENV@\t</dict>$')" "$template" ||
  die "$template: @EXTRA_ENV@ must open the line that closes EnvironmentVariables"
mkdir -p "$out"
for service in $services; do
  [[ "$service" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "'$service' is not a service name"
  label="$label_prefix.$service"
  target="$out/$label.plist"
  grace="$(grace_ms_of "$config_src/$service.yaml")"
  # Placeholders are replaced by plain string search (no regex, no '&' surprises), each value
  # XML-escaped.
  R_LABEL="$(xml_escape "$label")" \
  R_BINARY="$(xml_escape "$prefix/bin/mcp-http-gateway")" \
  R_CONFIG="$(xml_escape "$prefix/config/$service.yaml")" \
  R_WORKDIR="$(xml_escape "$prefix")" \
  R_PATH="$(xml_escape "$path_value")" \
  R_EXTRA_ENV="$extra_env" \
  R_THROTTLE="$THROTTLE_SECONDS" \
  R_EXIT_TIMEOUT="$(((grace + 999) / 1000 + 1))" \
  R_LOG="$(xml_escape "$log_dir/$service.log")" \
    awk '
      function put(line, name, value,   at, done, token) {
        token = "@" name "@"; done = ""
        while ((at = index(line, token)) > 0) {
          done = done substr(line, 1, at - 1) value
          line = substr(line, at + length(token))
        }
        return done line
      }
      {
        line = $0
        if (line == "@EXTRA_ENV@\t</dict>") { printf "%s", ENVIRON["R_EXTRA_ENV"]; line = "\t</dict>" }
        line = put(line, "LABEL", ENVIRON["R_LABEL"])
        line = put(line, "BINARY", ENVIRON["R_BINARY"])
        line = put(line, "CONFIG", ENVIRON["R_CONFIG"])
        line = put(line, "WORKDIR", ENVIRON["R_WORKDIR"])
        line = put(line, "PATH", ENVIRON["R_PATH"])
        line = put(line, "THROTTLE", ENVIRON["R_THROTTLE"])
        line = put(line, "EXIT_TIMEOUT", ENVIRON["R_EXIT_TIMEOUT"])
        line = put(line, "LOG", ENVIRON["R_LOG"])
        print line
      }' "$template" >"$target.tmp"
  mv -f "$target.tmp" "$target"
  echo "$target"
done
