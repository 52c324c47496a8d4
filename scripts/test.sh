#!/usr/bin/env bash
# Runs every test of the workspace: installs the real MCP servers the tests talk to into .deps/
# (once), then unit, contract-drift and end-to-end tests (the e2e tests start the real binary
# on free loopback ports, and run the conformance tester against every service of config/),
# the bats tests, the short load test, and mutation testing of the change being tested.
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
# The deployment scripts (launchd/, deploy/systemd/) and run.sh's summary: bats tests against the
# binary cargo test built.
MCP_GATEWAY_BIN="$PWD/target/debug/mcp-http-gateway" bats launchd/tests scripts/tests
# The short load test (5 s per phase, 100 clients; about 1.5 minutes) with the debug binaries just
# built, against each shipped service that is healthy here (the others are reported "not run"),
# then the overload test: no failed or lost request, open-loop p95 within the service's debug
# budget and within 2× the 1-client baseline, overload answers 200 or 503 + Retry-After with a
# bounded p99 (docs/performance.md). Reports in target/loadtest/.
scripts/loadtest-ci.sh --profile dev
# Mutation testing of the change being tested (the newest commit, uncommitted changes included):
# every mutant cargo-mutants makes on a changed line of the code .cargo/mutants.toml names must
# fail a unit test; one that survives fails the run. Within 300 s; what that leaves untested is
# listed "not run" (docs/testing.md, "Mutation testing").
scripts/mutants.sh --in-diff --after-tests
echo "conformance reports: $CONFORMANCE_REPORT_DIR" >&2
