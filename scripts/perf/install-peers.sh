#!/usr/bin/env bash
# Installs the MCP proxies the gateway is compared with (scripts/perf/mcp-peers.sh,
# docs/performance.md "Against other MCP proxies"), pinned, into .deps/peers/ of this checkout
# and nowhere else:
#   supergateway 4.0.0   (npm; stdio -> Streamable HTTP)         .deps/peers/node
#   mcp-proxy 0.13.0     (Python; stdio -> Streamable HTTP)      .deps/peers/py
#   mcpo 0.0.20          (Python; stdio -> REST, the REST peer)   .deps/peers/mcpo
#     with fastapi 0.115.12 and mcp 1.30.0: mcpo 0.0.20 passes FastAPI() keyword arguments
#     that later FastAPI releases refuse, and imports what mcp 2 moved
#   mcp-proxy 0.6.0      (Rust, tower-mcp; cargo install --locked) .deps/peers/rust
# Idempotent: what is installed at its pinned version is left alone. The benchmarks only; no
# test needs these.
#
#   scripts/perf/install-peers.sh [--help]
set -euo pipefail
case "${1:-}" in
  -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "install-peers: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
peers="$root/.deps/peers"
SUPERGATEWAY_VERSION=4.0.0
MCP_PROXY_PY_VERSION=0.13.0
MCPO_VERSION=0.0.20
MCP_PROXY_RS_VERSION=0.6.0
say() { echo "install-peers: $*" >&2; }
mkdir -p "$peers"

node_dir="$peers/node"
if [[ "$(node -p "require('$node_dir/node_modules/supergateway/package.json').version" 2>/dev/null)" != "$SUPERGATEWAY_VERSION" ]]; then
  say "installing supergateway@$SUPERGATEWAY_VERSION into $node_dir"
  mkdir -p "$node_dir"
  [[ -f "$node_dir/package.json" ]] || echo '{"name": "mcp-http-gateway-peers", "private": true}' >"$node_dir/package.json"
  (cd "$node_dir" && npm install --no-audit --no-fund --save-exact --loglevel=error "supergateway@$SUPERGATEWAY_VERSION" >&2)
fi

# venv DIR PACKAGE==VERSION...: those pins in a venv of their own at DIR.
venv() {
  local dir="$1"
  shift
  local names=("${@%%==*}")
  if ! "$dir/bin/python" -m pip show --disable-pip-version-check "${names[@]}" 2>/dev/null \
    | awk '/^Name:/{n=tolower($2)} /^Version:/{print n"=="$2}' | sort | diff -q - <(printf '%s\n' "$@" | sort) >/dev/null; then
    say "installing $* into $dir"
    python3 -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@" >&2
  fi
}
venv "$peers/py" "mcp-proxy==$MCP_PROXY_PY_VERSION"
venv "$peers/mcpo" "fastapi==0.115.12" "mcp==1.30.0" "mcpo==$MCPO_VERSION"

rust="$peers/rust"
# It has no --version: cargo's own record of what it installed there says.
if ! [[ -x "$rust/bin/mcp-proxy" ]] || ! grep -q "^\"mcp-proxy $MCP_PROXY_RS_VERSION " "$rust/.crates.toml" 2>/dev/null; then
  say "installing mcp-proxy@$MCP_PROXY_RS_VERSION (Rust) into $rust (a release build: minutes)"
  # Its own target folder, so that the workspace's build is not invalidated.
  CARGO_TARGET_DIR="$peers/rust-target" cargo install --locked --quiet --root "$rust" "mcp-proxy@$MCP_PROXY_RS_VERSION" >&2
fi
say "supergateway $SUPERGATEWAY_VERSION, mcp-proxy $MCP_PROXY_PY_VERSION, mcpo $MCPO_VERSION, mcp-proxy (Rust) $MCP_PROXY_RS_VERSION are in $peers"
