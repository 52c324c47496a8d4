#!/usr/bin/env bash
# Runs every test of the workspace: installs the real MCP servers the tests talk to into .deps/
# (once), then unit, contract-drift and end-to-end tests (the e2e tests start the real binary
# on free loopback ports, and run the conformance tester against every service of config/).
# Extra arguments go to `cargo test`, e.g. `scripts/test.sh mcp_provider`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/install-mcp-servers.sh
scripts/install-litellm.sh
scripts/install-arcadedb.sh
scripts/install-test-tools.sh
scripts/install-fuzz-tools.sh
# The conformance tester's JUnit/JSON reports for each default service land here.
export CONFORMANCE_REPORT_DIR="${CONFORMANCE_REPORT_DIR:-$PWD/target/conformance}"
cargo test --workspace --locked -- "$@"
# The deployment scripts (launchd/, deploy/systemd/): bats tests against the binary cargo test built.
MCP_GATEWAY_BIN="$PWD/target/debug/mcp-http-gateway" bats launchd/tests
# The short load test (10 s per phase, 100 users) against each shipped service that is healthy
# here, with the debug binaries just built: zero failed requests is judged as always; the latency
# budgets are the debug build's on 2 cores (the release build's 100 ms verdict is measured by
# scripts/perf.sh, docs/performance.md). Reports in target/loadtest/.
scripts/loadtest-ci.sh --profile dev -- --budget-p95-ms 1000 --max-degradation 100
echo "conformance reports: $CONFORMANCE_REPORT_DIR" >&2
