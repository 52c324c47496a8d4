#!/usr/bin/env bash
# Owns installing the tools the tests need beyond the Rust toolchain and the MCP servers:
# bats (runs launchd/tests/*.bats) and shellcheck (the tests lint every deployment script and
# every generated wrapper script), from the system's package manager (apt-get on Debian/Ubuntu,
# Homebrew on macOS); and mypy, pinned, in its own venv .deps/wrappers-venv (the wrapper
# generator's tests type-check the generated Python with it). Idempotent: a tool already there
# is left alone. Exit 1, saying what to do, when a tool cannot be installed.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/install-test-tools.sh [--help]

Makes sure `bats` and `shellcheck` are on PATH, installing the missing ones with apt-get
(Debian/Ubuntu; through sudo unless run as root) or brew (macOS), and that mypy (pinned) is in
.deps/wrappers-venv. Prints what it does.
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

missing=()
for tool in bats shellcheck; do
  if command -v "$tool" >/dev/null 2>&1; then
    say "$tool is installed ($(command -v "$tool"))"
  else
    missing+=("$tool")
  fi
done
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
    if [ "$tool" = bats ]; then pkgs+=(bats-core); else pkgs+=("$tool"); fi
  done
  say "installing ${pkgs[*]} with brew"
  brew install "${pkgs[@]}" >&2 || { say "brew install ${pkgs[*]} failed"; exit 1; }
else
  say "cannot install ${missing[*]}: neither apt-get nor brew is available; install them by hand"
  exit 1
fi

for tool in "${missing[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || { say "$tool is still not on PATH after installing it"; exit 1; }
  say "installed $tool ($(command -v "$tool"))"
done
