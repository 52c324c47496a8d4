#!/usr/bin/env bash
# Starts the gateway with the default configuration: every service in config/, each on its
# own port on 127.0.0.1. Installs the MCP servers the default config bridges into .deps/ first.
# Extra arguments go to `serve`, e.g. `scripts/run.sh --log-format pretty`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/install-mcp-servers.sh
exec cargo run --release --locked -p mcp-http-gateway -- serve --config-dir config "$@"
