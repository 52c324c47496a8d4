#!/usr/bin/env bats
# Owns the tests of launchd/install.sh, in a throwaway HOME: --dry-run prints every step and
# changes nothing (macOS steps shown on Linux too); a macOS install is idempotent, keeps edited
# configs, reloads only on change, and --uninstall --purge puts HOME back exactly as it was
# (launchctl is a stand-in recording its calls);
# the same for a Linux install; --systemd's steps.

bats_require_minimum_version 1.5.0
load helpers

setup_file() {
  # install.sh treats the binary as opaque but for --version, check-config, registry keep-only
  # and (through render-plists.sh and the installed manager) config get and registry list: a
  # small stand-in
  # (those by the real binary) spares copying and comparing 150 MB at every install.
  local real
  real="$(gateway_bin)"
  export GATEWAY="$BATS_FILE_TMPDIR/stand-in/mcp-http-gateway"
  mkdir -p "$(dirname "$GATEWAY")"
  # shellcheck disable=SC2016 # $1 and $@ are the stand-in's own
  {
    echo '#!/bin/sh'
    echo 'case "$1" in'
    echo '  --version) echo "mcp-http-gateway 0.1.0" ;;'
    echo "  check-config) shift; exec '$real' check-config \"\$@\" ;;"
    echo "  config | registry) exec '$real' \"\$@\" ;;"
    echo '  *) exit 64 ;;'
    echo 'esac'
  } >"$GATEWAY"
  chmod +x "$GATEWAY"
}

setup() {
  # A throwaway HOME, but rustup's and cargo's own folders kept: without a binary given,
  # render-plists.sh asks cargo where the build is, and rustup would set up a fresh HOME.
  export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
  export HOME="$BATS_TEST_TMPDIR/home"
  mkdir -p "$HOME"
  unset XDG_DATA_HOME XDG_STATE_HOME XDG_CONFIG_HOME
  export FAKE_LAUNCHCTL_STATE="$BATS_TEST_TMPDIR/launchctl"
  mkdir -p "$BATS_TEST_TMPDIR/fakebin" "$FAKE_LAUNCHCTL_STATE/loaded"
  : >"$FAKE_LAUNCHCTL_STATE/calls"
  # A stand-in launchctl that records calls only (the installed plists name the default ports:
  # nothing may run on them); bash, as it is called a few hundred times. (tests/fake-launchctl,
  # which runs the jobs, is launchd-mode.bats's.)
  cat >"$BATS_TEST_TMPDIR/fakebin/launchctl" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
state="$FAKE_LAUNCHCTL_STATE"
echo "$*" >>"$state/calls"
case "$1" in
  print) [ -f "$state/loaded/${2##*/}" ] || exit 113; printf '%s = {\n\tstate = not running\n}\n' "$2" ;;
  bootstrap) [ -f "$3" ] || exit 5; touch "$state/loaded/$(basename "$3" .plist)" ;;
  bootout) [ -f "$state/loaded/${2##*/}" ] || exit 3; rm -f "$state/loaded/${2##*/}" ;;
  enable | kickstart) ;;
  *) exit 64 ;;
esac
EOF
  chmod +x "$BATS_TEST_TMPDIR/fakebin/launchctl"
  PREFIX="$HOME/.local/share/mcp-http-gateway"
  AGENTS="$HOME/Library/LaunchAgents"
  UID_NOW="$(id -u)"
}

with_launchctl() { PATH="$BATS_TEST_TMPDIR/fakebin:$PATH" "$@"; }

snapshot() { (cd "$HOME" && find . | LC_ALL=C sort); }

calls() { grep -c -- "$1" "$FAKE_LAUNCHCTL_STATE/calls" || true; }

@test "--dry-run (macOS steps, on any OS): prints every step, changes nothing" {
  local before
  before="$(snapshot)"
  run "$INSTALL" --dry-run --target macos --binary "$GATEWAY"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"would install: $PREFIX/bin/mcp-http-gateway (mode 755) from $GATEWAY"* ]]
  [[ "$output" == *"would install: $PREFIX/bin/services-manager.sh"* ]]
  for f in "$REPO"/launchd/lib/*.sh; do
    [[ "$output" == *"would install: $PREFIX/lib/services-manager/$(basename "$f") (mode 644)"* ]]
  done
  [[ "$output" == *"would install: $PREFIX/config/services.yaml"* ]]
  for s in ai-gateway code-graph-rag seekr docwell; do
    [[ "$output" == *"would install: $PREFIX/config/$s.yaml (mode 644) from $REPO/config/$s.yaml"* ]]
    [[ "$output" == *"would install: $AGENTS/com.bastion.$s.plist (mode 600)"* ]]
    [[ "$output" == *"would run: launchctl bootstrap gui/$UID_NOW $AGENTS/com.bastion.$s.plist"* ]]
  done
  [[ "$output" == *"would run: mkdir -p $HOME/Library/Logs/mcp-http-gateway"* ]]
  [[ "$output" == *"dry run: nothing was changed"* ]]
  [ "$(snapshot)" = "$before" ]
  # Without --binary it would build one.
  run "$INSTALL" --dry-run --target macos
  [ "$status" -eq 0 ]
  [[ "$output" == *"would run: cargo build --release -p mcp-http-gateway --locked"* ]]
  [ "$(snapshot)" = "$before" ]
}

@test "macOS install: files, plists, bootstrap; idempotent; edited configs kept; upgrade reloads; uninstall is exact" {
  run with_launchctl "$INSTALL" --target macos --binary "$GATEWAY"
  echo "$output"
  [ "$status" -eq 0 ]
  [ -x "$PREFIX/bin/mcp-http-gateway" ]
  "$PREFIX/bin/mcp-http-gateway" --version
  "$PREFIX/bin/services-manager.sh" --help >/dev/null
  for s in ai-gateway code-graph-rag seekr docwell; do
    cmp "$REPO/config/$s.yaml" "$PREFIX/config/$s.yaml"
    python3 -c 'import plistlib, sys; p = plistlib.load(open(sys.argv[1], "rb")); assert p["ProgramArguments"][-1] == sys.argv[2], p' \
      "$AGENTS/com.bastion.$s.plist" "$PREFIX/config/$s.yaml"
    [ -f "$FAKE_LAUNCHCTL_STATE/loaded/com.bastion.$s" ]
  done
  # The registry: the four enabled, the demo disabled.
  grep -q 'name: everything, .*enabled: false' "$PREFIX/config/services.yaml"
  [ "$(grep -c 'enabled: true' "$PREFIX/config/services.yaml")" -eq 4 ]
  [ "$(calls bootstrap)" -eq 4 ]

  # Again: nothing changes, nothing is reloaded.
  run with_launchctl "$INSTALL" --target macos --binary "$GATEWAY"
  [ "$status" -eq 0 ]
  [[ "$output" != *installed:* ]]
  [ "$(calls bootstrap)" -eq 4 ]
  [ "$(calls bootout)" -eq 0 ]

  # An edited config survives an install: the new one lands beside it; seekr is not reloaded.
  sed -i 's/level: info/level: debug/' "$PREFIX/config/seekr.yaml"
  run with_launchctl "$INSTALL" --target macos --binary "$GATEWAY"
  [ "$status" -eq 0 ]
  [[ "$output" == *"kept your edited $PREFIX/config/seekr.yaml"* ]]
  grep -q 'level: debug' "$PREFIX/config/seekr.yaml"
  cmp "$REPO/config/seekr.yaml" "$PREFIX/config/seekr.yaml.new"
  [ "$(calls bootout)" -eq 0 ]

  # A new binary: installed in place, every service reloaded.
  cp "$GATEWAY" "$BATS_TEST_TMPDIR/newer-gateway"
  echo '# a newer build' >>"$BATS_TEST_TMPDIR/newer-gateway"
  run with_launchctl "$INSTALL" --target macos --binary "$BATS_TEST_TMPDIR/newer-gateway"
  [ "$status" -eq 0 ]
  cmp "$BATS_TEST_TMPDIR/newer-gateway" "$PREFIX/bin/mcp-http-gateway"
  [ "$(calls bootout)" -eq 4 ]
  [ "$(calls bootstrap)" -eq 8 ]

  # --uninstall --dry-run: shows the steps, changes nothing.
  local installed
  installed="$(snapshot)"
  run with_launchctl "$INSTALL" --uninstall --dry-run
  echo "$output"
  [ "$status" -eq 0 ]
  for s in ai-gateway code-graph-rag seekr docwell; do
    [[ "$output" == *"would run: launchctl bootout gui/$UID_NOW/com.bastion.$s"* ]]
    [[ "$output" == *"would run: rm -f $AGENTS/com.bastion.$s.plist"* ]]
  done
  [[ "$output" == *"would run: rm -f $PREFIX/bin/mcp-http-gateway"* ]]
  [ "$(snapshot)" = "$installed" ]
  [ "$(calls bootout)" -eq 4 ]

  # --uninstall keeps the edited config and the logs; --purge removes them: HOME as before.
  echo '{"level":"INFO"}' >"$HOME/Library/Logs/mcp-http-gateway/seekr.log"
  run with_launchctl "$INSTALL" --uninstall
  echo "$output"
  [ "$status" -eq 0 ]
  [ -z "$(ls "$FAKE_LAUNCHCTL_STATE/loaded")" ]
  [ ! -e "$AGENTS/com.bastion.seekr.plist" ]
  [ ! -e "$PREFIX/bin/mcp-http-gateway" ]
  grep -q 'level: debug' "$PREFIX/config/seekr.yaml"
  [ -f "$HOME/Library/Logs/mcp-http-gateway/seekr.log" ]
  [[ "$output" == *"kept the logs in $HOME/Library/Logs/mcp-http-gateway"* ]]
  run with_launchctl "$INSTALL" --uninstall --purge --target macos
  [ "$status" -eq 0 ]
  [ ! -e "$PREFIX" ]
  [ ! -e "$HOME/Library/Logs/mcp-http-gateway" ]
  # And once more: nothing to do.
  run with_launchctl "$INSTALL" --uninstall
  [ "$status" -eq 0 ]
  [[ "$output" == *"nothing installed"* ]]
}

@test "macOS install then --uninstall --purge: HOME exactly as before" {
  local pristine
  pristine="$(snapshot)"
  run with_launchctl "$INSTALL" --target macos --binary "$GATEWAY" --label-prefix org.example
  [ "$status" -eq 0 ]
  [ -f "$AGENTS/org.example.seekr.plist" ]
  echo 'log line' >"$HOME/Library/Logs/mcp-http-gateway/docwell.log"
  run with_launchctl "$INSTALL" --uninstall --purge
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(snapshot)" = "$pristine" ]
  [ -z "$(ls "$FAKE_LAUNCHCTL_STATE/loaded")" ]
}

@test "a new label prefix unloads and removes the jobs of the old one" {
  run with_launchctl "$INSTALL" --target macos --binary "$GATEWAY"
  [ "$status" -eq 0 ]
  run with_launchctl "$INSTALL" --target macos --binary "$GATEWAY" --label-prefix org.example
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(cd "$FAKE_LAUNCHCTL_STATE/loaded" && printf '%s ' *)" = "org.example.ai-gateway org.example.code-graph-rag org.example.docwell org.example.seekr " ]
  [ "$(cd "$AGENTS" && printf '%s ' *)" = "org.example.ai-gateway.plist org.example.code-graph-rag.plist org.example.docwell.plist org.example.seekr.plist " ]
}

@test "Linux install: binary, configs, manager; no launchctl; --uninstall puts HOME back exactly" {
  local pristine
  pristine="$(snapshot)"
  run "$INSTALL" --target linux --binary "$GATEWAY" --services "seekr docwell"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" != *launchctl* ]]
  [ ! -e "$AGENTS" ]
  [ -x "$PREFIX/bin/services-manager.sh" ]
  [ ! -e "$PREFIX/config/ai-gateway.yaml" ]
  [ "$(grep -c 'enabled: true' "$PREFIX/config/services.yaml")" -eq 2 ]
  # The installed manager finds the installed binary and registry by itself.
  run --separate-stderr "$PREFIX/bin/services-manager.sh" status --json
  echo "$output" | jq -e '[.services[].service] == ["seekr", "docwell"]'
  run "$INSTALL" --target linux --binary "$GATEWAY" --services "seekr docwell"
  [ "$status" -eq 0 ]
  [[ "$output" != *installed:* ]]
  run "$INSTALL" --uninstall
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(snapshot)" = "$pristine" ]
}

@test "the installed registry: services not installed disabled in any style, comments kept; a service it lacks is refused" {
  # A checkout of its own, whose registry has entries in both YAML styles, one without
  # `enabled` (true by default), and no entry for hello.
  local checkout="$BATS_TEST_TMPDIR/checkout" listed
  mkdir -p "$checkout"
  cp -R "$REPO/launchd" "$REPO/config" "$checkout/"
  cat >"$checkout/config/services.yaml" <<'EOF'
# Kept comment.
services:
  - { name: seekr, url: "http://127.0.0.1:8002", enabled: true }  # seekr
  - name: "docwell"   # block style
    url: "http://127.0.0.1:8003"
  - { url: "http://127.0.0.1:8004", name: everything }
EOF
  run "$checkout/launchd/install.sh" --target linux --binary "$GATEWAY" --services "seekr hello"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"not in the registry: 'hello'"* ]]
  [ -z "$(ls -A "$HOME")" ]
  run "$checkout/launchd/install.sh" --target linux --binary "$GATEWAY" --services seekr
  echo "$output"
  [ "$status" -eq 0 ]
  listed="$("$GATEWAY" registry list "$PREFIX/config/services.yaml" | cut -f 1,3 | tr '\t\n' ': ')"
  [ "$listed" = "seekr:true docwell:false everything:false " ]
  grep -qx '# Kept comment.' "$PREFIX/config/services.yaml"
  grep -qx '  - name: "docwell"   # block style' "$PREFIX/config/services.yaml"
  grep -q 'name: everything, enabled: false }' "$PREFIX/config/services.yaml"
  run "$checkout/launchd/install.sh" --uninstall --purge
  [ "$status" -eq 0 ]
}

@test "--systemd --dry-run: the user unit and the systemctl --user steps" {
  run "$INSTALL" --systemd --dry-run --target linux --binary "$GATEWAY"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"would install: $HOME/.config/systemd/user/mcp-http-gateway@.service"* ]]
  [[ "$output" == *"would run: systemctl --user daemon-reload"* ]]
  for s in ai-gateway code-graph-rag seekr docwell; do
    [[ "$output" == *"would run: systemctl --user enable mcp-http-gateway@$s.service"* ]]
  done
  [ -z "$(ls -A "$HOME")" ]
}

@test "usage errors exit 2; bad input exits 1 before changing anything" {
  run "$INSTALL" --bogus
  [ "$status" -eq 2 ]
  run "$INSTALL" --target bsd
  [ "$status" -eq 2 ]
  run "$INSTALL" --purge
  [ "$status" -eq 2 ]
  run "$INSTALL" --systemd --target macos
  [ "$status" -eq 2 ]
  run "$INSTALL" --target linux --binary /bin/true
  [ "$status" -eq 1 ]
  run "$INSTALL" --target linux --binary "$GATEWAY" --services "seekr nosuch"
  [ "$status" -eq 1 ]
  [[ "$output" == *"no config for service 'nosuch'"* ]]
  run "$INSTALL" --target macos --binary "$GATEWAY"
  [ "$status" -eq 1 ]
  [[ "$output" == *"needs launchctl"* ]]
  [ -z "$(ls -A "$HOME")" ]
  run "$INSTALL" --help
  [ "$status" -eq 0 ]
  [[ "$output" == *--uninstall* ]]
}
