#!/usr/bin/env bash
# Measures what the credentials layer costs per request: GET /tools (server-everything behind
# it, one stdio child) through wrk, kept-alive connections, every answer checked for
# `"success":true`, in one run against one release binary:
#   open     a service without credentials (the reference);
#   key      the same tools behind an API key (X-API-Key);
#   jwt-rs   behind security.oauth, an RS256 access token of a real issuer (oidc-provider,
#            tests/fixtures/oauth_issuer.mjs), its key cached after the first request;
#   jwt-es   the same with an ES256 token.
# Ratios are against `open` of the same round (docs/performance.md, "Credentials").
#
#   scripts/perf/auth-overhead.sh [--release-dir DIR] [--duration SECONDS] [--rounds N]
#                                 [--connections C]
#
# DIR defaults to release/ where cargo puts its builds (build first: cargo build --release -p
# mcp-http-gateway); SECONDS to 5 per run; N to 2 rounds; C to 8 connections (2 wrk threads).
# Needs wrk, jq, node and the project's .deps (scripts/install-mcp-servers.sh). Prints Markdown.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
release=""
duration=5
rounds=2
connections=8
while (($#)); do
  case "$1" in
    --release-dir) release="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "auth-overhead: unknown option $1" >&2; exit 2 ;;
  esac
done
for tool in wrk jq node; do
  command -v "$tool" >/dev/null || { echo "auth-overhead: needs $tool" >&2; exit 2; }
done
# shellcheck source=scripts/lib/cargo-target.sh
source "$root/scripts/lib/cargo-target.sh"
[ -n "$release" ] || release="$(cargo_target_dir "$root")/release" || exit 2
[ -x "$release/mcp-http-gateway" ] || { echo "auth-overhead: no binary at $release/mcp-http-gateway" >&2; exit 2; }
# shellcheck source=scripts/lib/processes.sh
source "$root/scripts/lib/processes.sh"
python="$root/.deps/venv/bin/python"
everything="$root/.deps/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
fixtures="$root/crates/server/tests/fixtures"

issuer_port="$(free_port)" open_port="$(free_port)" guarded_port="$(free_port)"
issuer="http://127.0.0.1:$issuer_port"
guarded="http://127.0.0.1:$guarded_port"
# The issuer's keys: one RSA (rsa1) and one P-256 (ec1) private JWK.
"$python" - "$work/issuer.json" "$issuer_port" "$guarded" <<'PY'
import json, sys
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
r = json.loads(RSAAlgorithm.to_jwk(rsa.generate_private_key(65537, 2048)))
e = json.loads(ECAlgorithm.to_jwk(ec.generate_private_key(ec.SECP256R1())))
r.update(kid="rsa1", alg="RS256", use="sig")
e.update(kid="ec1", alg="ES256", use="sig")
path, port, resource = sys.argv[1], int(sys.argv[2]), sys.argv[3]
json.dump({"port": port, "issuer": f"http://127.0.0.1:{port}", "jwks": {"keys": [r, e]},
           "resources": {resource: {"scope": "tools", "format": "jwt"}}, "clients": []}, open(path, "w"))
PY
node "$fixtures/oauth_issuer.mjs" "$work/issuer.json" >"$work/issuer.log" 2>&1 &
pids+=("$!")
wait_http "$issuer/.well-known/openid-configuration" 30 || { cat "$work/issuer.log" >&2; exit 1; }
token() {
  "$python" "$fixtures/oauth_tokens.py" "$work/issuer.json" --aud "$guarded" --scope tools --kid "$1" | jq -r .valid
}
rs_token="$(token rsa1)" es_token="$(token ec1)"
key="bench-key-$RANDOM$RANDOM"

mkdir -p "$work/config"
cat >"$work/config/open.yaml" <<YAML
service: { name: open, port: $open_port }
logging: { level: warn, format: json }
security: { rate_limit: 100000000 }
providers:
  - { name: everything, kind: mcp, command: node, args: ["$everything", stdio] }
YAML
cat >"$work/config/guarded.yaml" <<YAML
service: { name: guarded, port: $guarded_port }
logging: { level: warn, format: json }
security:
  rate_limit: 100000000
  api_keys: [{ name: bench, value_env: AUTH_BENCH_KEY }]
  oauth: { issuer: "$issuer" }
providers:
  - { name: everything, kind: mcp, command: node, args: ["$everything", stdio] }
YAML
AUTH_BENCH_KEY="$key" "$release/mcp-http-gateway" serve --config-dir "$work/config" >"$work/gateway.log" 2>&1 &
pids+=("$!")
wait_http "http://127.0.0.1:$open_port/health" 30 || { cat "$work/gateway.log" >&2; exit 1; }
wait_http "$guarded/health" 30 || { cat "$work/gateway.log" >&2; exit 1; }

run() { # url, header…: one wrk run's JSON line; a failed or unexpected answer fails the script
  local url="$1"; shift
  local line
  line=$(WRK_EXPECT='"success":true' wrk -t2 -c "$connections" -d "${duration}s" "$@" \
    -s scripts/perf/report.lua "$url/tools" | tail -1)
  if [ "$(echo "$line" | jq '.errors + .bad')" != 0 ]; then
    echo "auth-overhead: failed or unexpected answers: $line" >&2
    exit 1
  fi
  echo "$line"
}

echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)); wrk $(wrk -v 2>&1 | head -1 | awk '{print $2}'), $connections connections kept alive, ${duration} s per run; GET /tools, every answer checked."
echo
echo "| round | credential | requests/s | p50 ms | p99 ms | requests/s ÷ open |"
echo "|---:|---|---:|---:|---:|---:|"
for round in $(seq 1 "$rounds"); do
  open=$(run "http://127.0.0.1:$open_port")
  reference=$(echo "$open" | jq .rps)
  for case in open key jwt-rs jwt-es; do
    case "$case" in
      open) line="$open" ;;
      key) line=$(run "$guarded" -H "X-API-Key: $key") ;;
      jwt-rs) line=$(run "$guarded" -H "Authorization: Bearer $rs_token") ;;
      jwt-es) line=$(run "$guarded" -H "Authorization: Bearer $es_token") ;;
    esac
    echo "$line" | jq -r --arg round "$round" --arg case "$case" --argjson reference "$reference" \
      '"| \($round) | \($case) | \(.rps) | \(.p50_ms) | \(.p99_ms) | \(.rps / $reference * 100 | round / 100) |"'
  done
done
