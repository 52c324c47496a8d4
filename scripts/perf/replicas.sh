#!/usr/bin/env bash
# Measures replicas behind HAProxy sharing Redis (docs/scaling.md) against one gateway alone
# (docs/performance.md, "Replicas"): GET /tools and POST /call-tool with wrk, 100 connections,
# for 1 replica without cluster (straight, no HAProxy), 1 replica behind HAProxy with Redis, and
# 3 replicas behind HAProxy with Redis. Each replica serves one `http` tool whose dependency is
# the replica itself (it GETs the replica's /tools), so no other process competes for the cores.
#
#   scripts/perf/replicas.sh [--binary PATH] [--duration SECONDS] [--connections N]
#
# PATH defaults to release/mcp-http-gateway where cargo puts its builds (CARGO_TARGET_DIR
# counts; build it first: this script builds nothing); SECONDS to 10 per wrk run; N to 100.
# Needs wrk, redis-server and haproxy (scripts/install-test-tools.sh). Prints a Markdown table.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
gateway=""
duration=10
connections=100
while (($#)); do
  case "$1" in
    --binary) gateway="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "replicas: unknown option $1" >&2; exit 2 ;;
  esac
done
haproxy="$(command -v haproxy || echo /usr/sbin/haproxy)"
for tool in wrk redis-server "$haproxy"; do
  command -v "$tool" >/dev/null || { echo "replicas: needs $tool (scripts/install-test-tools.sh; wrk: Debian package wrk)" >&2; exit 2; }
done
# shellcheck source=scripts/lib/cargo-target.sh
source "$root/scripts/lib/cargo-target.sh"
[ -n "$gateway" ] || gateway="$(cargo_target_dir "$root")/release/mcp-http-gateway" || exit 2
[ -x "$gateway" ] || { echo "replicas: no binary at $gateway" >&2; exit 2; }
# shellcheck source=scripts/lib/processes.sh
source "$root/scripts/lib/processes.sh"

redis_port="$(free_port)"
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no >"$work/redis.log" 2>&1 &
pids+=("$!")
until [ "$(redis-cli -p "$redis_port" ping 2>/dev/null)" = PONG ]; do sleep 0.05; done

# replica NAME CLUSTER(yes|no): starts one replica, waits until it serves; sets $port to its
# port (not printed: a command substitution's subshell would lose the pid to clean up).
replica() {
  local cluster=""
  port="$(free_port)"
  [ "$2" = yes ] && cluster="cluster: { redis_url: \"redis://127.0.0.1:$redis_port/0\", replica_id: $1 }"
  cat >"$work/$1.yaml" <<YAML
service: { name: shop, port: $port }
logging: { level: warn, format: json }
security: { rate_limit: 100000000 }
$cluster
dependencies:
  self: { kind: http, base_url: "http://127.0.0.1:$port", health_path: /tools }
providers:
  - name: local
    kind: http
    dependency: self
    tools:
      - { name: list, description: The replica's own tool list, input_schema: { type: object }, path: /tools }
YAML
  "$gateway" serve --config "$work/$1.yaml" >"$work/$1.log" 2>&1 &
  pids+=("$!")
  wait_http "http://127.0.0.1:$port/health" 30 || { cat "$work/$1.log" >&2; exit 1; }
}

# haproxy_for PORT...: HAProxy (deploy/haproxy/haproxy.cfg) in front of the ports; sets $port.
haproxy_for() {
  local servers="" i=0
  port="$(free_port)"
  for p in "$@"; do servers+="    server r$i 127.0.0.1:$p check"$'\n'; i=$((i + 1)); done
  { cat "$root/deploy/haproxy/haproxy.cfg"; printf '%s' "$servers"; } >"$work/haproxy-$port.cfg"
  HAPROXY_LISTEN="127.0.0.1:$port" "$haproxy" -db -f "$work/haproxy-$port.cfg" >"$work/haproxy-$port.log" 2>&1 &
  pids+=("$!")
  # Until round robin reaches every server (each passed its checks), 30 s at most.
  local deadline=$((SECONDS + 30)) seen=0
  until [ "$seen" -eq "$#" ]; do
    ((SECONDS <= deadline)) || { cat "$work/haproxy-$port.log" >&2; exit 1; }
    seen=$(for _ in $(seq 1 $(($# * 2))); do
      { curl -s -o /dev/null -D - "http://127.0.0.1:$port/health" || true; } | tr -d '\r' | awk -F': ' 'tolower($1)=="x-served-by"{print $2}'
    done | sort -u | wc -l)
    [ "$seen" -eq "$#" ] || sleep 0.1
  done
}

replica alone no
alone=$port
replica c0 yes
haproxy_for "$port"
one=$port
backends=()
for name in c1 c2 c3; do
  replica "$name" yes
  backends+=("$port")
done
haproxy_for "${backends[@]}"
three=$port
curl -fsS -o /dev/null -X POST -H 'content-type: application/json' -d '{"tool":"list","arguments":{}}' "http://127.0.0.1:$alone/call-tool"

echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)); wrk $(wrk -v 2>&1 | head -1 | awk '{print $2}'); ${duration} s per run, $connections connections, 2 wrk threads; redis-server $(redis-server --version | awk '{print $3}' | cut -d= -f2), $("$haproxy" -v | head -1 | awk '{print $1, $3}')."
echo
echo "| setup | request | req/s | p50 ms | p99 ms | errors |"
echo "|---|---|---:|---:|---:|---:|"
for setup in "1 replica alone (direct):$alone" "1 replica + Redis (HAProxy):$one" "3 replicas + Redis (HAProxy):$three"; do
  name="${setup%%:*}"
  port="${setup##*:}"
  for request in tools call; do
    if [ "$request" = tools ]; then body=''; path=/tools; label='GET /tools'; else
      body='{"tool":"list","arguments":{}}'; path=/call-tool; label='POST /call-tool (list)'; fi
    line=$(WRK_BODY="$body" wrk -t2 -c"$connections" -d"${duration}s" -s scripts/perf/report.lua \
      "http://127.0.0.1:$port$path" | tail -1)
    python3 - "$name" "$label" "$line" <<'PY'
import json, sys
name, label, r = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
print(f"| {name} | {label} | {r['rps']:,.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['errors']} |".replace(",", " "))
PY
  done
done
