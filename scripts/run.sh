#!/usr/bin/env bash
# Starts the gateway with the default configuration: every service in config/, each on its
# own port on 127.0.0.1, and prints a table of the services (URL, state, tools) once they all
# answer. Installs what the default config bridges into .deps/ first, and the model tool
# searches rank by meaning with (scripts/install-discovery-model.sh; DISCOVERY_MODEL). Unless
# CODE_GRAPH_BOLT_URI is set, code-graph-rag gets an embedded graph: an ArcadeDB started here
# holding the code graph of your repository (scripts/lib/code-graph.sh; CODE_GRAPH_REPO chooses
# another one). The hello service's two example gRPC providers are started here too
# (scripts/hello-providers.sh). Everything stops when this script stops (Ctrl-C, SIGTERM).
# Extra arguments go to `serve`, e.g. `scripts/run.sh --log-format pretty`; a --config-dir DIR
# among them serves DIR instead of config/. The gateway is the release build, found where cargo
# says it put it (scripts/lib/cargo-target.sh), so CARGO_TARGET_DIR and build.target-dir count.
# MCP_GATEWAY_BIN: a built gateway to run instead of building the release one (the tests use
# their debug build).
set -euo pipefail
caller_dir="$PWD"
config_dir="" serve_args=()
while (($#)); do
  case "$1" in
    --config-dir) config_dir="${2:?run.sh: --config-dir needs a folder}"; shift ;;
    --config-dir=*) config_dir="${1#*=}" ;;
    *) serve_args+=("$1") ;;
  esac
  shift
done
# A folder given is relative to where run.sh was started; the default, config/, to the checkout.
if [ -n "$config_dir" ]; then
  case "$config_dir" in /*) ;; *) config_dir="$caller_dir/$config_dir" ;; esac
  [ -d "$config_dir" ] || { echo "run.sh: --config-dir $config_dir is not a folder" >&2; exit 2; }
else
  config_dir=config
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/cargo-target.sh
. scripts/lib/cargo-target.sh
# shellcheck source=scripts/lib/code-graph.sh
. scripts/lib/code-graph.sh
# shellcheck source=scripts/lib/summary.sh
. scripts/lib/summary.sh

gateway_pid="" hello_pid=""
# shellcheck disable=SC2317  # called by the traps
stop_all() {
  if [ -n "$gateway_pid" ]; then
    kill -TERM "$gateway_pid" 2>/dev/null || true
    wait "$gateway_pid" 2>/dev/null || true
    gateway_pid=""
  fi
  if [ -n "$hello_pid" ]; then
    kill -TERM "$hello_pid" 2>/dev/null || true
    wait "$hello_pid" 2>/dev/null || true
    hello_pid=""
  fi
  code_graph_stop
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

scripts/install-mcp-servers.sh
# The shipped services rank tool searches by meaning with this model (config/*.yaml read
# DISCOVERY_MODEL); one set beforehand is kept.
DISCOVERY_MODEL="${DISCOVERY_MODEL:-$(scripts/install-discovery-model.sh | sed -n 's/^DISCOVERY_MODEL=//p')}"
export DISCOVERY_MODEL
code_graph_start "$caller_dir" || echo "code-graph: continuing without the embedded graph" >&2
if [ -z "${HELLO_RS_ADDRESS:-}${HELLO_PY_ADDRESS:-}" ]; then
  scripts/hello-providers.sh &
  hello_pid=$!
  # The gateway starts once both listen (or the script has ended), so hello is not listed as
  # unavailable while they build. A first build takes minutes, hence the long deadline.
  deadline=$((SECONDS + 600))
  for address in 127.0.0.1:50051 127.0.0.1:50052; do
    until (exec 3<>"/dev/tcp/${address%:*}/${address##*:}") 2>/dev/null; do
      if ! kill -0 "$hello_pid" 2>/dev/null || ((SECONDS > deadline)); then
        echo "run.sh: the hello providers are not listening; hello starts without them" >&2
        break 2
      fi
      sleep 0.2
    done
  done
fi
gateway="${MCP_GATEWAY_BIN:-}"
if [ -z "$gateway" ]; then
  cargo build --release --locked -p mcp-http-gateway
  # Asked, not assumed: CARGO_TARGET_DIR (a shared target folder) puts it outside target/.
  target_dir="$(cargo_target_dir .)" || exit 1
  gateway="$target_dir/release/mcp-http-gateway"
fi
# In the background and waited for, so a signal to this script reaches the trap at once (a
# foreground child would delay it), which stops the gateway, the providers and the database.
"$gateway" serve --config-dir "$config_dir" ${serve_args[@]+"${serve_args[@]}"} &
gateway_pid=$!
service_table "$gateway" "$config_dir" || echo "run.sh: some service did not answer; see the log above" >&2
status=0
wait "$gateway_pid" || status=$?
gateway_pid=""
exit "$status"
