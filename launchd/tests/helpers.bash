# Owns what the launchd/tests/*.bats files share: the repository's paths, the gateway binary
# under test, free loopback ports, polling with a deadline, and killing what a test started.
# Loaded with `load helpers` from each .bats file.

# shellcheck disable=SC2034 # used by the .bats files that load this
REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
# shellcheck disable=SC2034
MANAGER="$REPO/launchd/services-manager.sh"
# shellcheck disable=SC2034
INSTALL="$REPO/launchd/install.sh"
# shellcheck disable=SC2034
RENDER="$REPO/launchd/render-plists.sh"

# The binary under test: MCP_GATEWAY_BIN (scripts/test.sh passes target/debug's), else the
# checkout's debug or release build. Copied, so that a rebuild during the run cannot pull it
# from under the test.
gateway_bin() {
  local src="${MCP_GATEWAY_BIN:-}"
  if [ -z "$src" ]; then
    for src in "$REPO/target/debug/mcp-http-gateway" "$REPO/target/release/mcp-http-gateway"; do
      [ -x "$src" ] && break
    done
  fi
  if [ ! -x "$src" ]; then
    echo "no mcp-http-gateway binary: build it (cargo build -p mcp-http-gateway) or set MCP_GATEWAY_BIN" >&2
    return 1
  fi
  mkdir -p "$BATS_FILE_TMPDIR/bin"
  if [ ! -x "$BATS_FILE_TMPDIR/bin/mcp-http-gateway" ]; then
    cp "$src" "$BATS_FILE_TMPDIR/bin/mcp-http-gateway"
  fi
  echo "$BATS_FILE_TMPDIR/bin/mcp-http-gateway"
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# timed_run COMMAND...: bats' `run`, also setting $elapsed to its wall time in ms and printing
# $output (shown when the test fails).
timed_run() {
  local t0
  t0="$(now_ms)"
  run "$@"
  elapsed=$(($(now_ms) - t0))
  # shellcheck disable=SC2154 # $output is set by bats' run
  echo "$output"
}

# Is something listening on 127.0.0.1:PORT?
port_busy() {
  if command -v ss >/dev/null 2>&1; then
    [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
  fi
}

# N free loopback ports from 18100-18199 (starting at a random one, so that parallel runs
# rarely collide), space-separated.
free_ports() {
  local want="$1" found=() start port i
  start=$((RANDOM % 100))
  for i in $(seq 0 99); do
    port=$((18100 + (start + i) % 100))
    port_busy "$port" || found+=("$port")
    [ "${#found[@]}" -lt "$want" ] || break
  done
  [ "${#found[@]}" -eq "$want" ] || { echo "not $want free ports in 18100-18199" >&2; return 1; }
  echo "${found[*]}"
}

# Polls COMMAND... every 0.1 s until it succeeds or SECONDS pass: wait_until SECONDS COMMAND...
wait_until() {
  local deadline=$(($(now_ms) + $1 * 1000))
  shift
  until "$@"; do
    [ "$(now_ms)" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

pid_gone() { ! kill -0 "$1" 2>/dev/null || [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" = Z ]; }

# Live (non-zombie) processes whose command line holds STRING (a test's temp folder).
live_pids_matching() {
  # Through the environment, so that awk's own command line does not match.
  ps -A -o pid= -o stat= -o args= | MATCH="$1" awk 'index($0, ENVIRON["MATCH"]) && $2 !~ /^Z/ { print $1 }'
}

# Kills (SIGKILL) every process whose command line holds STRING: a test's safety net.
kill_matching() {
  local p
  for p in $(live_pids_matching "$1"); do
    if [ "$p" != "$$" ]; then kill -KILL "$p" 2>/dev/null || true; fi
  done
}

# A config folder with copies of the four shipped services (and a fifth, `probe`, with no
# providers: healthy with no backend) on free ports, a registry listing them plus a disabled
# `everything`, in DIR.
make_config_dir() {
  local dir="$1" ports port name i=0
  read -r -a ports <<<"$(free_ports 6)"
  mkdir -p "$dir"
  {
    echo "# test registry"
    echo "services:"
  } >"$dir/services.yaml"
  for name in ai-gateway code-graph-rag seekr docwell probe; do
    port="${ports[$i]}"
    if [ "$name" = probe ]; then
      printf 'service:\n  name: probe\n  port: %s\n  host: 127.0.0.1\nlimits:\n  shutdown_grace_ms: 2000\nproviders: []\n' \
        "$port" >"$dir/probe.yaml"
    else
      sed "s/^  port: .*/  port: $port/" "$REPO/config/$name.yaml" >"$dir/$name.yaml"
    fi
    echo "  - { name: $name, url: \"http://127.0.0.1:$port\", enabled: true }" >>"$dir/services.yaml"
    i=$((i + 1))
  done
  echo "  - { name: everything, url: \"http://127.0.0.1:${ports[5]}\", enabled: false }  # disabled" >>"$dir/services.yaml"
}

# The port of service NAME in config folder DIR's registry.
registry_port() {
  sed -n "s/.*name: $2, url: \"http:\/\/127.0.0.1:\([0-9]*\)\".*/\1/p" "$1/services.yaml"
}

# Puts tests/fake-launchctl on PATH as DIR/launchctl, run by the real python3 (not through a
# version manager's shim, which costs ~0.1 s a call).
install_fake_launchctl() {
  local python
  python="$(python3 -c 'import sys; print(sys.executable)')"
  mkdir -p "$1"
  printf '#!/bin/sh\nexec %s %s "$@"\n' "$python" "$BATS_TEST_DIRNAME/fake-launchctl" >"$1/launchctl"
  chmod +x "$1/launchctl"
}
