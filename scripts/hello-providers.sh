#!/usr/bin/env bash
# Starts the two example gRPC providers that config/hello.yaml serves: hello-rs
# (examples/hello-provider, built with cargo) and hello-py (examples/hello-py, in the venv its
# install.sh makes), on the addresses config/hello.yaml reads, and stops both on Ctrl-C/SIGTERM
# or when either exits. Their JSON log lines go to stderr, prefixed with the provider's name.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/hello-providers.sh [--help]

Starts hello-rs on $HELLO_RS_ADDRESS (default 127.0.0.1:50051) and hello-py on
$HELLO_PY_ADDRESS (default 127.0.0.1:50052), the addresses config/hello.yaml reads, and runs
until Ctrl-C. Builds hello-provider (release) unless HELLO_PROVIDER_BIN names a built one.
Then, in another terminal:

  cargo run -p mcp-http-gateway -- serve --config config/hello.yaml
  curl -s http://127.0.0.1:8005/tools
  cargo run -p conformance -- --grpc 127.0.0.1:50051 --slow-tool slow.v1 --slow-args '{"ms": 5000}'
USAGE
}

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "") ;;
  *) echo "hello-providers: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

cd "$(dirname "${BASH_SOURCE[0]}")/.."
rs_address="${HELLO_RS_ADDRESS:-127.0.0.1:50051}"
py_address="${HELLO_PY_ADDRESS:-127.0.0.1:50052}"

examples/hello-py/install.sh
hello_rs="${HELLO_PROVIDER_BIN:-}"
if [ -z "$hello_rs" ]; then
  # Release, like run.sh's gateway, so the two builds share their dependencies.
  cargo build --release --locked -p hello-provider >&2
  # Where cargo put it (CARGO_TARGET_DIR and build.target-dir count), not target/.
  # shellcheck source=scripts/lib/cargo-target.sh
  . scripts/lib/cargo-target.sh
  target="$(cargo_target_dir .)" || exit 1
  hello_rs="$target/release/hello-provider"
fi

pids=()
# shellcheck disable=SC2317  # called by the traps
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop EXIT
trap 'exit 0' INT TERM

"$hello_rs" --listen "$rs_address" 2> >(sed -u 's/^/hello-rs: /' >&2) &
pids+=($!)
.deps/hello-py/bin/python examples/hello-py/hello_py.py --listen "$py_address" 2> >(sed -u 's/^/hello-py: /' >&2) &
pids+=($!)
echo "hello-providers: hello-rs on $rs_address, hello-py on $py_address (Ctrl-C stops both)" >&2
# Whichever ends first (a port in use, a crash) ends the other.
wait -n "${pids[@]}"
