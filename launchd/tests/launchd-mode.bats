#!/usr/bin/env bats
# Owns the test of services-manager.sh's macOS (launchd) mode, on Linux: tests/fake-launchctl
# stands in for launchctl and really runs each job from its rendered plist (arguments,
# environment, working directory, log file), so the plists and the manager's launchctl
# commands (bootstrap, print, bootout) are exercised end to end: start -> up -> status ->
# logs -> a killed job is RED -> restart -> stop -> nothing left. The tests run in order.
# shellcheck disable=SC2154 # $elapsed is set by timed_run (helpers.bash)

bats_require_minimum_version 1.5.0
load helpers

SERVICES="ai-gateway code-graph-rag seekr docwell probe"

setup_file() {
  export HOME="$BATS_FILE_TMPDIR/home" PREFIX="$BATS_FILE_TMPDIR/home/.local/share/mcp-http-gateway"
  export LOGS="$HOME/Library/Logs/mcp-http-gateway"
  mkdir -p "$PREFIX/bin" "$LOGS" "$BATS_FILE_TMPDIR/fakebin"
  cp "$(gateway_bin)" "$PREFIX/bin/mcp-http-gateway"
  make_config_dir "$PREFIX/config"
  "$RENDER" --out "$HOME/Library/LaunchAgents" --home "$HOME" --prefix "$PREFIX" --log-dir "$LOGS" \
    --services "$SERVICES" --config-src "$PREFIX/config" >/dev/null
  install_fake_launchctl "$BATS_FILE_TMPDIR/fakebin"
  export PATH="$BATS_FILE_TMPDIR/fakebin:$PATH"
  export FAKE_LAUNCHCTL_STATE="$BATS_FILE_TMPDIR/launchctl" FAKE_LAUNCHCTL_SPAWN=1
  export MCP_GATEWAY_MODE=launchd MCP_GATEWAY_CONFIG_DIR="$PREFIX/config" MCP_GATEWAY_LOG_DIR="$LOGS"
  unset MCP_GATEWAY_LABEL_PREFIX MCP_GATEWAY_REGISTRY NO_COLOR
}

teardown_file() {
  "$MANAGER" stop >/dev/null 2>&1 || true
  kill_matching "$BATS_FILE_TMPDIR"
}

job_pid() { launchctl print "gui/$(id -u)/com.bastion.$1" | sed -n 's/^\tpid = //p'; }

@test "launchd mode: start bootstraps each plist and waits for /health" {
  timed_run "$MANAGER" start
  echo "# launchd mode: start of 5 services took $elapsed ms" >&3
  [ "$status" -eq 0 ]
  [ "$elapsed" -lt 10000 ]
  [[ "$output" == *"all 5 up in"* ]]
  for s in $SERVICES; do
    [[ "$output" == *"$s: loaded com.bastion.$s"* ]]
    grep -qx "bootstrap gui/$(id -u) $HOME/Library/LaunchAgents/com.bastion.$s.plist" "$FAKE_LAUNCHCTL_STATE/calls"
    # The job runs what the plist says.
    tr '\0' ' ' <"/proc/$(job_pid "$s")/cmdline" | grep -qx "$PREFIX/bin/mcp-http-gateway serve --config $PREFIX/config/$s.yaml "
    [ "$(readlink "/proc/$(job_pid "$s")/cwd")" = "$PREFIX" ]
  done
}

@test "launchd mode: status and logs read launchd's pids and the plists' log files" {
  run --separate-stderr "$MANAGER" status --json
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | jq -e '.mode == "launchd" and .all_up == true'
  for s in $SERVICES; do
    echo "$output" | jq -e --arg s "$s" --argjson pid "$(job_pid "$s")" \
      '.services[] | select(.service == $s) | .pid == $pid and .state == "running"'
  done
  run --separate-stderr "$MANAGER" logs probe -n 1
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 1 ]
  [ "$(tail -n 1 "$LOGS/probe.log")" = "${lines[0]}" ]
}

@test "launchd mode: a killed job shows RED; restart brings it back" {
  local victim
  victim="$(job_pid docwell)"
  kill -KILL "$victim"
  wait_until 5 pid_gone "$victim"
  run "$MANAGER" status
  echo "$output"
  [ "$status" -eq 1 ]
  printf '%s\n' "${lines[@]}" | grep -E '^docwell +[0-9]+ +- +loaded +down '
  run "$MANAGER" restart docwell
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"docwell: up in"* ]]
  run "$MANAGER" status
  [ "$status" -eq 0 ]
}

@test "launchd mode: stop boots every job out within 5 s, nothing left" {
  timed_run "$MANAGER" stop
  echo "# launchd mode: stop of 5 services took $elapsed ms" >&3
  [ "$status" -eq 0 ]
  [ "$elapsed" -lt 5000 ]
  for s in $SERVICES; do
    grep -qx "bootout gui/$(id -u)/com.bastion.$s" "$FAKE_LAUNCHCTL_STATE/calls"
  done
  [ -z "$(ls -A "$FAKE_LAUNCHCTL_STATE/loaded")" ]
  [ -z "$(live_pids_matching "$PREFIX/config")" ]
  run "$MANAGER" status
  [ "$status" -eq 1 ]
}
