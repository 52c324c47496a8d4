#!/usr/bin/env bash
# The gateway against other MCP proxies on the same upstream, in the same run
# (docs/performance.md, "Against other MCP proxies"). Every proxy serves server-everything over
# one stdio child of its own; every call is `echo`, checked to hold the echoed text.
#
#   MCP   tools/call over Streamable HTTP, one session (initialize + initialized first), wrk
#         keeping its connections alive: 1 connection (-t1 -c1) and 50 (-t2 -c50). Compared:
#         the gateway's /mcp (a client offering nothing: answered as JSON), the same with a
#         client offering roots ("gateway-sse": answered as SSE streams), supergateway 4.0.0
#         (--stateful), mcp-proxy 0.13.0 (Python), mcp-proxy 0.6.0 (Rust, tower-mcp).
#   REST  the echo tool as a REST call at 1 and 50 connections: the gateway's POST /call-tool
#         against mcpo 0.0.20's POST /echo.
#
# Each round runs every measurement once, the order turned by one place each round; the tables
# are the medians over the rounds, and the gateway's ratio to each peer is the median of the
# rounds' ratios. Beside throughput and p50/p99 stand each proxy's own CPU per call (user +
# system of its process, not of its node child, /proc/PID/stat, over the 50-connection run's
# calls) and its MCP server's (the node child's). Installs the peers (scripts/perf/install-peers.sh) and builds the
# release gateway unless told not to. Needs wrk and jq. Prints Markdown; the raw runs are in
# target/perf/mcp-peers.jsonl.
#
#   scripts/perf/mcp-peers.sh [--rounds N] [--duration SECONDS] [--no-build] [--only gateway]
#                             [--before BIN]
#
# --only gateway measures the gateway alone (no peers installed or started). --before BIN
# measures another build of the gateway too (rows `before`, `before-sse`), in the same rounds.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
rounds=3
duration=5
build=1
only=""
before=""
while (($#)); do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --only) only="$2"; shift 2 ;;
    --before) before="$2"; shift 2 ;;
    -h | --help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "mcp-peers: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for tool in wrk jq curl; do
  command -v "$tool" >/dev/null || { echo "mcp-peers: needs $tool (Debian package $tool)" >&2; exit 2; }
done
everything_js="$root/.deps/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[[ -f "$everything_js" ]] || scripts/install-mcp-servers.sh
[[ -n "$only" ]] || scripts/perf/install-peers.sh
# shellcheck source=scripts/lib/cargo-target.sh
source "$root/scripts/lib/cargo-target.sh"
target_dir="$(cargo_target_dir "$root")"
gateway="$target_dir/release/mcp-http-gateway"
((build == 0)) || cargo build --release --locked -p mcp-http-gateway --bin mcp-http-gateway >&2
[[ -x "$gateway" ]] || { echo "mcp-peers: no gateway at $gateway (drop --no-build)" >&2; exit 2; }
# shellcheck source=scripts/lib/processes.sh
source "$root/scripts/lib/processes.sh"
# shellcheck source=scripts/lib/bench.sh
source "$root/scripts/lib/bench.sh"
peers="$root/.deps/peers"
out_dir="$target_dir/perf"
mkdir -p "$out_dir"
raw="$out_dir/mcp-peers.jsonl"
: >"$raw"

# --- the proxies, each with its own server-everything child -------------------------------
declare -A url pid tool capabilities
everything="  - { name: everything, kind: mcp, command: node, args: [\"$everything_js\", stdio] }"
gw="" gw_pid=""
start "$(service gateway "$everything")" gw
url[gateway]="$gw/mcp" pid[gateway]="$gw_pid" tool[gateway]=echo
url[gateway-sse]="$gw/mcp" pid[gateway-sse]="$gw_pid" tool[gateway-sse]=echo
capabilities[gateway-sse]='{"roots":{}}'
rest_gateway="$gw/call-tool"
mcp_targets=(gateway gateway-sse)
rest_peers=(gateway)
# --before BIN: another build of the gateway on its own child, measured as the rows
# `before`, `before-sse` (MCP) and `before` (REST) in the same rounds.
if [[ -n "$before" ]]; then
  [[ -x "$before" ]] || { echo "mcp-peers: no gateway at $before (--before)" >&2; exit 2; }
  this_build="$gateway" gateway="$before" gb="" gb_pid=""
  start "$(service before "$everything")" gb
  gateway="$this_build"
  url[before]="$gb/mcp" pid[before]="$gb_pid" tool[before]=echo
  url[before-sse]="$gb/mcp" pid[before-sse]="$gb_pid" tool[before-sse]=echo
  capabilities[before-sse]='{"roots":{}}'
  mcp_targets+=(before before-sse)
  rest_peers+=(before)
fi

# launch NAME URL TOOL COMMAND...: starts a peer in the background, waits until its port takes
# connections.
launch() {
  local name="$1" address="$2"
  tool[$name]="$3"
  "${@:4}" >"$work/$name.log" 2>&1 &
  pids+=($!)
  pid[$name]=$!
  url[$name]="$address"
  wait_answer "$address" 60 || { echo "mcp-peers: $name did not start" >&2; cat "$work/$name.log" >&2; exit 1; }
}

if [[ -z "$only" ]]; then
  port="$(free_port)"
  launch supergateway "http://127.0.0.1:$port/mcp" echo \
    node "$peers/node/node_modules/supergateway/dist/index.js" --stdio "node $everything_js stdio" \
    --outputTransport streamableHttp --stateful --port "$port" --logLevel none
  port="$(free_port)"
  launch mcp-proxy-py "http://127.0.0.1:$port/mcp" echo \
    "$peers/py/bin/mcp-proxy" --host 127.0.0.1 --port "$port" -- node "$everything_js" stdio
  port="$(free_port)"
  cat >"$work/mcp-proxy-rs.toml" <<EOF
[proxy]
name = "bench"
separator = "/"
[proxy.listen]
host = "127.0.0.1"
port = $port
[[backends]]
name = "everything"
transport = "stdio"
command = "node"
args = ["$everything_js", "stdio"]
EOF
  launch mcp-proxy-rs "http://127.0.0.1:$port/" everything/echo \
    "$peers/rust/bin/mcp-proxy" --config "$work/mcp-proxy-rs.toml"
  port="$(free_port)"
  launch mcpo "http://127.0.0.1:$port/echo" echo \
    "$peers/mcpo/bin/mcpo" --host 127.0.0.1 --port "$port" -- node "$everything_js" stdio
  mcp_targets+=(supergateway mcp-proxy-py mcp-proxy-rs)
fi

# --- one measurement -------------------------------------------------------------------------
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# upstream_ticks PID: the CPU ticks of PID's children and grandchildren (the MCP server it
# spawned, through a shell or not).
upstream_ticks() {
  local child grandchild total=0
  for child in $(pgrep -P "$1"); do
    total=$((total + $(cpu_ticks "$child")))
    for grandchild in $(pgrep -P "$child"); do total=$((total + $(cpu_ticks "$grandchild"))); done
  done
  echo "$total"
}
ticks_per_s="$(getconf CLK_TCK)"

# session NAME: a Streamable HTTP session on NAME (initialize, then initialized), its client
# offering ${capabilities[NAME]} (default none); prints "SESSION_ID PROTOCOL_VERSION".
session() {
  local headers body id version
  headers="$work/init.headers" body="$work/init.body"
  curl -sS -D "$headers" -o "$body" -X POST "${url[$1]}" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":'"${capabilities[$1]:-{\}}"',"clientInfo":{"name":"mcp-peers","version":"1"}}}'
  id="$(awk -F': ' 'tolower($1) == "mcp-session-id" { gsub(/\r/, "", $2); print $2 }' "$headers")"
  version="$(sed -n 's/^data: //p; /^{/p' "$body" | jq -r '.result.protocolVersion // empty' | head -1)"
  [[ -n "$id" && -n "$version" ]] || { echo "mcp-peers: $1 gave no session" >&2; cat "$headers" "$body" >&2; exit 1; }
  curl -sS -o /dev/null -X POST "${url[$1]}" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H "Mcp-Session-Id: $id" -H "MCP-Protocol-Version: $version" \
    -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  echo "$id $version"
}

# judged JSON NAME: fails the run on an answer that was not the echo, or on no answer at all.
judged() {
  jq -e '.requests > 0 and .errors == 0 and (.bad // 0) == 0' <<<"$1" >/dev/null \
    || { echo "mcp-peers: $2 failed its check: $1" >&2; exit 1; }
}

# mcp NAME CONNECTIONS: tools/call on NAME; one JSON line to $raw.
mcp() {
  local name="$1" connections="$2" threads=2 id version c0 c1 line
  ((connections > 1)) || threads=1
  read -r id version < <(session "$name")
  c0="$(cpu_ticks "${pid[$name]}")" u0="$(upstream_ticks "${pid[$name]}")"
  line="$(MCP_SESSION="$id" MCP_VERSION="$version" MCP_TOOL="${tool[$name]}" \
    wrk -t"$threads" -c"$connections" -d"${duration}s" -s scripts/perf/mcp-call.lua "${url[$name]}" | tail -1)"
  c1="$(cpu_ticks "${pid[$name]}")" u1="$(upstream_ticks "${pid[$name]}")"
  judged "$line" "$name (MCP, $connections connections)"
  jq -c --arg peer "$name" --arg surface mcp --argjson c "$connections" --argjson round "$round" \
    --argjson cpu_us "$(((c1 - c0) * 1000000 / ticks_per_s))" \
    --argjson upstream_us "$(((u1 - u0) * 1000000 / ticks_per_s))" \
    '. + {peer: $peer, surface: $surface, connections: $c, round: $round, cpu_us_per_call: ($cpu_us / .requests), upstream_cpu_us_per_call: ($upstream_us / .requests)}' \
    <<<"$line" >>"$raw"
}

# rest NAME CONNECTIONS URL BODY: the echo tool as a REST call; one JSON line to $raw.
rest() {
  local connections="$2" threads=2 c0 c1 line
  ((connections > 1)) || threads=1
  c0="$(cpu_ticks "${pid[$1]}")"
  line="$(WRK_BODY="$4" WRK_EXPECT="Echo: bench" wrk -t"$threads" -c"$connections" -d"${duration}s" \
    -s scripts/perf/report.lua "$3" | tail -1)"
  c1="$(cpu_ticks "${pid[$1]}")"
  judged "$line" "$1 (REST, $connections connections)"
  jq -c --arg peer "$1" --arg surface rest --argjson c "$connections" --argjson round "$round" \
    --argjson cpu_us "$(((c1 - c0) * 1000000 / ticks_per_s))" \
    '. + {peer: $peer, surface: $surface, connections: $c, round: $round, cpu_us_per_call: ($cpu_us / .requests)}' \
    <<<"$line" >>"$raw"
}

measurements=()
for name in "${mcp_targets[@]}"; do
  measurements+=("mcp $name 1" "mcp $name 50")
done
for c in 1 50; do
  measurements+=("rest gateway $c $rest_gateway {\"tool\":\"echo\",\"arguments\":{\"message\":\"bench\"}}")
  [[ -z "$before" ]] || measurements+=("rest before $c $gb/call-tool {\"tool\":\"echo\",\"arguments\":{\"message\":\"bench\"}}")
  [[ -n "$only" ]] || measurements+=("rest mcpo $c ${url[mcpo]} {\"message\":\"bench\"}")
done
pid[mcpo]="${pid[mcpo]:-}"

for ((round = 1; round <= rounds; round++)); do
  n=${#measurements[@]}
  for ((i = 0; i < n; i++)); do
    # shellcheck disable=SC2086  # each measurement is a command line of words without spaces
    set -- ${measurements[$(((i + round - 1) % n))]}
    echo "mcp-peers: round $round/$rounds: $*" >&2
    "$@"
  done
done

# --- the tables ------------------------------------------------------------------------------
med() { jq -r --arg p "$1" --arg s "$2" --argjson c "$3" "select(.peer == \$p and .surface == \$s and .connections == \$c) | $4" "$raw" | median; }
printf '\n%s, %s, %s rounds of %s s, medians\n\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(nproc) cores" "$rounds" "$duration"
# ratio NAME SURFACE CONNECTIONS: the median over the rounds of the gateway's calls/s over
# NAME's.
ratio() {
  jq -s -r --arg p "$1" --arg s "$2" --argjson c "$3" '
    def rps($peer): map(select(.peer == $peer and .surface == $s and .connections == $c))[0].rps;
    [group_by(.round)[] | rps("gateway") / rps($p)] | .[]' "$raw" | median
}
echo "| MCP tools/call echo | 1 conn. calls/s | p50 ms | p99 ms | 50 conn. calls/s | p50 ms | p99 ms | proxy CPU µs/call (50) | server's CPU µs/call (50) | gateway ÷ it, 1 conn. | gateway ÷ it, 50 conn. |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for name in "${mcp_targets[@]}"; do
  printf '| %s | %.0f | %.2f | %.2f | %.0f | %.2f | %.2f | %.1f | %.1f | %.2f | %.2f |\n' "$name" \
    "$(med "$name" mcp 1 .rps)" "$(med "$name" mcp 1 .p50_ms)" "$(med "$name" mcp 1 .p99_ms)" \
    "$(med "$name" mcp 50 .rps)" "$(med "$name" mcp 50 .p50_ms)" "$(med "$name" mcp 50 .p99_ms)" \
    "$(med "$name" mcp 50 .cpu_us_per_call)" "$(med "$name" mcp 50 .upstream_cpu_us_per_call)" \
    "$(ratio "$name" mcp 1)" "$(ratio "$name" mcp 50)"
done
echo
echo "| REST echo | 1 conn. calls/s | p50 ms | p99 ms | 50 conn. calls/s | p50 ms | p99 ms | proxy CPU µs/call (50) | gateway ÷ it, 1 conn. | gateway ÷ it, 50 conn. |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
[[ -n "$only" ]] || rest_peers+=(mcpo)
for name in "${rest_peers[@]}"; do
  printf '| %s | %.0f | %.2f | %.2f | %.0f | %.2f | %.2f | %.1f | %.2f | %.2f |\n' "$name" \
    "$(med "$name" rest 1 .rps)" "$(med "$name" rest 1 .p50_ms)" "$(med "$name" rest 1 .p99_ms)" \
    "$(med "$name" rest 50 .rps)" "$(med "$name" rest 50 .p50_ms)" "$(med "$name" rest 50 .p99_ms)" \
    "$(med "$name" rest 50 .cpu_us_per_call)" "$(ratio "$name" rest 1)" "$(ratio "$name" rest 50)"
done
