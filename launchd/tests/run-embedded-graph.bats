#!/usr/bin/env bats
# Owns scripts/run.sh's embedded code graph: without CODE_GRAPH_BOLT_URI, run.sh starts an
# ArcadeDB, indexes this repository into it, and code-graph-rag comes up healthy answering from
# that graph; stopping run.sh stops the gateway and the database (no process left behind).
# Uses the debug builds scripts/test.sh made (MCP_GATEWAY_BIN, CODE_GRAPH_INDEX_BIN,
# HELLO_PROVIDER_BIN: without it run.sh would build hello-provider in release, minutes on a fresh
# machine) and the fixed ports of config/ (8000-8005, 50051-50052 must be free).

load helpers

setup() {
  indexer="${CODE_GRAPH_INDEX_BIN:-$REPO/target/debug/code-graph-index}"
  [ -x "$indexer" ] || { echo "no $indexer: cargo build -p code-graph" >&2; return 1; }
  gateway="$(gateway_bin)"
  hello_provider="${HELLO_PROVIDER_BIN:-$REPO/target/debug/hello-provider}"
  [ -x "$hello_provider" ] || { echo "no $hello_provider: cargo build -p hello-provider" >&2; return 1; }
  log="$BATS_TEST_TMPDIR/run.log"
}

teardown() {
  if [ -n "${run_pid:-}" ] && kill -0 "$run_pid" 2>/dev/null; then kill -TERM "$run_pid" || true; fi
}

@test "run.sh without CODE_GRAPH_BOLT_URI: an embedded graph of this repository, stopped with it" {
  ( cd "$BATS_TEST_TMPDIR" && unset CODE_GRAPH_BOLT_URI && \
    CODE_GRAPH_REPO="$REPO" CODE_GRAPH_PROJECT=mcp-http-gateway CODE_GRAPH_DB_PORT=0 \
    MCP_GATEWAY_BIN="$gateway" CODE_GRAPH_INDEX_BIN="$indexer" HELLO_PROVIDER_BIN="$hello_provider" \
    exec "$REPO/scripts/run.sh" ) >"$log" 2>&1 &
  run_pid=$!
  local deadline=$((SECONDS + 240)) health=""
  until health="$(curl -fsS http://127.0.0.1:8001/health 2>/dev/null)" && grep -q '"status":"healthy"' <<<"$health"; do
    kill -0 "$run_pid" 2>/dev/null || { cat "$log"; echo "run.sh exited" >&2; return 1; }
    [ "$SECONDS" -lt "$deadline" ] || { cat "$log"; echo "not healthy: $health" >&2; return 1; }
    sleep 0.5
  done
  grep -q "indexing $REPO as project 'mcp-http-gateway'" "$log"
  # Not curl -f: on a failure the envelope says why, and the log shows what the gateway saw.
  run curl -sS -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' -X POST http://127.0.0.1:8001/call-tool \
    -H 'Content-Type: application/json' \
    -d '{"tool": "find_symbol", "arguments": {"name": "free_port", "label": "Function"}}'
  [ "$output" = 200 ] || { echo "HTTP $output: $(cat "$BATS_TEST_TMPDIR/body")" >&2; cat "$log"; return 1; }
  output="$(cat "$BATS_TEST_TMPDIR/body")"
  grep -q '"qualified_name":"mcp-http-gateway.crates.testkit.src.ports.free_port"' <<<"$output"
  local db_pid
  db_pid="$(pgrep -f "rootPath=${TMPDIR:-/tmp}/code-graph-db" | head -n 1)"
  [ -n "$db_pid" ]
  kill -TERM "$run_pid"
  deadline=$((SECONDS + 60))
  while kill -0 "$run_pid" 2>/dev/null || kill -0 "$db_pid" 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || { cat "$log"; echo "still running after TERM" >&2; return 1; }
    sleep 0.2
  done
  ! curl -fsS http://127.0.0.1:8001/health 2>/dev/null
}
