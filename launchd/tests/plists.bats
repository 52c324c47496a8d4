#!/usr/bin/env bats
# Owns the tests of the LaunchAgent plists: none is committed (each is rendered at install time
# with the user's real paths), and each one render-plists.sh makes, parsed with Python's
# plistlib, has the keys launchd needs to run, restart and log a service, under the default
# label prefix com.bastion. Also an installation-time render: label prefix, escaping of odd
# values, PATH with node's and python's folders.

bats_require_minimum_version 1.5.0
load helpers

SERVICES="ai-gateway code-graph-rag seekr docwell"

# Checks the plists given as arguments; CHECK_* in the environment say what to expect:
# CHECK_PREFIX, CHECK_LOGS, CHECK_LABEL_PREFIX, CHECK_CONFIG_SRC (for the grace periods),
# CHECK_PATH_DIRS (folders PATH must hold), CHECK_ENV_<NAME> (an environment variable's value).
check_plists() {
  python3 - "$@" <<'EOF'
import math, os, plistlib, re, sys

prefix = os.environ["CHECK_PREFIX"]
logs = os.environ["CHECK_LOGS"]
label_prefix = os.environ["CHECK_LABEL_PREFIX"]
config_src = os.environ["CHECK_CONFIG_SRC"]
path_must_hold = [d for d in os.environ["CHECK_PATH_DIRS"].split(":") if d]
problems = []

def grace_ms(service):
    text = open(os.path.join(config_src, service + ".yaml")).read()
    m = re.search(r"^limits:\n(?:[ \t]+.*\n)*?[ \t]+shutdown_grace_ms:[ \t]*(\d+)", text, re.M)
    return int(m.group(1)) if m else 5000

for path in sys.argv[1:]:
    name = os.path.basename(path)
    service = name[len(label_prefix) + 1:-len(".plist")]
    with open(path, "rb") as f:
        p = plistlib.load(f)
    def want(cond, what):
        if not cond:
            problems.append(f"{name}: {what}")
    want(p.get("Label") == f"{label_prefix}.{service}", f"Label is {p.get('Label')!r}")
    args = p.get("ProgramArguments", [])
    want(args == [f"{prefix}/bin/mcp-http-gateway", "serve", "--config", f"{prefix}/config/{service}.yaml"],
         f"ProgramArguments are {args!r}")
    want(p.get("KeepAlive") is True, "KeepAlive is not true")
    want(p.get("RunAtLoad") is True, "RunAtLoad is not true")
    throttle = p.get("ThrottleInterval")
    want(isinstance(throttle, int) and 1 <= throttle <= 5, f"ThrottleInterval {throttle!r} is not 1..5 s")
    want(p.get("ProcessType") == "Interactive", f"ProcessType is {p.get('ProcessType')!r}")
    want(p.get("WorkingDirectory") == prefix, f"WorkingDirectory is {p.get('WorkingDirectory')!r}")
    for key in ("StandardOutPath", "StandardErrorPath"):
        want(p.get(key) == f"{logs}/{service}.log", f"{key} is {p.get(key)!r}")
    want(p.get("ExitTimeOut") == math.ceil(grace_ms(service) / 1000) + 1,
         f"ExitTimeOut {p.get('ExitTimeOut')!r} is not the grace period + 1 s")
    env = p.get("EnvironmentVariables", {})
    dirs = env.get("PATH", "").split(":")
    for d in path_must_hold:
        want(d in dirs, f"PATH {env.get('PATH')!r} lacks {d}")
    for key, value in os.environ.items():
        if key.startswith("CHECK_ENV_"):
            want(env.get(key[len("CHECK_ENV_"):]) == value, f"EnvironmentVariables[{key[10:]}] is {env.get(key[10:])!r}")

if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"checked {len(sys.argv) - 1} plists")
EOF
}

@test "no plist is committed: none could hold a user's real home folder" {
  local committed=("$REPO"/launchd/*.plist)
  [ ! -e "${committed[0]}" ]
  run grep -rl --exclude-dir=tests '/Users/you' "$REPO/launchd"
  [ "$status" -eq 1 ]
}

@test "a default render: one com.bastion.<service>.plist per service, each with the keys launchd needs" {
  local out="$BATS_TEST_TMPDIR/agents" home="$BATS_TEST_TMPDIR/home"
  run "$RENDER" --out "$out" --home "$home"
  echo "$output"
  [ "$status" -eq 0 ]
  local files=()
  for s in $SERVICES; do files+=("$out/com.bastion.$s.plist"); done
  local all=("$out"/*.plist)
  [ "${#all[@]}" -eq 4 ]
  CHECK_PREFIX="$home/.local/share/mcp-http-gateway" \
    CHECK_LOGS="$home/Library/Logs/mcp-http-gateway" CHECK_LABEL_PREFIX=com.bastion \
    CHECK_CONFIG_SRC="$REPO/config" CHECK_PATH_DIRS="/opt/homebrew/bin:/usr/local/bin:/usr/bin:$home/.local/bin" \
    run check_plists "${files[@]}"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "checked 4 plists" ]
}

@test "the checker refuses a plist that lacks KeepAlive" {
  local out="$BATS_TEST_TMPDIR/agents" home="$BATS_TEST_TMPDIR/home"
  "$RENDER" --out "$out" --home "$home" --services seekr
  sed '/<key>KeepAlive<\/key>/,+1d' "$out/com.bastion.seekr.plist" >"$BATS_TEST_TMPDIR/com.bastion.seekr.plist"
  CHECK_PREFIX="$home/.local/share/mcp-http-gateway" \
    CHECK_LOGS="$home/Library/Logs/mcp-http-gateway" CHECK_LABEL_PREFIX=com.bastion \
    CHECK_CONFIG_SRC="$REPO/config" CHECK_PATH_DIRS='' \
    run check_plists "$BATS_TEST_TMPDIR/com.bastion.seekr.plist"
  [ "$status" -eq 1 ]
  [[ "$output" == *"KeepAlive is not true"* ]]
}

@test "an installation's render: its prefix, label prefix, escaped environment, node's and python's folders on PATH" {
  local out="$BATS_TEST_TMPDIR/out" home="$BATS_TEST_TMPDIR/home with space" env="$BATS_TEST_TMPDIR/gateway.env"
  printf '%s\n' '# backends' 'AI_GATEWAY_BASE_URL=http://127.0.0.1:11434/v1?a=1&b=<2>' \
    "SEEKR_MCP_COMMAND=\"/opt/seekr/bin/seekr-mcp --name 'x'\"" '' >"$env"
  run "$RENDER" --out "$out" --home "$home" --label-prefix org.example.gw --services "seekr docwell" --env-file "$env"
  echo "$output"
  [ "$status" -eq 0 ]
  local rendered=("$out"/*.plist)
  [ "${#rendered[@]}" -eq 2 ]
  local node_dir python_dir
  node_dir="$(dirname "$(command -v node)")"
  python_dir="$(dirname "$(command -v python3)")"
  CHECK_PREFIX="$home/.local/share/mcp-http-gateway" \
    CHECK_LOGS="$home/Library/Logs/mcp-http-gateway" CHECK_LABEL_PREFIX=org.example.gw \
    CHECK_CONFIG_SRC="$REPO/config" CHECK_PATH_DIRS="$node_dir:$python_dir:$home/.local/bin:/usr/bin" \
    CHECK_ENV_AI_GATEWAY_BASE_URL='http://127.0.0.1:11434/v1?a=1&b=<2>' \
    CHECK_ENV_SEEKR_MCP_COMMAND="/opt/seekr/bin/seekr-mcp --name 'x'" \
    run check_plists "$out"/*.plist
  echo "$output"
  [ "$status" -eq 0 ]
  grep -q '&amp;b=&lt;2&gt;' "$out/org.example.gw.seekr.plist"
}

@test "render-plists.sh refuses a bad label prefix and a bad env file" {
  run "$RENDER" --out "$BATS_TEST_TMPDIR/x" --label-prefix 'bad prefix'
  [ "$status" -eq 1 ]
  printf 'not a setting\n' >"$BATS_TEST_TMPDIR/bad.env"
  run "$RENDER" --out "$BATS_TEST_TMPDIR/x" --env-file "$BATS_TEST_TMPDIR/bad.env"
  [ "$status" -eq 1 ]
  [[ "$output" == *"not a KEY=VALUE line"* ]]
  run "$RENDER" --bogus
  [ "$status" -eq 2 ]
  run "$RENDER" --home "$BATS_TEST_TMPDIR"
  [ "$status" -eq 2 ]
  [[ "$output" == *"give --out DIR"* ]]
}
