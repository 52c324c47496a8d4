# shellcheck shell=bash
# Owns launchd mode (macOS): the LaunchAgent jobs install.sh installed, one per service
# (label <label prefix>.<service> in gui/$UID), asked about with `launchctl print` and started
# with bootstrap or kickstart. Sourced by services-manager.sh; defines the domain and functions.
# shellcheck disable=SC2154,SC2034 # $label_prefix and S_NAME are services-manager.sh's; LAUNCH_ERR is start.sh's

ld_domain="gui/$(id -u)"
ld_label() { echo "$label_prefix.${S_NAME[$1]}"; }
ld_plist() { echo "$HOME/Library/LaunchAgents/$(ld_label "$1").plist"; }
ld_print() { launchctl print "$ld_domain/$(ld_label "$1")" 2>/dev/null; }
ld_loaded() { ld_print "$1" >/dev/null; }
ld_pid() { { ld_print "$1" || true; } | awk '/^\tpid = / { print $3; exit }'; }
ld_last_exit() { { ld_print "$1" || true; } | awk -F' = ' '/^\tlast exit code = / { print $2; exit }'; }

# Loads service i's job (enabling it first) or, when loaded but not running, kickstarts it;
# when it cannot, returns 1 with LAUNCH_ERR saying why.
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
