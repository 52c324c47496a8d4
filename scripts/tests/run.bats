#!/usr/bin/env bats
# Owns the tests of scripts/run.sh's summary (scripts/lib/summary.sh): once the services answer,
# one row per service with its URL, its state as /health says it (503 `unavailable` included)
# and its number of tools; a service that never answers is listed as such and fails the table.

bats_require_minimum_version 1.5.0

setup() {
  REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
  BIN="${MCP_GATEWAY_BIN:-$REPO/target/debug/mcp-http-gateway}"
  # A test that cannot run fails (issue 31: never pass by skipping).
  [ -x "$BIN" ] || { echo "no gateway binary at $BIN (cargo build -p mcp-http-gateway, or MCP_GATEWAY_BIN)" >&2; return 1; }
  # shellcheck source=scripts/lib/summary.sh
  source "$REPO/scripts/lib/summary.sh"
  port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
  SERVED="$BATS_TEST_TMPDIR/served" LISTED="$BATS_TEST_TMPDIR/listed"
  mkdir -p "$SERVED" "$LISTED"
  API_PORT="$(port)" DEAD="$(port)" SILENT_PORT="$(port)"
  # A service whose one backend is down: it answers 503 `unavailable` with one tool.
  cat >"$SERVED/api.yaml" <<YAML
service: { name: api, port: $API_PORT }
dependencies:
  backend: { kind: http, base_url: "http://127.0.0.1:$DEAD" }
providers:
  - name: backend
    kind: http
    dependency: backend
    tools:
      - name: ping
        description: Ping the backend.
        input_schema: { type: object }
        path: /ping
YAML
  cp "$SERVED/api.yaml" "$LISTED/api.yaml"
  "$BIN" serve --config-dir "$SERVED" >"$BATS_TEST_TMPDIR/gateway.log" 2>&1 &
  GATEWAY_PID=$!
}

teardown() {
  [ -z "${GATEWAY_PID:-}" ] || { kill "$GATEWAY_PID" 2>/dev/null || true; wait "$GATEWAY_PID" 2>/dev/null || true; }
}

@test "one row per service: URL, the state /health gives (503 included), the tools; then what to try" {
  run service_table "$BIN" "$LISTED" 60
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"SERVICE"*"URL"*"STATE"*"TOOLS"* ]]
  grep -Eq "^api +http://127\.0\.0\.1:$API_PORT +unavailable +1$" <<<"$output"
  [[ "$output" == *"curl -s http://127.0.0.1:$API_PORT/tools"* ]]
}

@test "a service that never answers is listed as not answering, and the table fails" {
  sed "s/port: $API_PORT/port: $SILENT_PORT/; s/name: api/name: silent/" "$SERVED/api.yaml" >"$LISTED/silent.yaml"
  run service_table "$BIN" "$LISTED" 5
  echo "$output"
  [ "$status" -eq 1 ]
  grep -Eq "^silent +http://127\.0\.0\.1:$SILENT_PORT +not answering +-$" <<<"$output"
  grep -Eq "^api +http://127\.0\.0\.1:$API_PORT +unavailable +1$" <<<"$output"
}

@test "a service whose MCP server is still starting is listed once it has connected, not before" {
  TIME_SERVER="$REPO/.deps/venv/bin/mcp-server-time"
  [ -x "$TIME_SERVER" ] || { echo "no mcp-server-time at $TIME_SERVER (scripts/install-mcp-servers.sh)" >&2; return 1; }
  SLOW_PORT="$(port)"
  # A server that takes 2 s to start: the gateway answers /health at once with it `unknown`.
  cat >"$SERVED/slow.yaml" <<YAML
service: { name: slow, port: $SLOW_PORT }
providers:
  - name: time
    kind: mcp
    command: sh
    args: [-c, "sleep 2; exec '$TIME_SERVER' --local-timezone UTC"]
YAML
  cp "$SERVED/slow.yaml" "$LISTED/slow.yaml"
  kill "$GATEWAY_PID"; wait "$GATEWAY_PID" || true
  "$BIN" serve --config-dir "$SERVED" >"$BATS_TEST_TMPDIR/gateway.log" 2>&1 &
  GATEWAY_PID=$!
  run service_table "$BIN" "$LISTED" 60
  echo "$output"
  [ "$status" -eq 0 ]
  grep -Eq "^slow +http://127\.0\.0\.1:$SLOW_PORT +healthy +2$" <<<"$output"
}
