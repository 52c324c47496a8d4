# shellcheck shell=bash
# Sourced by scripts that start servers for a while (loadtest-ci.sh, perf.sh): a scratch folder
# ($work), the background processes to stop on exit ($pids, plus an ArcadeDB in $work/bolt), free
# loopback ports, waiting for an HTTP endpoint, and a service config's port (read by the
# gateway binary, $gateway, which the sourcing script sets).

work="$(mktemp -d)"
pids=()
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  scripts/bolt-db.sh stop --data "$work/bolt" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_http URL SECONDS: until URL answers 2xx; status 1 after SECONDS.
wait_http() {
  local deadline=$((SECONDS + $2))
  until curl -fsS -o /dev/null "$1" 2>/dev/null; do
    ((SECONDS <= deadline)) || return 1
    sleep 0.05
  done
}

# wait_answer URL SECONDS: until URL answers at all (any HTTP status: a /health that says 503
# unavailable is up and talking); status 1 after SECONDS.
wait_answer() {
  local deadline=$((SECONDS + $2))
  until [[ "$(curl -sS -o /dev/null -w '%{http_code}' "$1" 2>/dev/null)" != 000 ]]; do
    ((SECONDS <= deadline)) || return 1
    sleep 0.05
  done
}

# shipped_config NAME DIR: config/NAME.yaml copied to DIR/NAME.yaml with a free port; prints the path.
# A default folder relative to config/ (`${SEEKR_ROOTS:-..}`, the repository) is made absolute,
# so the copy still searches the repository.
shipped_config() {
  mkdir -p "$2"
  # The load generator is one client: the per-client rate limit (per minute) is raised.
  sed -E -e "s/^(  port: )[0-9]+/\1$(free_port)/" -e "s/^(  rate_limit: )[0-9]+/\110000000/" \
    -e "s#:-\.\.\}#:-$PWD}#" "config/$1.yaml" >"$2/$1.yaml"
  echo "$2/$1.yaml"
}

# port_of FILE: the service port of a service config, as the gateway reads it (config get).
port_of() { "${gateway:?port_of needs \$gateway, the mcp-http-gateway binary}" config get "$1" service.port; }

# overload_config FILE PORT UPSTREAM_PORT DELAY_MS LIMITS: the overload service of the load suite
# (scripts/loadtest-ci.sh, scripts/perf.sh): one `slow` tool on the slow upstream, LIMITS being
# the admission settings (`max_concurrent_calls: N, queue_depth: N, queue_timeout_ms: N`).
# sessions_config FILE PORT UPSTREAM_PORT MCP_BOUNDS: the session-flood service: one quick tool
# (an `http` provider in front of examples/slow_upstream) and the MCP session bounds given.
sessions_config() {
  mkdir -p "$(dirname "$1")"
  cat >"$1" <<EOF
service: { name: sessions, port: $2 }
security: { rate_limit: 1000000 }
mcp: { $4 }
dependencies:
  quick: { kind: http, base_url: "http://127.0.0.1:$3", health_path: /health }
providers:
  - name: quick
    kind: http
    dependency: quick
    tools:
      - name: quick
        description: Answers at once
        input_schema: { type: object }
        method: POST
        path: /slow
EOF
}

overload_config() {
  mkdir -p "$(dirname "$1")"
  cat >"$1" <<EOF
service: { name: overload, port: $2 }
security: { rate_limit: 1000000 }
limits: { call_timeout_ms: 10000, $5 }
dependencies:
  slow: { kind: http, base_url: "http://127.0.0.1:$3", health_path: /health }
providers:
  - name: slow
    kind: http
    dependency: slow
    tools:
      - name: slow
        description: Answers after $4 ms
        input_schema: { type: object }
        method: POST
        path: /slow
EOF
}
