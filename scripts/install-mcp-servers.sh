#!/usr/bin/env bash
# Installs the third-party MCP servers the gateway's default config and its tests talk to, into
# the gitignored folder .deps/ of this checkout. Idempotent: a second run with the same pinned
# versions does nothing. Needs node + npm and python3 (with venv) on PATH.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deps="$root/.deps"

# Pinned so a test run today and one next month talk to the same servers.
EVERYTHING_VERSION="2026.8.31"
MEMORY_VERSION="2026.8.31"
TIME_VERSION="2026.10.19"
# The MCP Inspector CLI drives our /mcp in the tests; 0.15.0 is the last release that runs on
# Node 20.
INSPECTOR_VERSION="0.15.0"
# The OTLP protobuf classes the traces test's OTLP receiver decodes with (same release as the
# opentelemetry-api the MCP SDK brings).
OTLP_PROTO_VERSION="1.45.2"
# The OAuth tests' authorization server: oidc-provider, a certified OpenID Provider that
# crates/server/tests/fixtures/oauth_issuer.mjs starts on loopback. 9.13.3 runs on Node 20.
OIDC_PROVIDER_VERSION="9.13.3"
# JOSE (JWS/JWT/JWK) for that fixture to sign and verify tokens; the release oidc-provider's own
# dependency range resolves to, so one copy serves both.
JOSE_VERSION="6.2.17"
# Drives the system's /usr/bin/chromium (no browser download) for the test that clicks Swagger
# UI's Authorize button against that issuer (crates/server/tests/fixtures/swagger_authorize.mjs).
# 1.65.1 runs on Node 20 (it needs >= 20).
PLAYWRIGHT_CORE_VERSION="1.65.1"
# The official MCP TypeScript SDK, for the fixtures written with it (crates/server/tests/
# fixtures/enum_elicitation_*.mjs); the release server-everything brings, so one copy serves both.
TS_SDK_VERSION="1.32.2"
# The accessibility check of the status page in that browser (crates/server/tests/fixtures/
# status_page.mjs injects its axe.min.js into the page and runs it).
AXE_CORE_VERSION="4.14.1"

stamp="$deps/.installed"
want="everything=$EVERYTHING_VERSION memory=$MEMORY_VERSION time=$TIME_VERSION inspector=$INSPECTOR_VERSION otlp-proto=$OTLP_PROTO_VERSION oidc-provider=$OIDC_PROVIDER_VERSION jose=$JOSE_VERSION playwright-core=$PLAYWRIGHT_CORE_VERSION axe-core=$AXE_CORE_VERSION ts-sdk=$TS_SDK_VERSION"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

for tool in node npm python3; do
  command -v "$tool" >/dev/null || { echo "install-mcp-servers: '$tool' is not on PATH" >&2; exit 1; }
done

mkdir -p "$deps"
echo "install-mcp-servers: installing MCP servers into $deps" >&2

# npm: a private package.json so the install never touches anything outside .deps/.
if [ ! -f "$deps/package.json" ]; then
  printf '{ "name": "mcp-http-gateway-deps", "private": true }\n' > "$deps/package.json"
fi
npm install --prefix "$deps" --no-audit --no-fund --loglevel=error \
  "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" \
  "@modelcontextprotocol/server-memory@$MEMORY_VERSION" \
  "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" \
  "oidc-provider@$OIDC_PROVIDER_VERSION" \
  "jose@$JOSE_VERSION" \
  "playwright-core@$PLAYWRIGHT_CORE_VERSION" \
  "axe-core@$AXE_CORE_VERSION" \
  "@modelcontextprotocol/sdk@$TS_SDK_VERSION" >&2

# PyPI: its own venv, since mcp-server-time needs a newer `mcp` than the system may carry.
if [ ! -x "$deps/venv/bin/python" ]; then
  python3 -m venv "$deps/venv"
fi
"$deps/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  "mcp-server-time==$TIME_VERSION" "opentelemetry-proto==$OTLP_PROTO_VERSION" >&2

echo "$want" > "$stamp"
echo "install-mcp-servers: done" >&2
