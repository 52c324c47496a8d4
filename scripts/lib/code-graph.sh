# shellcheck shell=bash
# Sourced by scripts/run.sh: the embedded code graph for the code-graph-rag service. When
# CODE_GRAPH_BOLT_URI is not set, code_graph_start starts a private ArcadeDB (the one
# scripts/install-arcadedb.sh installs into .deps/) on 127.0.0.1:7687, or a free port when 7687
# is taken, with a generated password and a throwaway data folder; indexes a repository into it
# with code-graph-index (crates/code-graph); and exports CODE_GRAPH_BOLT_URI and
# CODE_GRAPH_BOLT_PASSWORD for the gateway. code_graph_stop stops that database and removes its
# folder (call it from an EXIT trap). When CODE_GRAPH_BOLT_URI is set, both do nothing: the
# configured database wins.
#
# Environment:
#   CODE_GRAPH_REPO      the repository to index (default: the git repository of the folder
#                        run.sh was started from, else this checkout)
#   CODE_GRAPH_PROJECT   the project name in the graph (default: that folder's name)
#   CODE_GRAPH_DB_PORT   the Bolt port (default 7687, a free one when that is taken)
#   CODE_GRAPH_INDEX_BIN a built code-graph-index to use (default: cargo run --release)

code_graph_data=""

# code_graph_start CALLER_DIR: the embedded database and its graph (see above). Status 1 (with
# the reason on stderr) when it could not be started; the gateway can still start without it.
code_graph_start() {
  local caller_dir="$1" repo project port out password
  if [ -n "${CODE_GRAPH_BOLT_URI:-}" ]; then
    echo "code-graph: using CODE_GRAPH_BOLT_URI=$CODE_GRAPH_BOLT_URI (no embedded database)" >&2
    return 0
  fi
  repo="${CODE_GRAPH_REPO:-$(git -C "$caller_dir" rev-parse --show-toplevel 2>/dev/null || pwd)}"
  [ -d "$repo" ] || { echo "code-graph: CODE_GRAPH_REPO=$repo is not a folder" >&2; return 1; }
  repo="$(cd "$repo" && pwd)"
  project="${CODE_GRAPH_PROJECT:-$(basename "$repo" | tr './' '__')}"
  port="${CODE_GRAPH_DB_PORT:-7687}"
  if ! python3 -c 'import socket,sys; s=socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1])))' "$port" 2>/dev/null; then
    echo "code-graph: port $port is taken, using a free one" >&2
    port=0
  fi
  password="$(od -An -N18 -tx1 /dev/urandom | tr -d ' \n')"
  code_graph_data="$(mktemp -d "${TMPDIR:-/tmp}/code-graph-db.XXXXXX")"
  if ! out="$(BOLT_PASSWORD="$password" scripts/bolt-db.sh start --port "$port" --data "$code_graph_data")"; then
    echo "code-graph: the embedded database did not start" >&2
    return 1
  fi
  CODE_GRAPH_BOLT_URI="$(sed -n 's/^BOLT_URL=//p' <<<"$out")"
  export CODE_GRAPH_BOLT_URI
  export CODE_GRAPH_BOLT_USER=root
  export CODE_GRAPH_BOLT_PASSWORD="$password"
  echo "code-graph: indexing $repo as project '$project' into $CODE_GRAPH_BOLT_URI" >&2
  local indexer=(cargo run --release --locked --quiet -p code-graph --bin code-graph-index --)
  if [ -n "${CODE_GRAPH_INDEX_BIN:-}" ]; then indexer=("$CODE_GRAPH_INDEX_BIN"); fi
  if ! "${indexer[@]}" --repo "$repo" --project "$project" --uri "$CODE_GRAPH_BOLT_URI"; then
    echo "code-graph: indexing failed; code-graph-rag serves an empty graph" >&2
  fi
}

# code_graph_stop: stops the embedded database (if code_graph_start started one).
# shellcheck disable=SC2317  # called by the EXIT trap
code_graph_stop() {
  [ -n "$code_graph_data" ] || return 0
  scripts/bolt-db.sh stop --data "$code_graph_data" >/dev/null 2>&1 || true
  rm -rf "$code_graph_data"
  code_graph_data=""
}
