#!/usr/bin/env bash
# Runs every test of the workspace: installs the real MCP servers the tests talk to into .deps/
# (once), then unit, contract-drift and end-to-end tests (the e2e tests start the real binary
# on free loopback ports, and run the conformance tester against every service of config/).
# Extra arguments go to `cargo test`, e.g. `scripts/test.sh mcp_bridge`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/install-mcp-servers.sh
scripts/install-litellm.sh
scripts/install-arcadedb.sh
# The conformance tester's JUnit/JSON reports for each default service land here.
export CONFORMANCE_REPORT_DIR="${CONFORMANCE_REPORT_DIR:-$PWD/target/conformance}"
cargo test --workspace --locked -- "$@"
echo "conformance reports: $CONFORMANCE_REPORT_DIR" >&2
