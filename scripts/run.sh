#!/usr/bin/env bash
# Starts the gateway with the default configuration: every service in config/, each on its
# own port on 127.0.0.1, and prints a table of the services (URL, state, tools) once they all
# answer. Installs what the default config bridges into .deps/ first. Unless
# CODE_GRAPH_BOLT_URI is set, code-graph-rag gets an embedded graph: an ArcadeDB started here
# holding the code graph of your repository (scripts/lib/code-graph.sh; CODE_GRAPH_REPO chooses
# another one). The hello service's two example gRPC providers are started here too
# (scripts/hello-providers.sh). Everything stops when this script stops (Ctrl-C, SIGTERM).
# Extra arguments go to `serve`, e.g. `scripts/run.sh --log-format pretty`. MCP_GATEWAY_BIN: a
# built gateway to run instead of building the release one (the tests use their debug build).
set -euo pipefail
caller_dir="$PWD"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/code-graph.sh
. scripts/lib/code-graph.sh
# shellcheck source=scripts/lib/summary.sh
. scripts/lib/summary.sh

gateway_pid="" hello_pid=""
# shellcheck disable=SC2317  # called by the traps
stop_all() {
  if [ -n "$gateway_pid" ]; then
    kill -TERM "$gateway_pid" 2>/dev/null || true
    wait "$gateway_pid" 2>/dev/null || true
    gateway_pid=""
  fi
  if [ -n "$hello_pid" ]; then
    kill -TERM "$hello_pid" 2>/dev/null || true
    wait "$hello_pid" 2>/dev/null || true
    hello_pid=""
  fi
  code_graph_stop
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

scripts/install-mcp-servers.sh
code_graph_start "$caller_dir" || echo "code-graph: continuing without the embedded graph" >&2
if [ -z "${HELLO_RS_ADDRESS:-}${HELLO_PY_ADDRESS:-}" ]; then
  scripts/hello-providers.sh &
  hello_pid=$!
  # The gateway starts once both listen (or the script has ended), so hello is not listed as
  # unavailable while they build. A first build takes minutes, hence the long deadline.
  deadline=$((SECONDS + 600))
  for address in 127.0.0.1:50051 127.0.0.1:50052; do
    until (exec 3<>"/dev/tcp/${address%:*}/${address##*:}") 2>/dev/null; do
      if ! kill -0 "$hello_pid" 2>/dev/null || ((SECONDS > deadline)); then
        echo "run.sh: the hello providers are not listening; hello starts without them" >&2
        break 2
      fi
      sleep 0.2
    done
  done
fi
gateway="${MCP_GATEWAY_BIN:-}"
if [ -z "$gateway" ]; then
  cargo build --release --locked -p mcp-http-gateway
  gateway=target/release/mcp-http-gateway
fi
# In the background and waited for, so a signal to this script reaches the trap at once (a
# foreground child would delay it), which stops the gateway, the providers and the database.
"$gateway" serve --config-dir config "$@" &
gateway_pid=$!
service_table "$gateway" config || echo "run.sh: some service did not answer; see the log above" >&2
status=0
wait "$gateway_pid" || status=$?
gateway_pid=""
exit "$status"
