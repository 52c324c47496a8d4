#!/usr/bin/env bash
# Installs the LiteLLM proxy (a real OpenAI-compatible HTTP server) into the gitignored venv
# .deps/litellm-venv of this checkout. The `http` provider's tests start it with
# crates/server/tests/fixtures/litellm.yaml, whose models answer with fixed `mock_response`
# texts: no model weights, no provider, no network. See crates/server/tests/fixtures/litellm_notes.md.
#
# Idempotent: a second run with the same pinned version does nothing (stamp file in the venv).
# Needs python3 with the venv module on PATH.
#
# Supply chain: litellm 1.82.7 and 1.82.8 were published by attackers (March 2026) and withdrawn;
# a 1.107.0 release is reported compromised too, and no 1.107.x is offered any more. The pin below
# is a release that others pinned by the same sha256, and the wheel is checked against it before
# anything from it runs. Change both together, never to a withdrawn release.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.deps/litellm-venv"

LITELLM_VERSION="1.84.0"
LITELLM_WHEEL="litellm-${LITELLM_VERSION}-py3-none-any.whl"
LITELLM_WHEEL_SHA256="2a58d6041e6aa27d1a28dc8d8828ab500fef1a00ef74ca65e60899035010c2f2"

stamp="$venv/.installed"
want="litellm[proxy]==$LITELLM_VERSION sha256=$LITELLM_WHEEL_SHA256"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/litellm" ]; then
  exit 0
fi

command -v python3 >/dev/null || { echo "install-litellm: 'python3' is not on PATH" >&2; exit 1; }

echo "install-litellm: installing litellm[proxy]==$LITELLM_VERSION into $venv" >&2
rm -f "$stamp"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check)

# Fetch the litellm wheel alone, check its hash, then install that very file with its extras.
dl="$venv/.download"
rm -rf "$dl"
mkdir -p "$dl"
"${pip[@]}" download --quiet --no-deps --only-binary=:all: -d "$dl" "litellm==$LITELLM_VERSION" >&2
wheel="$dl/$LITELLM_WHEEL"
[ -f "$wheel" ] || { echo "install-litellm: expected $LITELLM_WHEEL, got: $(ls "$dl")" >&2; exit 1; }
got="$("$venv/bin/python" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$wheel")"
if [ "$got" != "$LITELLM_WHEEL_SHA256" ]; then
  echo "install-litellm: sha256 mismatch for $LITELLM_WHEEL: got $got, want $LITELLM_WHEEL_SHA256" >&2
  exit 1
fi

"${pip[@]}" install --quiet "${wheel}[proxy]" >&2
rm -rf "$dl"

# The 1.82.8 attack hid in a litellm_init.pth; refuse any such file.
if find "$venv/lib" -name 'litellm*.pth' | grep -q .; then
  echo "install-litellm: unexpected litellm*.pth in $venv; refusing it" >&2
  exit 1
fi

[ -x "$venv/bin/litellm" ] || { echo "install-litellm: $venv/bin/litellm is missing" >&2; exit 1; }
echo "$want" > "$stamp"
echo "install-litellm: done" >&2
