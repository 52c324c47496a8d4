#!/usr/bin/env bash
# Starts the gateway with the default configuration: every service in config/, each on its
# own port on 127.0.0.1. Installs the MCP servers the default config bridges into .deps/ first,
# and prints a table of the services (URL, state, tools) once they all answer. Extra arguments
# go to `serve`, e.g. `scripts/run.sh --log-format pretty`. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/summary.sh
source scripts/lib/summary.sh
scripts/install-mcp-servers.sh
cargo build --release --locked -p mcp-http-gateway
gateway=target/release/mcp-http-gateway

"$gateway" serve --config-dir config "$@" &
gateway_pid=$!
# The gateway drains and exits on SIGTERM/SIGINT; run.sh waits for it, so nothing is left behind.
trap 'kill -TERM "$gateway_pid" 2>/dev/null || true' INT TERM
service_table "$gateway" config || echo "run.sh: some service did not answer; see the log above" >&2
status=0
wait "$gateway_pid" || status=$?
# A signal interrupts the first wait; the second collects the gateway's own exit.
if kill -0 "$gateway_pid" 2>/dev/null; then wait "$gateway_pid" || status=$?; fi
exit "$status"
