#!/usr/bin/env bash
# Starts the gateway with the default configuration: every service in config/, each on its
# own port on 127.0.0.1. Installs the MCP servers the default config bridges into .deps/ first.
# Unless CODE_GRAPH_BOLT_URI is set, code-graph-rag gets an embedded graph: an ArcadeDB started
# here (stopped when this script stops) holding the code graph of your repository
# (scripts/lib/code-graph.sh; CODE_GRAPH_REPO chooses another one).
# Extra arguments go to `serve`, e.g. `scripts/run.sh --log-format pretty`. MCP_GATEWAY_BIN: a
# built gateway to run instead of `cargo run --release` (the tests use their debug build).
set -euo pipefail
caller_dir="$PWD"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/code-graph.sh
. scripts/lib/code-graph.sh

gateway_pid=""
# shellcheck disable=SC2317  # called by the traps
stop_all() {
  if [ -n "$gateway_pid" ]; then
    kill -TERM "$gateway_pid" 2>/dev/null || true
    wait "$gateway_pid" 2>/dev/null || true
    gateway_pid=""
  fi
  code_graph_stop
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

scripts/install-mcp-servers.sh
code_graph_start "$caller_dir" || echo "code-graph: continuing without the embedded graph" >&2
# In the background and waited for, so a signal to this script reaches the trap at once (a
# foreground child would delay it), which stops the gateway and then the database.
if [ -n "${MCP_GATEWAY_BIN:-}" ]; then
  "$MCP_GATEWAY_BIN" serve --config-dir config "$@" &
else
  cargo run --release --locked -p mcp-http-gateway -- serve --config-dir config "$@" &
fi
gateway_pid=$!
status=0
wait "$gateway_pid" || status=$?
gateway_pid=""
exit "$status"
