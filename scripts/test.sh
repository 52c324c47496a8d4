#!/usr/bin/env bash
# Runs every test of the workspace: installs the real MCP servers the tests talk to into .deps/
# (once), then unit, contract-drift and end-to-end tests (the e2e tests start the real binary
# on free loopback ports). Extra arguments go to `cargo test`, e.g. `scripts/test.sh mcp_bridge`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/install-mcp-servers.sh
cargo test --workspace --locked -- "$@"
