#!/usr/bin/env bats
# Owns launchd/'s scripts finding the checkout's build where cargo put it (issue 31, item 7):
# with CARGO_TARGET_DIR set (a shared target folder) and no binary given (no --bin, --binary or
# MCP_GATEWAY_BIN, nothing installed), services-manager.sh runs and reads the services with
# $CARGO_TARGET_DIR/release/mcp-http-gateway, render-plists.sh reads the grace periods with it,
# and install.sh installs it (after a `cargo build` that a stand-in cargo turns into nothing).
# The "build" there is a recorder that runs the real gateway.
# (scripts/tests/cargo-target.bats has the same for run.sh and hello-providers.sh.)

bats_require_minimum_version 1.5.0
load helpers

setup() {
  REAL_GATEWAY="$(gateway_bin)"
  unset MCP_GATEWAY_BIN MCP_GATEWAY_CONFIG_DIR MCP_GATEWAY_REGISTRY MCP_GATEWAY_STATE_DIR
  unset MCP_GATEWAY_MODE MCP_GATEWAY_ENV_FILE CARGO_BUILD_TARGET_DIR XDG_DATA_HOME XDG_STATE_HOME
  # A throwaway HOME (nothing installed there), but cargo's and rustup's own folders kept.
  export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
  export HOME="$BATS_TEST_TMPDIR/home"
  mkdir -p "$HOME"
  export CARGO_TARGET_DIR="$BATS_TEST_TMPDIR/shared-target"
  BUILT="$CARGO_TARGET_DIR/release/mcp-http-gateway"
  CALLS="$BATS_TEST_TMPDIR/gateway.calls"
  mkdir -p "$(dirname "$BUILT")"
  {
    echo '#!/bin/sh'
    echo "echo \"\$*\" >>'$CALLS'"
    echo "exec '$REAL_GATEWAY' \"\$@\""
  } >"$BUILT"
  chmod +x "$BUILT"
  : >"$CALLS"
}

teardown() {
  if [ -n "${CONFIG:-}" ]; then
    "$MANAGER" stop --mode process --config-dir "$CONFIG" --state-dir "$BATS_TEST_TMPDIR/state" >/dev/null 2>&1 || true
  fi
  kill_matching "$BATS_TEST_TMPDIR"
}

@test "services-manager.sh with nothing given or installed: the release build under CARGO_TARGET_DIR reads and runs the services" {
  CONFIG="$BATS_TEST_TMPDIR/config"
  make_config_dir "$CONFIG"
  run "$MANAGER" start probe --mode process --config-dir "$CONFIG" --state-dir "$BATS_TEST_TMPDIR/state"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"probe: up in "*"(healthy)"* ]]
  grep -qx "registry list $CONFIG/services.yaml" "$CALLS"
  grep -qx "serve --config $CONFIG/probe.yaml" "$CALLS"
}

@test "services-manager.sh says what is missing when cargo's target folder has no build either" {
  CONFIG="$BATS_TEST_TMPDIR/config"
  make_config_dir "$CONFIG"
  rm "$BUILT"
  # PATH without any mcp-http-gateway: only cargo's folder is left to look in.
  local dir path=""
  local IFS=:
  for dir in $PATH; do [ -x "$dir/mcp-http-gateway" ] || path="$path${path:+:}$dir"; done
  unset IFS
  run env PATH="$path" "$MANAGER" status --mode process --config-dir "$CONFIG" --state-dir "$BATS_TEST_TMPDIR/state"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"no release build where cargo puts it"* ]]
}

@test "render-plists.sh with no --binary: the grace periods are read with the release build under CARGO_TARGET_DIR" {
  run "$RENDER" --out "$BATS_TEST_TMPDIR/plists" --home "$HOME" --services seekr
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" != *"no mcp-http-gateway binary with config get"* ]]
  grep -q "^config get $REPO/config/seekr.yaml limits.shutdown_grace_ms" "$CALLS"
}

@test "install.sh with no --binary builds, then installs the release build from CARGO_TARGET_DIR" {
  # A cargo whose `build` does nothing (a release build takes many minutes); the rest is cargo's.
  local real
  real="$(command -v cargo)"
  mkdir -p "$BATS_TEST_TMPDIR/fakebin"
  {
    echo '#!/bin/sh'
    echo "echo \"cargo \$*\" >>'$BATS_TEST_TMPDIR/cargo.calls'"
    # shellcheck disable=SC2016 # the stand-in's own $1
    echo '[ "$1" != build ] || exit 0'
    echo "exec '$real' \"\$@\""
  } >"$BATS_TEST_TMPDIR/fakebin/cargo"
  chmod +x "$BATS_TEST_TMPDIR/fakebin/cargo"
  run env PATH="$BATS_TEST_TMPDIR/fakebin:$PATH" "$INSTALL" --target linux --services seekr
  echo "$output"
  [ "$status" -eq 0 ]
  grep -q "^cargo build --release -p mcp-http-gateway --locked" "$BATS_TEST_TMPDIR/cargo.calls"
  [[ "$output" == *"binary: $BUILT (mcp-http-gateway "* ]]
  cmp "$BUILT" "$HOME/.local/share/mcp-http-gateway/bin/mcp-http-gateway"
  # A dry run runs no cargo at all.
  : >"$BATS_TEST_TMPDIR/cargo.calls"
  run env PATH="$BATS_TEST_TMPDIR/fakebin:$PATH" "$INSTALL" --dry-run --target linux --services seekr
  [ "$status" -eq 0 ]
  [[ "$output" == *"would run: cargo build --release -p mcp-http-gateway --locked"* ]]
  [ ! -s "$BATS_TEST_TMPDIR/cargo.calls" ]
}
