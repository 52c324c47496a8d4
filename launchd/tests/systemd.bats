#!/usr/bin/env bats
# Owns the tests of the systemd user unit deploy/systemd/mcp-http-gateway@.service, Linux's
# counterpart of the LaunchAgents' KeepAlive: its settings (restart on crash within 5 s, SIGTERM
# and a stop timeout that covers every shipped grace period, SIGHUP reload), and
# `systemd-analyze verify` on it (it needs no running systemd, only a runtime folder; missing,
# the test fails), as shipped and as install.sh --systemd renders it for another prefix. Each
# test says which check it made.

bats_require_minimum_version 1.5.0
load helpers

UNIT="$REPO/deploy/systemd/mcp-http-gateway@.service"

# Value of KEY in the unit (last assignment wins, as in systemd).
unit_value() { sed -n "s/^$2=//p" "$1" | tail -n 1; }

# Runs systemd-analyze verify --user on UNIT_FILE as instance INSTANCE, with HOME=FAKE_HOME.
# Sets VERIFY to "verified …" or to why verify could not run here; returns 1 (printing the
# complaints) when systemd-analyze is missing or verify has any: unknown keys and bad values are only warnings to it (exit 0).
verify_unit() {
  local unit="$1" instance="$2" home="$3" dir="$BATS_TEST_TMPDIR/verify" runtime="$BATS_TEST_TMPDIR/runtime"
  local out rc=0
  VERIFY=""
  [ "$(uname -s)" = Linux ] || skip "systemd-analyze verify runs on Linux only"
  if ! command -v systemd-analyze >/dev/null 2>&1; then
    # A check that is not made must not pass: scripts/install-test-tools.sh installs it (Debian
    # package systemd) wherever systemd units are deployed.
    echo "systemd-analyze is not installed: run scripts/install-test-tools.sh (Debian package systemd)"
    return 1
  fi
  mkdir -p "$dir" "$runtime"
  chmod 700 "$runtime"
  cp "$unit" "$dir/mcp-http-gateway@$instance.service"
  out="$(HOME="$home" XDG_RUNTIME_DIR="$runtime" systemd-analyze verify --user "$dir/mcp-http-gateway@$instance.service" 2>&1)" || rc=$?
  if [ "$rc" -ne 0 ] && [[ "$out" == *"Failed to initialize manager"* || "$out" == *"Failed to lookup RuntimeDirectory"* ]]; then
    VERIFY="systemd-analyze verify cannot run here ($(echo "$out" | head -n 1)): parsed the unit only"
    return 0
  fi
  if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
    echo "systemd-analyze verify (exit $rc): $out"
    return 1
  fi
  VERIFY="verified with systemd-analyze verify --user"
}

# A HOME holding an installation at PREFIX, so that verify finds the executables.
fake_install() { # HOME PREFIX
  mkdir -p "$2/bin" "$2/config"
  cp "$(gateway_bin)" "$2/bin/mcp-http-gateway"
  cp "$REPO"/config/*.yaml "$2/config/"
}

@test "the unit restarts a crash within 5 s, stops with SIGTERM within the grace periods, reloads with SIGHUP" {
  [ "$(unit_value "$UNIT" Restart)" = on-failure ]
  local restart_sec stop_sec max_grace_ms=0 g f
  restart_sec="$(unit_value "$UNIT" RestartSec)"
  [ "$restart_sec" -ge 1 ] && [ "$restart_sec" -le 5 ]
  [ "$(unit_value "$UNIT" KillSignal)" = SIGTERM ]
  # SIGTERM to the gateway only; it stops its MCP children itself.
  [ "$(unit_value "$UNIT" KillMode)" = mixed ]
  for f in "$REPO"/config/*.yaml; do
    g="$(sed -n 's/^  shutdown_grace_ms: *\([0-9]*\).*/\1/p' "$f")"
    [ -z "$g" ] || [ "$g" -le "$max_grace_ms" ] || max_grace_ms="$g"
  done
  stop_sec="$(unit_value "$UNIT" TimeoutStopSec)"
  echo "TimeoutStopSec=$stop_sec, longest shipped grace ${max_grace_ms} ms"
  [ $((stop_sec * 1000)) -gt "$max_grace_ms" ]
  [ "$(unit_value "$UNIT" ExecReload)" = "/bin/kill -HUP \$MAINPID" ]
  [[ "$(unit_value "$UNIT" ExecStart)" == *"/bin/mcp-http-gateway serve --config "*"/config/%i.yaml" ]]
  [ "$(unit_value "$UNIT" WantedBy)" = default.target ]
}

@test "the shipped unit passes systemd-analyze verify (or, where it cannot run, the parse above)" {
  local home="$BATS_TEST_TMPDIR/home"
  fake_install "$home" "$home/.local/share/mcp-http-gateway"
  verify_unit "$UNIT" seekr "$home"
  echo "# shipped unit: $VERIFY" >&3
  [ -n "$VERIFY" ]
}

@test "verify catches a broken unit (so the check above means something)" {
  local home="$BATS_TEST_TMPDIR/home" broken="$BATS_TEST_TMPDIR/broken@.service"
  fake_install "$home" "$home/.local/share/mcp-http-gateway"
  sed 's/^Restart=on-failure/Restart=sometimes/' "$UNIT" >"$broken"
  verify_unit "$UNIT" seekr "$home"
  [[ "$VERIFY" != *"cannot run here"* ]] || skip "$VERIFY"
  run verify_unit "$broken" seekr "$home"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"Failed to parse service restart specifier"* ]]
}

@test "install.sh --systemd renders the unit for its prefix, and it verifies" {
  local home="$BATS_TEST_TMPDIR/home" prefix="$BATS_TEST_TMPDIR/opt/gw" unit
  mkdir -p "$home"
  HOME="$home" run "$INSTALL" --target linux --systemd --no-start --binary "$(gateway_bin)" --prefix "$prefix"
  echo "$output"
  [ "$status" -eq 0 ]
  unit="$home/.config/systemd/user/mcp-http-gateway@.service"
  [ -f "$unit" ]
  [ "$(unit_value "$unit" ExecStart)" = "$prefix/bin/mcp-http-gateway serve --config $prefix/config/%i.yaml" ]
  [ "$(unit_value "$unit" WorkingDirectory)" = "$prefix" ]
  [ -z "$(grep '%h/.local/share' "$unit" || true)" ]
  verify_unit "$unit" docwell "$home"
  echo "# rendered unit: $VERIFY" >&3
  # The installed manager leaves these services to systemd, and says how.
  HOME="$home" run "$prefix/bin/services-manager.sh" restart seekr
  [ "$status" -eq 1 ]
  [[ "$output" == *"systemctl --user restart 'mcp-http-gateway@seekr.service'"* ]]
  HOME="$home" run "$prefix/bin/services-manager.sh" logs -f
  [ "$status" -eq 1 ]
  [[ "$output" == *"journalctl --user -u 'mcp-http-gateway@*.service' -f"* ]]
  HOME="$home" run "$INSTALL" --uninstall --prefix "$prefix"
  echo "$output"
  [ "$status" -eq 0 ]
  [ ! -e "$unit" ]
}
