#!/usr/bin/env bash
# Owns installing (and uninstalling) the gateway for one user: the release binary, the services'
# configs, the registry and services-manager.sh (with its lib/) into a prefix; on macOS one
# LaunchAgent per service (rendered by render-plists.sh into ~/Library/LaunchAgents, bootstrapped
# into gui/$UID); on Linux optionally the systemd user unit (--systemd). Idempotent both ways:
# a second run changes nothing, --uninstall removes what install put there. --dry-run prints
# every step without doing it. Runs on bash 3.2 (macOS) and later. See docs/operations.md.
set -euo pipefail
# bash 5.2 would make "&" in ${var//pattern/replacement} stand for the match.
shopt -u patsub_replacement 2>/dev/null || true

here="$(cd -P "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd -P "$here/.." && pwd)"
DEFAULT_SERVICES="ai-gateway code-graph-rag seekr docwell"
DEFAULT_LABEL_PREFIX="com.bastion"
UNIT_NAME="mcp-http-gateway@.service"
UNIT_DEFAULT_PREFIX='%h/.local/share/mcp-http-gateway'
# Where services-manager.sh's parts (launchd/lib/*.sh) go under the prefix; it looks there.
MANAGER_LIB=lib/services-manager

prog=install
# shellcheck source=SCRIPTDIR/lib/common.sh
source "$here/lib/common.sh"
# shellcheck source=SCRIPTDIR/lib/envfile.sh
source "$here/lib/envfile.sh"

usage() {
  cat <<EOF
Usage: launchd/install.sh [OPTIONS]
       launchd/install.sh --uninstall [--purge] [OPTIONS]

Installs for the current user:
  PREFIX/bin/mcp-http-gateway        the release binary (built with cargo, or --binary)
  PREFIX/bin/services-manager.sh     start/stop/status/logs/health (docs/operations.md)
  PREFIX/$MANAGER_LIB/*.sh   its parts (launchd/lib/*.sh), sourced by it
  PREFIX/config/<service>.yaml       each service's config (from config/ of this checkout)
  PREFIX/config/services.yaml        the registry; services not installed are enabled: false
  PREFIX/config/gateway.env          with --env-file: the backends' environment (KEY=VALUE)
  PREFIX/install.env                 what was installed, for upgrades and --uninstall
macOS, in addition:
  ~/Library/LaunchAgents/<label prefix>.<service>.plist, bootstrapped into gui/\$UID
  (RunAtLoad, KeepAlive), logging to LOG_DIR/<service>.log
Linux: with --systemd, ~/.config/systemd/user/$UNIT_NAME, enabled and started for each
service; without it, start them with PREFIX/bin/services-manager.sh start.

A config you edited in PREFIX/config is kept on upgrade: the new one is written beside it as
<name>.yaml.new (--overwrite-config replaces it, keeping yours as <name>.yaml.bak). Services
whose binary, config, environment or plist changed are restarted; the others are left alone.

Options:
  --binary PATH        Install this binary instead of building one with
                       cargo build --release -p mcp-http-gateway --locked.
  --prefix DIR         Where to install (default \${XDG_DATA_HOME:-~/.local/share}/mcp-http-gateway).
  --label-prefix P     launchd job labels P.<service> (default $DEFAULT_LABEL_PREFIX).
  --log-dir DIR        macOS: the services' logs (default ~/Library/Logs/mcp-http-gateway).
                       (Linux: services-manager.sh keeps them in its state folder, systemd in
                       the journal.)
  --services "A B"     The services to install (default "$DEFAULT_SERVICES").
  --env-file FILE      Install FILE as PREFIX/config/gateway.env: KEY=VALUE lines given to every
                       service (on macOS written into the plists: re-run install.sh after
                       changing it).
  --systemd            Linux: install, enable and start the systemd user units.
  --no-start           Install the files only: load, enable, start nothing.
  --overwrite-config   Replace configs you edited (yours kept as .bak).
  --target OS          macos or linux: what to install for (default: this machine's). With
                       --dry-run, shows the macOS steps on Linux.
  --uninstall          Stop and unload the services, remove what install put there (settings
                       from PREFIX/install.env). Configs you edited and the logs are kept.
  --purge              With --uninstall: also remove edited configs and the logs.
  --dry-run            Print every step, change nothing.
  -h, --help           This text.

Exit codes: 0 done; 1 a step failed; 2 usage error.
EOF
}

binary="" prefix="" label_prefix="" log_dir="" services="" env_file="" target=""
systemd=0 no_start=0 overwrite_config=0 uninstall=0 purge=0 dry_run=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --binary | --prefix | --label-prefix | --log-dir | --services | --env-file | --target)
      [ $# -ge 2 ] || die_usage "$1 needs a value"
      case "$1" in
        --binary) binary="$2" ;;
        --prefix) prefix="$2" ;;
        --label-prefix) label_prefix="$2" ;;
        --log-dir) log_dir="$2" ;;
        --services) services="$2" ;;
        --env-file) env_file="$2" ;;
        --target) target="$2" ;;
      esac
      shift
      ;;
    --systemd) systemd=1 ;;
    --no-start) no_start=1 ;;
    --overwrite-config) overwrite_config=1 ;;
    --uninstall) uninstall=1 ;;
    --purge) purge=1 ;;
    --dry-run) dry_run=1 ;;
    *) die_usage "unknown argument '$1'" ;;
  esac
  shift
done

[ -n "${HOME:-}" ] || die "HOME is not set"
[ "$purge" -eq 0 ] || [ "$uninstall" -eq 1 ] || die_usage "--purge goes with --uninstall"

prefix="${prefix:-${XDG_DATA_HOME:-$HOME/.local/share}/mcp-http-gateway}"
case "$prefix" in /*) ;; *) prefix="$PWD/$prefix" ;; esac
prefix="${prefix%/}"
recorded="$prefix/install.env"

# A value install.env recorded (empty when absent).
recorded_value() { env_value "$recorded" "$1"; }

target="${target:-$(recorded_value TARGET)}"
if [ -z "$target" ]; then
  if [ "$(uname -s)" = Darwin ]; then target=macos; else target=linux; fi
fi
case "$target" in macos | linux) ;; *) die_usage "--target wants macos or linux, not '$target'" ;; esac
[ "$systemd" -eq 0 ] || [ "$target" = linux ] || die_usage "--systemd is for --target linux"

# Earlier installation's settings: the defaults of an upgrade and of --uninstall.
old_label_prefix="$(recorded_value LABEL_PREFIX)"
old_services="$(recorded_value SERVICES)"
old_systemd="$(recorded_value SYSTEMD)"
old_log_dir="$(recorded_value LOG_DIR)"
label_prefix="${label_prefix:-${old_label_prefix:-$DEFAULT_LABEL_PREFIX}}"
if [ -z "$services" ]; then
  if [ "$uninstall" -eq 1 ] && [ -n "$old_services" ]; then services="$old_services"; else services="$DEFAULT_SERVICES"; fi
fi
if [ "$uninstall" -eq 1 ] && [ "$old_systemd" = 1 ]; then systemd=1; fi
log_dir="${log_dir:-${old_log_dir:-$HOME/Library/Logs/mcp-http-gateway}}"
[[ "$label_prefix" =~ ^[A-Za-z0-9][A-Za-z0-9.-]*$ ]] || die_usage "label prefix '$label_prefix' may hold letters, digits, '.' and '-'"
for s in $services; do
  [[ "$s" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die_usage "'$s' is not a service name"
done
[ -n "$services" ] || die_usage "--services is empty"

uid="$(id -u)"
domain="gui/$uid"
agents="$HOME/Library/LaunchAgents"
unit_dir="${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user"
have_launchctl=0
command -v launchctl >/dev/null 2>&1 && have_launchctl=1
if [ "$target" = macos ] && [ "$have_launchctl" -eq 0 ] && [ "$dry_run" -eq 0 ] && [ "$no_start" -eq 0 ]; then
  die "--target macos needs launchctl (not on PATH); use --dry-run to see the steps, or --no-start"
fi
if [ "$systemd" -eq 1 ] && [ "$dry_run" -eq 0 ] && [ "$no_start" -eq 0 ] && ! command -v systemctl >/dev/null 2>&1; then
  die "--systemd needs systemctl (not on PATH)"
fi

# ---------------------------------------------------------------------------------------------
# Steps: every change goes through run (or is announced by note), so --dry-run shows them all.

quote() {
  local out="" a
  for a in "$@"; do
    case "$a" in
      "" | *[!A-Za-z0-9_./:=@%+,-]*) out="$out '${a//\'/\'\\\'\'}'" ;;
      *) out="$out $a" ;;
    esac
  done
  printf '%s' "${out# }"
}

run() {
  if [ "$dry_run" -eq 1 ]; then
    echo "would run: $(quote "$@")"
  else
    echo "+ $(quote "$@")"
    "$@"
  fi
}

say() { echo "$*"; }

scratch="$(mktemp -d "${TMPDIR:-/tmp}/install.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

# Puts file SRC at DEST (mode MODE) when it is missing or different, atomically (a running
# gateway keeps its binary). Returns 0 when it changed something, 1 when DEST was up to date.
place() { # SRC DEST MODE [what SRC is, for the message]
  local what="${4:-$1}"
  if [ -f "$2" ] && cmp -s "$1" "$2"; then
    say "unchanged: $2"
    return 1
  fi
  if [ "$dry_run" -eq 1 ]; then
    say "would install: $2 (mode $3) from $what"
    return 0
  fi
  cp "$1" "$2.installing"
  chmod "$3" "$2.installing"
  mv -f "$2.installing" "$2"
  say "installed: $2 (mode $3) from $what"
  return 0
}

# The folders install created (none of them existed before), one a line: recorded in
# install.env as CREATED_DIR=, so that --uninstall removes exactly those (when empty).
created_dirs=""
if [ -f "$recorded" ]; then created_dirs="$(sed -n 's/^CREATED_DIR=//p' "$recorded")"; fi
make_dir() {
  local d="$1" missing="" m
  while [ ! -d "$d" ]; do
    missing="${missing:+$missing
}$d"
    d="$(dirname "$d")"
  done
  [ -n "$missing" ] || return 0
  run mkdir -p "$1"
  while IFS= read -r m; do
    case "
$created_dirs
" in *"
$m
"*) ;; *) created_dirs="${created_dirs:+$created_dirs
}$m" ;; esac
  done <<EOF
$missing
EOF
}

remove_file() {
  if [ -e "$1" ] || [ -L "$1" ]; then run rm -f "$1"; fi
}

# Removes DIR when empty (after the files above); says what keeps it otherwise.
remove_dir_if_empty() {
  [ -d "$1" ] || return 0
  if [ "$dry_run" -eq 1 ]; then
    echo "would run: rmdir $(quote "$1") (if nothing else is left in it)"
    return 0
  fi
  if [ -z "$(find "$1" -mindepth 1 -maxdepth 1)" ]; then
    run rmdir "$1"
  else
    say "kept $1: it holds $(find "$1" -mindepth 1 -maxdepth 1 -exec basename {} \; | tr '\n' ' ')"
  fi
}

launchctl_loaded() { # label
  [ "$have_launchctl" -eq 1 ] && launchctl print "$domain/$1" >/dev/null 2>&1
}

changed_services=" "
mark_changed() { case "$changed_services" in *" $1 "*) ;; *) changed_services="$changed_services$1 " ;; esac; }
all_changed=0
is_changed() { [ "$all_changed" -eq 1 ] || case "$changed_services" in *" $1 "*) true ;; *) false ;; esac; }

# A conffile (config, registry): pristine copies of what was installed live in
# PREFIX/config/.dist, so an edited one can be told from an old one.
install_conffile() { # SRC NAME (file name under PREFIX/config) [what] -> 0 when it changed
  local src="$1" dest="$prefix/config/$2" dist="$prefix/config/.dist/$2" what="${3:-$1}"
  local changed=1
  if [ ! -f "$dest" ] || cmp -s "$dest" "$src"; then
    place "$src" "$dest" 644 "$what" && changed=0
  elif [ -f "$dist" ] && cmp -s "$dest" "$dist"; then
    # Not edited since it was installed: upgrade it.
    place "$src" "$dest" 644 "$what" && changed=0
  elif [ "$overwrite_config" -eq 1 ]; then
    say "replacing your edited $dest (--overwrite-config; yours is kept as $dest.bak)"
    place "$dest" "$dest.bak" 644 "your edited $dest" || true
    place "$src" "$dest" 644 "$what" && changed=0
  else
    say "kept your edited $dest; the new one is $dest.new (compare: diff -u $(quote "$dest") $(quote "$dest.new"))"
    place "$src" "$dest.new" 644 "$what" || true
  fi
  # The pristine copy of what the checkout ships, to tell an edited config from an old one.
  cmp -s "$src" "$dist" 2>/dev/null || place "$src" "$dist" 644 "$what" || true
  return "$changed"
}

# ---------------------------------------------------------------------------------------------
# Uninstall

do_uninstall() {
  local s label name f
  say "uninstalling from $prefix (target $target; services: $services)"
  if [ ! -f "$recorded" ] && [ ! -e "$prefix/bin/mcp-http-gateway" ]; then
    say "nothing installed at $prefix"
  fi
  if [ "$target" = macos ]; then
    for s in $services; do
      label="$label_prefix.$s"
      if launchctl_loaded "$label"; then
        run launchctl bootout "$domain/$label"
      elif [ "$have_launchctl" -eq 0 ] && [ -f "$agents/$label.plist" ]; then
        # Cannot tell without launchctl (a dry run on another OS): show the step anyway.
        run launchctl bootout "$domain/$label"
      fi
      remove_file "$agents/$label.plist"
    done
  else
    if [ "$systemd" -eq 1 ]; then
      for s in $services; do
        if [ -f "$unit_dir/$UNIT_NAME" ]; then
          run systemctl --user disable --now "mcp-http-gateway@$s.service" ||
            say "warning: could not disable mcp-http-gateway@$s.service (is the user manager running?)"
        fi
      done
      if [ -f "$unit_dir/$UNIT_NAME" ]; then
        remove_file "$unit_dir/$UNIT_NAME"
        run systemctl --user daemon-reload || say "warning: systemctl --user daemon-reload failed"
      fi
    # Services started by the installed services-manager.sh (process mode).
    elif [ -x "$prefix/bin/services-manager.sh" ] && [ -f "$prefix/config/services.yaml" ]; then
      run "$prefix/bin/services-manager.sh" stop --mode process ||
        say "warning: services-manager.sh stop failed; check with: ps -ef | grep mcp-http-gateway"
    fi
  fi

  remove_file "$prefix/bin/mcp-http-gateway"
  remove_file "$prefix/bin/services-manager.sh"
  # Every part of the manager there, this checkout's or an older one's: the folder is its own.
  for f in "$prefix/$MANAGER_LIB"/*.sh; do remove_file "$f"; done
  for name in $services services; do
    f="$prefix/config/$name.yaml"
    if [ -f "$f" ] && [ -f "$prefix/config/.dist/$name.yaml" ] && ! cmp -s "$f" "$prefix/config/.dist/$name.yaml" && [ "$purge" -eq 0 ]; then
      say "kept $f: you edited it (--purge removes it)"
    else
      remove_file "$f"
    fi
    remove_file "$f.new"
    if [ "$purge" -eq 1 ]; then
      remove_file "$f.bak"
    elif [ -f "$f.bak" ]; then
      say "kept $f.bak (--purge removes it)"
    fi
    remove_file "$prefix/config/.dist/$name.yaml"
  done
  remove_file "$prefix/config/gateway.env"
  remove_file "$recorded"
  if [ "$purge" -eq 1 ] && [ -d "$log_dir" ]; then
    for s in $services; do remove_file "$log_dir/$s.log"; remove_file "$log_dir/$s.log.1"; done
    [ -n "$created_dirs" ] || remove_dir_if_empty "$log_dir"
  fi
  # The folders: those install recorded creating, and the prefix's own; deepest first.
  local dirs
  dirs="$(printf '%s\n' "$created_dirs" "$prefix/config/.dist" "$prefix/config" "$prefix/bin" \
    "$prefix/$MANAGER_LIB" "$(dirname "$prefix/$MANAGER_LIB")" |
    awk -F/ 'NF > 1 && !seen[$0]++ { print NF "\t" $0 }' | sort -rn | cut -f 2-)"
  while IFS= read -r f; do
    remove_dir_if_empty "$f"
  done <<EOF
$dirs
EOF
  if [ -z "$created_dirs" ]; then
    # No record of it (an installation from before install.env kept one): the prefix too.
    remove_dir_if_empty "$prefix"
  fi
  # services-manager.sh's state on Linux: pid files and logs.
  local state="${XDG_STATE_HOME:-$HOME/.local/state}/mcp-http-gateway" kept
  if [ "$purge" -eq 1 ]; then
    if [ -d "$state" ]; then run rm -rf "$state"; fi
  else
    for kept in "$log_dir" "$state/logs"; do
      if [ -d "$kept" ] && [ -n "$(find "$kept" -mindepth 1 -maxdepth 1)" ]; then
        say "kept the logs in $kept (--uninstall --purge removes them)"
      fi
    done
  fi
  if [ "$dry_run" -eq 1 ]; then say "dry run: nothing was changed"; else say "uninstalled"; fi
}

if [ "$uninstall" -eq 1 ]; then
  [ -z "$binary" ] || die_usage "--binary goes with installing"
  do_uninstall
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# Install: check everything first, then change things.

for s in $services; do
  [ -f "$repo/config/$s.yaml" ] || die "no config for service '$s': $repo/config/$s.yaml"
done
[ -f "$repo/config/services.yaml" ] || die "no registry $repo/config/services.yaml"
if [ -n "$env_file" ]; then
  [ -f "$env_file" ] || die "env file $env_file does not exist"
fi
if [ "$systemd" -eq 1 ]; then
  case "$prefix" in *[[:space:]%\"\'\\]*) die "--systemd: the prefix may not hold spaces, quotes, '%' or '\\': $prefix" ;; esac
fi

say "installing into $prefix (target $target; services: $services)"
if [ -z "$binary" ]; then
  if [ "$dry_run" -eq 0 ] && ! command -v cargo >/dev/null 2>&1; then
    die "cargo is not on PATH: install Rust, or give --binary PATH"
  fi
  run cargo build --release -p mcp-http-gateway --locked --manifest-path "$repo/Cargo.toml"
  if [ "$dry_run" -eq 1 ]; then
    # A dry run runs no cargo: neither the build nor the question where it puts it.
    binary="<cargo's target folder>/release/mcp-http-gateway"
  else
    # Where cargo put it, asked, not assumed: CARGO_TARGET_DIR or build.target-dir may move it
    # out of target/.
    # shellcheck source=SCRIPTDIR/../scripts/lib/cargo-target.sh
    source "$repo/scripts/lib/cargo-target.sh"
    target_dir="$(cargo_target_dir "$repo")" ||
      die "cannot tell where cargo put the binary it built (see above): give --binary PATH"
    binary="$target_dir/release/mcp-http-gateway"
  fi
fi
read -r -a kept <<<"$services"
if [ -e "$binary" ] || [ "$dry_run" -eq 0 ]; then
  [ -x "$binary" ] || die "$binary is not an executable file"
  version="$("$binary" --version 2>/dev/null)" || die "$binary --version failed: is it mcp-http-gateway?"
  case "$version" in mcp-http-gateway\ *) ;; *) die "$binary --version says '$version', not mcp-http-gateway" ;; esac
  say "binary: $binary ($version)"
  checked=()
  for s in $services; do checked+=("$repo/config/$s.yaml"); done
  "$binary" check-config "${checked[@]}" >/dev/null ||
    die "$binary check-config refused the configs above: fix them first"
  say "configs: checked with $binary check-config"
  # The registry to install: the checkout's, with the services not installed here disabled
  # (edited by the binary where its parser found each entry, so comments and layout stay). A
  # service the registry lacks stops here, before anything changed.
  "$binary" registry keep-only "$repo/config/services.yaml" "${kept[@]}" >"$scratch/services.yaml" ||
    die "$binary registry keep-only refused $repo/config/services.yaml (see above): each service installed needs an entry there"
else
  version="(not built yet)"
  # A dry run before the build: the step is shown, the checkout's registry stands in for it.
  echo "would run: $(quote "$binary" registry keep-only "$repo/config/services.yaml" "${kept[@]}")"
  cp "$repo/config/services.yaml" "$scratch/services.yaml"
fi

make_dir "$prefix/bin"
make_dir "$prefix/$MANAGER_LIB"
make_dir "$prefix/config/.dist"
if place "$binary" "$prefix/bin/mcp-http-gateway" 755; then all_changed=1; fi
# The manager's parts before the manager, so that a new manager never sources old parts.
for f in "$here"/lib/*.sh; do
  place "$f" "$prefix/$MANAGER_LIB/$(basename "$f")" 644 || true
done
for f in "$prefix/$MANAGER_LIB"/*.sh; do
  # A part an older version had and this one has not.
  if [ -e "$f" ] && [ ! -e "$here/lib/$(basename "$f")" ]; then remove_file "$f"; fi
done
place "$here/services-manager.sh" "$prefix/bin/services-manager.sh" 755 || true

for s in $services; do
  if install_conffile "$repo/config/$s.yaml" "$s.yaml"; then mark_changed "$s"; fi
done

# The registry, with the services not installed here disabled (made above).
install_conffile "$scratch/services.yaml" services.yaml \
  "$repo/config/services.yaml (services not installed: enabled: false)" || true

if [ -n "$env_file" ]; then
  if place "$env_file" "$prefix/config/gateway.env" 600; then all_changed=1; fi
fi


# The environment the plists/units carry: the installed gateway.env (or, in a dry run, the one
# being installed).
effective_env=""
if [ -n "$env_file" ]; then effective_env="$env_file"
elif [ -f "$prefix/config/gateway.env" ]; then effective_env="$prefix/config/gateway.env"
fi

if [ "$target" = macos ]; then
  make_dir "$agents"
  make_dir "$log_dir"
  # An earlier installation under another label prefix, or with services dropped since: unload
  # and remove those jobs (they would hold the ports).
  for s in $old_services; do
    [ -n "$old_label_prefix" ] || break
    case " $services " in *" $s "*) [ "$old_label_prefix" != "$label_prefix" ] || continue ;; esac
    label="$old_label_prefix.$s"
    if launchctl_loaded "$label"; then run launchctl bootout "$domain/$label"; fi
    remove_file "$agents/$label.plist"
  done
  config_src="$prefix/config"
  [ -d "$config_src" ] || config_src="$repo/config"
  # The binary being installed reads the grace periods (in a dry run before a build, one of
  # render-plists.sh's own).
  reader=""
  [ ! -x "$binary" ] || reader="$binary"
  "$here/render-plists.sh" --out "$scratch/plists" --prefix "$prefix" --log-dir "$log_dir" \
    --label-prefix "$label_prefix" --services "$services" --config-src "$config_src" \
    ${effective_env:+--env-file "$effective_env"} ${reader:+--binary "$reader"} >/dev/null
  for s in $services; do
    label="$label_prefix.$s"
    if place "$scratch/plists/$label.plist" "$agents/$label.plist" 600 "launchd/service.plist.template"; then
      mark_changed "$s"
    fi
  done
  if [ "$no_start" -eq 1 ]; then
    say "not loading the LaunchAgents (--no-start): $prefix/bin/services-manager.sh start loads them"
  else
    for s in $services; do
      label="$label_prefix.$s"
      if launchctl_loaded "$label"; then
        if is_changed "$s"; then
          say "$label: reloading (its binary, config, environment or plist changed)"
          run launchctl bootout "$domain/$label"
        else
          say "$label: loaded, unchanged"
          continue
        fi
      fi
      run launchctl enable "$domain/$label"
      run launchctl bootstrap "$domain" "$agents/$label.plist"
    done
  fi
elif [ "$systemd" -eq 1 ]; then
  make_dir "$unit_dir"
  awk -v from="$UNIT_DEFAULT_PREFIX" -v to="$prefix" '
    { line = $0; out = ""
      while ((at = index(line, from)) > 0) { out = out substr(line, 1, at - 1) to; line = substr(line, at + length(from)) }
      print out line }' "$repo/deploy/systemd/$UNIT_NAME" >"$scratch/$UNIT_NAME"
  unit_changed=1
  place "$scratch/$UNIT_NAME" "$unit_dir/$UNIT_NAME" 644 "deploy/systemd/$UNIT_NAME" || unit_changed=0
  [ "$unit_changed" -eq 0 ] || all_changed=1
  if [ "$no_start" -eq 1 ]; then
    say "not enabling the units (--no-start)"
  else
    [ "$unit_changed" -eq 0 ] || run systemctl --user daemon-reload
    for s in $services; do
      run systemctl --user enable "mcp-http-gateway@$s.service"
      if is_changed "$s"; then
        run systemctl --user restart "mcp-http-gateway@$s.service"
      else
        run systemctl --user start "mcp-http-gateway@$s.service"
      fi
    done
    say "journal: journalctl --user -u 'mcp-http-gateway@*' -f; at boot without a login: loginctl enable-linger ${USER:-$(id -un)}"
  fi
else
  if [ "$all_changed" -eq 1 ] || [ "$changed_services" != " " ]; then
    say "if the services run already, restart them to pick this up: $prefix/bin/services-manager.sh restart"
  fi
fi

# Last, so that it records every folder made above.
{
  echo "# Written by launchd/install.sh: what is installed here. Read by --uninstall, upgrades"
  echo "# and services-manager.sh."
  echo "PREFIX=$prefix"
  echo "TARGET=$target"
  echo "SERVICES=$services"
  echo "LABEL_PREFIX=$label_prefix"
  [ "$target" != macos ] || echo "LOG_DIR=$log_dir"
  echo "SYSTEMD=$systemd"
  echo "VERSION=${version#mcp-http-gateway }"
  [ -z "$created_dirs" ] || printf '%s\n' "$created_dirs" | sed 's/^/CREATED_DIR=/'
} >"$scratch/install.env"
place "$scratch/install.env" "$recorded" 644 "(generated: this installation's settings)" || true

if [ "$dry_run" -eq 1 ]; then
  say "dry run: nothing was changed"
else
  say "installed $version into $prefix"
  say "manage the services with: $prefix/bin/services-manager.sh status|start|stop|restart|logs|health"
fi
