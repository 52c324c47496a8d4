#!/usr/bin/env bats
# Owns the README's commands honouring cargo's target folder (issue 31, item 7): with
# CARGO_TARGET_DIR set (a shared target folder), scripts/lib/cargo-target.sh says where cargo
# puts its builds, and scripts/run.sh and scripts/hello-providers.sh build and then run what is
# there, not target/. A stand-in cargo on PATH records `build` and does nothing (a release build
# takes many minutes), and hands every other command (metadata) to the real cargo; the "built"
# binaries are the debug gateway and a recorder, put in $CARGO_TARGET_DIR/release.
# (launchd/tests/cargo-target.bats has the same for launchd/.)

# shellcheck disable=SC2016 # bash -c '...' scripts expand their own arguments
bats_require_minimum_version 1.5.0

setup_file() {
  REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
  local bin="${MCP_GATEWAY_BIN:-$REPO/target/debug/mcp-http-gateway}"
  [ -x "$bin" ] || { echo "no gateway binary at $bin: cargo build -p mcp-http-gateway, or set MCP_GATEWAY_BIN" >&2; return 1; }
  # A copy, so that a rebuild during the run cannot pull it from under the test.
  mkdir -p "$BATS_FILE_TMPDIR/bin"
  cp "$bin" "$BATS_FILE_TMPDIR/bin/mcp-http-gateway"
}

setup() {
  REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
  GATEWAY="$BATS_FILE_TMPDIR/bin/mcp-http-gateway"
  export CARGO_TARGET_DIR="$BATS_TEST_TMPDIR/shared-target"
  unset CARGO_BUILD_TARGET_DIR
  mkdir -p "$CARGO_TARGET_DIR/release"
  # The stand-in cargo, first on PATH.
  local real
  real="$(command -v cargo)" || { echo "cargo is not on PATH" >&2; return 1; }
  FAKE_BIN="$BATS_TEST_TMPDIR/fakebin"
  CARGO_LOG="$BATS_TEST_TMPDIR/cargo.calls"
  mkdir -p "$FAKE_BIN"
  cat >"$FAKE_BIN/cargo" <<EOF
#!/usr/bin/env bash
echo "cargo \$*" >>'$CARGO_LOG'
[ "\$1" != build ] || exit 0
exec '$real' "\$@"
EOF
  chmod +x "$FAKE_BIN/cargo"
}

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

teardown() {
  if [ -n "${run_pid:-}" ] && kill -0 "$run_pid" 2>/dev/null; then
    kill -TERM "$run_pid" 2>/dev/null || true
    wait "$run_pid" 2>/dev/null || true
  fi
}

# recorder PATH LOG [EXEC]: an executable at PATH that appends its arguments to LOG, then runs
# EXEC with them (or exits 0).
recorder() {
  {
    echo '#!/bin/sh'
    echo "echo \"\$*\" >>'$2'"
    if [ -n "${3:-}" ]; then echo "exec '$3' \"\$@\""; fi
  } >"$1"
  chmod +x "$1"
}

@test "cargo_target_dir prints where cargo builds: CARGO_TARGET_DIR, CARGO_BUILD_TARGET_DIR, build.target-dir, else target/" {
  # shellcheck source=scripts/lib/cargo-target.sh
  source "$REPO/scripts/lib/cargo-target.sh"
  run cargo_target_dir "$REPO"
  [ "$status" -eq 0 ]
  [ "$output" = "$CARGO_TARGET_DIR" ]
  # A workspace of its own, with its own .cargo/config.toml.
  local ws="$BATS_TEST_TMPDIR/ws"
  mkdir -p "$ws/src" "$ws/.cargo"
  printf '[package]\nname = "ws"\nversion = "0.1.0"\nedition = "2021"\n' >"$ws/Cargo.toml"
  : >"$ws/src/lib.rs"
  run env -u CARGO_TARGET_DIR bash -c 'source "$1" && cargo_target_dir "$2"' _ "$REPO/scripts/lib/cargo-target.sh" "$ws"
  [ "$status" -eq 0 ]
  [ "$output" = "$ws/target" ]
  printf '[build]\ntarget-dir = "shared"\n' >"$ws/.cargo/config.toml"
  run env -u CARGO_TARGET_DIR bash -c 'source "$1" && cargo_target_dir "$2"' _ "$REPO/scripts/lib/cargo-target.sh" "$ws"
  [ "$status" -eq 0 ]
  [ "$output" = "$ws/shared" ]
  run env -u CARGO_TARGET_DIR CARGO_BUILD_TARGET_DIR="$BATS_TEST_TMPDIR/b" \
    bash -c 'source "$1" && cargo_target_dir "$2"' _ "$REPO/scripts/lib/cargo-target.sh" "$ws"
  [ "$status" -eq 0 ]
  [ "$output" = "$BATS_TEST_TMPDIR/b" ]
  run cargo_target_dir "$ws"
  [ "$output" = "$CARGO_TARGET_DIR" ]
}

@test "cargo_target_dir fails, saying why, where cargo cannot tell" {
  # shellcheck source=scripts/lib/cargo-target.sh
  source "$REPO/scripts/lib/cargo-target.sh"
  mkdir -p "$BATS_TEST_TMPDIR/no-workspace"
  run cargo_target_dir "$BATS_TEST_TMPDIR/no-workspace"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"Cargo.toml"* ]]
  [[ "$output" == *"cargo metadata failed in $BATS_TEST_TMPDIR/no-workspace"* ]]
}

@test "run.sh builds the release gateway, then runs it from CARGO_TARGET_DIR/release, not target/" {
  local calls="$BATS_TEST_TMPDIR/gateway.calls" log="$BATS_TEST_TMPDIR/run.log" probe_port
  recorder "$CARGO_TARGET_DIR/release/mcp-http-gateway" "$calls" "$GATEWAY"
  probe_port="$(port)"
  mkdir -p "$BATS_TEST_TMPDIR/config"
  printf 'service: { name: probe, port: %s, host: 127.0.0.1 }\nproviders: []\n' "$probe_port" \
    >"$BATS_TEST_TMPDIR/config/probe.yaml"
  # No embedded graph, no hello providers: only the gateway is started. --config-dir relative to
  # where run.sh is started.
  (
    cd "$BATS_TEST_TMPDIR"
    unset MCP_GATEWAY_BIN
    PATH="$FAKE_BIN:$PATH" CODE_GRAPH_BOLT_URI=bolt://127.0.0.1:9 \
      HELLO_RS_ADDRESS=127.0.0.1:9 HELLO_PY_ADDRESS=127.0.0.1:9 \
      exec "$REPO/scripts/run.sh" --config-dir config
  ) >"$log" 2>&1 &
  run_pid=$!
  local deadline=$((SECONDS + 120))
  until grep -Eq "^probe +http://127\.0\.0\.1:$probe_port +healthy +0$" "$log"; do
    kill -0 "$run_pid" 2>/dev/null || { cat "$log"; echo "run.sh ended before its table" >&2; return 1; }
    [ "$SECONDS" -lt "$deadline" ] || { cat "$log"; echo "no table within 120 s" >&2; return 1; }
    sleep 0.2
  done
  cat "$log"
  grep -qx "cargo build --release --locked -p mcp-http-gateway" "$CARGO_LOG"
  grep -q "^cargo metadata " "$CARGO_LOG"
  grep -qx "serve --config-dir $BATS_TEST_TMPDIR/config" "$calls"
  kill -TERM "$run_pid"
  local status=0
  wait "$run_pid" || status=$?
  run_pid=""
  [ "$status" -eq 143 ]
  run ! curl -fsS "http://127.0.0.1:$probe_port/health"
}

@test "hello-providers.sh builds hello-provider, then runs it from CARGO_TARGET_DIR/release" {
  local calls="$BATS_TEST_TMPDIR/hello.calls" rs_port py_port
  # A hello-rs that records how it was started and ends at once: hello-providers.sh then stops.
  recorder "$CARGO_TARGET_DIR/release/hello-provider" "$calls"
  rs_port="$(port)" py_port="$(port)"
  run env -u HELLO_PROVIDER_BIN PATH="$FAKE_BIN:$PATH" \
    HELLO_RS_ADDRESS="127.0.0.1:$rs_port" HELLO_PY_ADDRESS="127.0.0.1:$py_port" \
    timeout 120 "$REPO/scripts/hello-providers.sh"
  echo "$output"
  [ "$status" -eq 0 ]
  grep -qx "cargo build --release --locked -p hello-provider" "$CARGO_LOG"
  grep -qx -- "--listen 127.0.0.1:$rs_port" "$calls"
}

@test "loadtest-ci.sh --no-build looks for its binaries where cargo puts them, and names the one missing" {
  # Nothing is built in the shared target folder: the first binary it needs is named, under
  # CARGO_TARGET_DIR, before any backend is started, and no build is asked of cargo.
  PATH="$FAKE_BIN:$PATH" run -2 "$REPO/scripts/loadtest-ci.sh" --profile dev --no-build
  [[ "$output" == *"loadtest-ci: no $CARGO_TARGET_DIR/debug/mcp-http-gateway: build it"* ]]
  [[ "$output" == *"or run without --no-build"* ]]
  run ! grep -q "^cargo build" "$CARGO_LOG"
  # With the gateway there, the next one missing is named.
  mkdir -p "$CARGO_TARGET_DIR/debug"
  cp "$GATEWAY" "$CARGO_TARGET_DIR/debug/mcp-http-gateway"
  PATH="$FAKE_BIN:$PATH" run -2 "$REPO/scripts/loadtest-ci.sh" --profile dev --no-build
  [[ "$output" == *"loadtest-ci: no $CARGO_TARGET_DIR/debug/loadtest: build it"* ]]
}
