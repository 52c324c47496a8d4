#!/usr/bin/env bats
# Owns the end-to-end test of launchd/services-manager.sh in process mode (Linux, or anywhere
# launchctl is absent), against the real binary: start -> all up -> status table and --json ->
# kill -9 one -> RED and exit 1 -> restart -> up -> stop -> no process left, with the start
# and stop times measured against the issue's criteria (SC-005: up within 10 s; SC-007: stopped
# within 5 s). Then the failure paths: port in use, a gateway that exits at once, one that
# ignores SIGTERM, stale pid files, usage errors. The tests of this file run in order and share
# one set of services.

bats_require_minimum_version 1.5.0
load helpers

setup_file() {
  export MCP_GATEWAY_BIN MCP_GATEWAY_CONFIG_DIR MCP_GATEWAY_STATE_DIR
  MCP_GATEWAY_BIN="$(gateway_bin)"
  MCP_GATEWAY_CONFIG_DIR="$BATS_FILE_TMPDIR/config"
  MCP_GATEWAY_STATE_DIR="$BATS_FILE_TMPDIR/state"
  make_config_dir "$MCP_GATEWAY_CONFIG_DIR"
  # The manager must not pick up anything of the machine it runs on.
  unset MCP_GATEWAY_REGISTRY MCP_GATEWAY_MODE MCP_GATEWAY_ENV_FILE NO_COLOR
  export MCP_GATEWAY_MODE=process
  # seekr and docwell without their backend: an MCP command that does not exist (unset, they
  # would serve the built-in search and be healthy), so every state the manager shows occurs.
  export SEEKR_MCP_COMMAND=/nonexistent/seekr-mcp DOCWELL_MCP_COMMAND=/nonexistent/docwell-mcp
}

teardown_file() {
  "$MANAGER" stop >/dev/null 2>&1 || true
  kill_matching "$BATS_FILE_TMPDIR"
}

ENABLED="ai-gateway code-graph-rag seekr docwell probe"

pid_of() { cat "$MCP_GATEWAY_STATE_DIR/run/$1.pid"; }

@test "start: every enabled service answers /health within 10 s (SC-005); the disabled one is left alone" {
  timed_run "$MANAGER" start
  echo "# start of 5 services took $elapsed ms" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *"all 5 up in"* ]]
  # Without their backends: ai-gateway still counts usage; the others have no tool that can run.
  [[ "$output" == *"ai-gateway: up in "*"(degraded"* ]]
  for s in code-graph-rag seekr docwell; do
    [[ "$output" == *"$s: up in "*"(unavailable"* ]]
  done
  [[ "$output" == *"probe: up in "*"(healthy)"* ]]
  [ "$elapsed" -lt 10000 ]
  [[ "$output" != *everything* ]]
  [ ! -e "$MCP_GATEWAY_STATE_DIR/run/everything.pid" ]
  # Each pid file names a live gateway serving that service's config.
  for s in $ENABLED; do
    tr '\0' ' ' <"/proc/$(pid_of "$s")/cmdline" | grep -q -- "serve --config $MCP_GATEWAY_CONFIG_DIR/$s.yaml"
  done
}

@test "start again: already running, nothing new started" {
  local before
  before="$(pid_of seekr)"
  run "$MANAGER" start seekr
  [ "$status" -eq 0 ]
  [[ "$output" == *"seekr: already running (pid $before)"* ]]
  [ "$(pid_of seekr)" = "$before" ]
}

@test "status: a table with port, pid, state, health, uptime; YELLOW degraded, GREEN healthy" {
  run "$MANAGER" status --color always
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == *SERVICE*PORT*PID*STATE*HEALTH*UPTIME* ]]
  local yellow=$'\033[33m' green=$'\033[32m' row port
  for s in ai-gateway code-graph-rag seekr docwell; do
    port="$(registry_port "$MCP_GATEWAY_CONFIG_DIR" "$s")"
    row="$(printf '%s\n' "${lines[@]}" | grep -F " $port ")"
    [[ "$row" == "$yellow$s "* ]]
    [[ "$row" =~ \ $(pid_of "$s")\ +running\ +(degraded|unavailable)\ +[0-9]+s ]]
  done
  row="$(printf '%s\n' "${lines[@]}" | grep -F "probe ")"
  [[ "$row" == "${green}probe "* ]]
  [[ "$row" =~ \ running\ +healthy\  ]]
  [ "${#lines[@]}" -eq 6 ]
  # Not a terminal and no --color: no escape codes; NO_COLOR too.
  run "$MANAGER" status
  [[ "$output" != *$'\033['* ]]
  NO_COLOR=1 run "$MANAGER" status --color auto
  [[ "$output" != *$'\033['* ]]
}

@test "status --json: one document for scripts" {
  run --separate-stderr "$MANAGER" status --json
  [ "$status" -eq 0 ]
  echo "$output" | jq -e '.mode == "process" and .all_up == true and (.services | length) == 5'
  for s in $ENABLED; do
    echo "$output" | jq -e --arg s "$s" --argjson pid "$(pid_of "$s")" \
      --argjson port "$(registry_port "$MCP_GATEWAY_CONFIG_DIR" "$s")" \
      '.services[] | select(.service == $s) | .pid == $pid and .port == $port and .state == "running" and .up == true and (.http_status == 200 or .http_status == 503) and (.uptime_seconds | type) == "number"'
  done
  echo "$output" | jq -e '[.services[] | select(.color == "yellow")] | length == 4'
  echo "$output" | jq -e '.services[] | select(.service == "probe") | .health == "healthy" and .color == "green"'
}

@test "health: the /health JSON, pretty; all services: one object by name" {
  run --separate-stderr "$MANAGER" health seekr
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -gt 5 ]
  echo "$output" | jq -e '.success == false and .meta.health.service == "seekr" and .meta.health.status == "unavailable" and .meta.health.dependencies.seekr.status == "unavailable"'
  run --separate-stderr "$MANAGER" health
  [ "$status" -eq 0 ]
  echo "$output" | jq -e '(keys | sort) == (["ai-gateway","code-graph-rag","docwell","probe","seekr"]) and .probe.data.status == "healthy"'
}

@test "status-page: one HTML page linking every service's live /status with its health now" {
  run --separate-stderr "$MANAGER" status-page --no-open
  [ "$status" -eq 0 ]
  local page="$MCP_GATEWAY_STATE_DIR/logs/status.html" port link
  [ "$output" = "$page" ]
  [ -s "$page" ]
  grep -q '<!doctype html>' "$page"
  grep -q '<html lang="en">' "$page"
  for s in $ENABLED; do
    port="$(registry_port "$MCP_GATEWAY_CONFIG_DIR" "$s")"
    link="http://127.0.0.1:$port/status"
    grep -q "<th scope=\"row\">$s</th><td class=\"num\">$port</td>" "$page"
    grep -qF "<a href=\"$link\">$link</a>" "$page"
    # The link is the service's own page, served now.
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$link")" = 200 ]
  done
  grep -qF 'data-health="healthy">healthy<' "$page"
  grep -qF 'data-health="unavailable">unavailable (running, no tool can run)<' "$page"
  run ! grep -q everything "$page"
  # Opened with xdg-open where there is no macOS open (a stand-in records what it was given).
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  # shellcheck disable=SC2016 # $1 is the stand-in's own argument
  printf '#!/bin/sh\necho "$1" >"%s"\n' "$BATS_TEST_TMPDIR/opened" >"$BATS_TEST_TMPDIR/bin/xdg-open"
  chmod +x "$BATS_TEST_TMPDIR/bin/xdg-open"
  PATH="$BATS_TEST_TMPDIR/bin:$PATH" run --separate-stderr "$MANAGER" status-page probe
  [ "$status" -eq 0 ]
  [ "$(cat "$BATS_TEST_TMPDIR/opened")" = "$page" ]
  grep -q '>probe</th>' "$page"
  run ! grep -q '>seekr</th>' "$page"
  run "$MANAGER" status --no-open
  [ "$status" -eq 2 ]
}

@test "logs: one service plain, all services prefixed with their name" {
  run --separate-stderr "$MANAGER" logs seekr -n 2
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 2 ]
  echo "${lines[1]}" | jq -e '.timestamp'
  run --separate-stderr "$MANAGER" logs --lines 1
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 5 ]
  for s in $ENABLED; do
    printf '%s\n' "${lines[@]}" | grep -E "^$s +\| \{\"timestamp\""
  done
}

@test "logs -f: follows new lines until interrupted" {
  local out="$BATS_TEST_TMPDIR/follow" pid port
  "$MANAGER" logs probe -f -n 0 >"$out" 2>&1 3>&- &
  pid=$!
  port="$(registry_port "$MCP_GATEWAY_CONFIG_DIR" probe)"
  # Each GET /health is one access-log line.
  wait_until 5 bash -c "curl -s -o /dev/null -H 'X-Request-Id: 7d1c1f7e-0000-4000-8000-00000000f011' http://127.0.0.1:$port/health; grep -q 7d1c1f7e-0000-4000-8000-00000000f011 '$out'"
  kill -TERM "$pid"
  wait_until 5 pid_gone "$pid"
  # Its tail is gone too.
  [ -z "$(live_pids_matching "$MCP_GATEWAY_STATE_DIR/logs/probe.log")" ]
}

@test "kill -9 of one service: status shows it RED (dead, down) and exits 1" {
  local victim
  victim="$(pid_of seekr)"
  kill -KILL "$victim"
  wait_until 5 pid_gone "$victim"
  run "$MANAGER" status --color always
  echo "$output"
  [ "$status" -eq 1 ]
  local red=$'\033[31m'
  printf '%s\n' "${lines[@]}" | grep -F "${red}seekr " | grep -E ' - +dead +down '
  [[ "$output" == *"note: seekr: pid file"*"crashed or killed"* ]]
  run --separate-stderr "$MANAGER" status --json
  [ "$status" -eq 1 ]
  echo "$output" | jq -e '.all_up == false and ([.services[] | select(.up | not) | .service] == ["seekr"])'
  echo "$output" | jq -e '.services[] | select(.service == "seekr") | .pid == null and .state == "dead" and .health == "down" and .color == "red"'
  # One service asked for: only its exit status counts.
  run "$MANAGER" status docwell
  [ "$status" -eq 0 ]
  run "$MANAGER" health seekr
  [ "$status" -eq 1 ]
}

@test "restart of the killed service: healthy again, the others untouched" {
  local others=""
  for s in ai-gateway code-graph-rag docwell probe; do others="$others $(pid_of "$s")"; done
  run "$MANAGER" restart seekr
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"stale pid file"* ]]
  [[ "$output" == *"seekr: up in"* ]]
  run "$MANAGER" status
  [ "$status" -eq 0 ]
  local now=""
  for s in ai-gateway code-graph-rag docwell probe; do now="$now $(pid_of "$s")"; done
  [ "$now" = "$others" ]
}

@test "restart of everything: new pids, all up" {
  local before after
  before="$(cat "$MCP_GATEWAY_STATE_DIR"/run/*.pid | sort)"
  run "$MANAGER" restart
  [ "$status" -eq 0 ]
  [[ "$output" == *"all 5 up in"* ]]
  after="$(cat "$MCP_GATEWAY_STATE_DIR"/run/*.pid | sort)"
  [ -z "$(comm -12 <(echo "$before") <(echo "$after"))" ]
}

@test "stop: every service gone within 5 s (SC-007), no process left, status RED" {
  timed_run "$MANAGER" stop
  echo "# stop of 5 services took $elapsed ms" >&3
  [ "$status" -eq 0 ]
  [ "$elapsed" -lt 5000 ]
  for s in $ENABLED; do [[ "$output" == *"$s: stopped (pid "* ]]; done
  [[ "$output" != *SIGKILL* ]]
  [ -z "$(live_pids_matching "$MCP_GATEWAY_CONFIG_DIR")" ]
  [ -z "$(ls -A "$MCP_GATEWAY_STATE_DIR/run")" ]
  run "$MANAGER" status
  [ "$status" -eq 1 ]
  [ "$(printf '%s\n' "${lines[@]}" | grep -c ' stopped  *down ')" -eq 5 ]
  run "$MANAGER" stop
  [ "$status" -eq 0 ]
  [[ "$output" == *"probe: not running"* ]]
}

@test "stop of a gateway with live MCP servers (the everything demo) leaves none of them" {
  local deps="$REPO/.deps" dir="$BATS_TEST_TMPDIR/everything" port pid kids k
  [ -x "$deps/venv/bin/mcp-server-time" ] && [ -d "$deps/node_modules/@modelcontextprotocol/server-everything" ] ||
    { echo "the MCP servers are not installed: scripts/install-mcp-servers.sh" >&2; return 1; }
  mkdir -p "$dir"
  port="$(free_ports 1)"
  sed "s/^  port: .*/  port: $port/" "$REPO/config/everything.yaml" >"$dir/everything.yaml"
  printf 'services:\n  - { name: everything, url: "http://127.0.0.1:%s", enabled: true }\n' "$port" >"$dir/services.yaml"
  # Its relative paths point into the checkout's .deps; the environment file points there instead.
  printf 'MCP_EVERYTHING_JS=%s\nMCP_SERVER_TIME=%s\n' \
    "$deps/node_modules/@modelcontextprotocol/server-everything/dist/index.js" "$deps/venv/bin/mcp-server-time" >"$dir/gateway.env"
  run "$MANAGER" start --config-dir "$dir"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"everything: up in "*"(healthy)"* ]]
  pid="$(pid_of everything)"
  kids="$(ps -A -o pid= -o ppid= | awk -v p="$pid" '$2 == p { print $1 }')"
  [ "$(echo "$kids" | wc -w)" -eq 2 ]
  run "$MANAGER" stop --config-dir "$dir"
  [ "$status" -eq 0 ]
  [[ "$output" != *SIGKILL* && "$output" != *"left in the session"* ]]
  for k in $kids; do wait_until 5 pid_gone "$k"; done
}

@test "start: a port in use is reported with who holds it; exit 1" {
  local port holder
  port="$(registry_port "$MCP_GATEWAY_CONFIG_DIR" probe)"
  python3 -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1 3>&- &
  holder=$!
  wait_until 5 port_busy "$port"
  run "$MANAGER" start probe
  kill "$holder"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"probe: not started: port $port is in use by python3 (pid $holder)"* ]]
  [[ "$output" == *"0 of 1 up"* ]]
  [ ! -e "$MCP_GATEWAY_STATE_DIR/run/probe.pid" ]
}

@test "start: a gateway that exits at once is reported with its exit status and last log lines" {
  local dir="$BATS_TEST_TMPDIR/broken"
  mkdir -p "$dir"
  cp "$MCP_GATEWAY_CONFIG_DIR/probe.yaml" "$dir/probe.yaml"
  echo "not_a_field: 1" >>"$dir/probe.yaml"
  grep 'name: probe' "$MCP_GATEWAY_CONFIG_DIR/services.yaml" | sed '1i services:' >"$dir/services.yaml"
  run "$MANAGER" start --config-dir "$dir"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"probe: exited with status 1"* ]]
  [[ "$output" == *"unknown field \`not_a_field\`"* ]]
  [ ! -e "$MCP_GATEWAY_STATE_DIR/run/probe.pid" ]
}

@test "stop: a gateway that ignores SIGTERM gets SIGKILL after its grace period, and it is said" {
  local dir="$BATS_TEST_TMPDIR/stubborn" port pid elapsed
  mkdir -p "$dir"
  port="$(free_ports 1)"
  printf 'service:\n  name: stubborn\n  port: %s\n  host: 127.0.0.1\nlimits:\n  shutdown_grace_ms: 300\n' "$port" >"$dir/stubborn.yaml"
  printf 'services:\n  - { name: stubborn, url: "http://127.0.0.1:%s", enabled: true }\n' "$port" >"$dir/services.yaml"
  # A stand-in gateway: answers /health, ignores SIGTERM, has a child in its session.
  cat >"$dir/fake-gateway" <<'EOF'
#!/usr/bin/env python3
import http.server, json, re, signal, subprocess, sys
text = open(sys.argv[sys.argv.index("--config") + 1]).read()
name = re.search(r"^  name: (\S+)", text, re.M).group(1)
port = int(re.search(r"^  port: (\d+)", text, re.M).group(1))
subprocess.Popen(["sleep", "300"], process_group=0)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"success": True, "data": {"service": name, "state": "HEALTHY", "status": "healthy", "uptime_seconds": 0}}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
EOF
  chmod +x "$dir/fake-gateway"
  run "$MANAGER" start --config-dir "$dir" --bin "$dir/fake-gateway"
  [ "$status" -eq 0 ]
  pid="$(pid_of stubborn)"
  # Its child, in a process group of its own (as the gateway puts its MCP servers).
  [ -n "$(ps -A -o pid= -o sid= -o pgid= | awk -v g="$pid" '$2 == g && $3 != g')" ]
  timed_run "$MANAGER" stop --config-dir "$dir"
  [ "$status" -eq 0 ]
  [[ "$output" == *"stubborn: did not exit within its grace period (300 ms + 1 s) after SIGTERM: sent SIGKILL to pid $pid"* ]]
  [[ "$output" == *"left in the session of pid $pid: sending SIGTERM"* ]]
  # Not before the grace period (+1 s), not much after.
  [ "$elapsed" -ge 1300 ]
  [ "$elapsed" -lt 5000 ]
  wait_until 5 pid_gone "$pid"
  [ -z "$(ps -A -o pid= -o sid= -o stat= | awk -v g="$pid" '$2 == g && $3 !~ /^Z/')" ]
}

@test "a pid file whose pid now belongs to another program is not trusted" {
  mkdir -p "$MCP_GATEWAY_STATE_DIR/run"
  sleep 60 3>&- &
  local other=$!
  echo "$other" >"$MCP_GATEWAY_STATE_DIR/run/probe.pid"
  run "$MANAGER" status probe
  [ "$status" -eq 1 ]
  [[ "$output" == *" dead "* ]]
  run "$MANAGER" stop probe
  [ "$status" -eq 0 ]
  [[ "$output" == *"stale pid file (pid $other is gone) removed"* ]]
  # The other program was left alone.
  kill -0 "$other"
  kill "$other"
  [ ! -e "$MCP_GATEWAY_STATE_DIR/run/probe.pid" ]
}

@test "usage errors exit 2; --help documents commands, environment and exit codes" {
  run "$MANAGER" --help
  [ "$status" -eq 0 ]
  for word in start stop restart status logs health status-page --no-open --json MCP_GATEWAY_CONFIG_DIR MCP_GATEWAY_BIN MCP_GATEWAY_STATE_DIR "Exit codes"; do
    [[ "$output" == *"$word"* ]]
  done
  run "$MANAGER"
  [ "$status" -eq 2 ]
  run "$MANAGER" frobnicate
  [ "$status" -eq 2 ]
  run "$MANAGER" status nosuchservice
  [ "$status" -eq 2 ]
  [[ "$output" == *"unknown service 'nosuchservice'"* ]]
  run "$MANAGER" start everything
  [ "$status" -eq 2 ]
  [[ "$output" == *"disabled"* ]]
  run "$MANAGER" status --bogus
  [ "$status" -eq 2 ]
  run "$MANAGER" start --json
  [ "$status" -eq 2 ]
  run "$MANAGER" status --config-dir "$BATS_TEST_TMPDIR/nowhere"
  [ "$status" -eq 1 ]
}
