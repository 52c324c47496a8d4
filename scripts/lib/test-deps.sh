# shellcheck shell=bash
# Sourced by scripts/test.sh and scripts/flake-hunt.sh: install_test_deps installs what the tests
# talk to into .deps/ (once): the MCP servers, the discovery model, LiteLLM, ArcadeDB, the
# test and fuzz tools, and Node 22 with the official MCP conformance suites. Run from the repository's root.
install_test_deps() {
  scripts/install-mcp-servers.sh
  scripts/install-discovery-model.sh
  scripts/install-litellm.sh
  scripts/install-arcadedb.sh
  scripts/install-test-tools.sh
  scripts/install-fuzz-tools.sh
  scripts/install-conformance.sh
}
