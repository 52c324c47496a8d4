#!/usr/bin/env bash
# Owns installing the OpenAPI fuzzer the end-to-end tests run against a live service:
# schemathesis, pinned, in its own venv .deps/fuzz-venv. Idempotent: the pinned version already
# there is left alone. Exit 1, saying what failed, when it cannot be installed.
set -euo pipefail

SCHEMATHESIS_VERSION=4.32.5
venv="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.deps/fuzz-venv"
say() { echo "install-fuzz-tools: $*" >&2; }

case "${1:-}" in
  -h | --help)
    echo "Usage: scripts/install-fuzz-tools.sh   (installs schemathesis $SCHEMATHESIS_VERSION into .deps/fuzz-venv)"
    exit 0
    ;;
  "") ;;
  *) say "unknown argument '$1' (see --help)"; exit 2 ;;
esac

if [ "$("$venv/bin/schemathesis" --version 2>/dev/null | awk '{print $NF}')" = "$SCHEMATHESIS_VERSION" ]; then
  say "schemathesis $SCHEMATHESIS_VERSION is installed ($venv/bin/schemathesis)"
  exit 0
fi
say "installing schemathesis $SCHEMATHESIS_VERSION into $venv"
python3 -m venv "$venv" || { say "python3 -m venv failed (install python3-venv)"; exit 1; }
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  "schemathesis==$SCHEMATHESIS_VERSION" >&2 || {
  say "pip install schemathesis==$SCHEMATHESIS_VERSION failed"
  exit 1
}
