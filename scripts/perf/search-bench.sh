#!/usr/bin/env bash
# Benchmarks the built-in search provider (docs/performance.md, "Built-in search"): for this
# repository and for a generated tree of N files (scripts/perf/gen-code-tree.py): the first
# index build (time from start to `ready`, files, documents, bytes on disk), a restart reusing
# the index, search_code latency (p50/p99 of Q sequential calls, one keep-alive connection,
# measured by the client) and the time from a file save to the change being searchable
# (median and max of 10 saves, polled every 10 ms).
#
#   scripts/perf/search-bench.sh [--release-dir DIR] [--files N] [--queries Q] [--tree DIR]
#
# DIR defaults to release/ where cargo puts its builds (CARGO_TARGET_DIR counts; build first:
# cargo build --release -p mcp-http-gateway; this script builds nothing); N to 100000; Q to
# 500; --tree reuses a generated tree (else one is generated in a scratch folder and removed).
# Not a CI test: the 100k tree takes minutes. Prints Markdown.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
release=""
files=100000
queries=500
tree=""
while (($#)); do
  case "$1" in
    --release-dir) release="$2"; shift 2 ;;
    --files) files="$2"; shift 2 ;;
    --queries) queries="$2"; shift 2 ;;
    --tree) tree="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "search-bench: unknown option $1" >&2; exit 2 ;;
  esac
done
# shellcheck source=scripts/lib/cargo-target.sh
source "$root/scripts/lib/cargo-target.sh"
[ -n "$release" ] || release="$(cargo_target_dir "$root")/release" || exit 2
gateway="$release/mcp-http-gateway"
[ -x "$gateway" ] || { echo "search-bench: no binary at $gateway" >&2; exit 2; }
# shellcheck source=scripts/lib/processes.sh
source "$root/scripts/lib/processes.sh"

if [[ -z "$tree" ]]; then
  tree="$work/tree"
  python3 scripts/perf/gen-code-tree.py "$tree" --files "$files" >&2
fi

# bench NAME ROOT: one service with a search provider over ROOT, measured; Markdown rows.
bench() {
  local name="$1" dir="$2" port pid
  port="$(free_port)"
  cat >"$work/$name.yaml" <<YAML
service: { name: $name, port: $port }
logging: { level: warn, format: json }
security: { rate_limit: 100000000 }
providers:
  - { name: idx, kind: search, roots: [{ path: "$dir", kind: code }] }
YAML
  start_gateway() {
    started_ns="$(date +%s%N)"
    XDG_CACHE_HOME="$work/cache" "$gateway" serve --config "$work/$name.yaml" >>"$work/$name.log" 2>&1 &
    pid=$!; pids+=("$pid")
  }
  # Prints the index report once ready, with `ms`: the time from the gateway's start to ready.
  wait_ready() {
    python3 - "$port" "$started_ns" <<'PY'
import json, sys, time, urllib.request
port, started_ns = sys.argv[1], int(sys.argv[2])
while True:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            body = json.load(r)
    except Exception as e:
        body = json.loads(e.read()) if hasattr(e, "read") else None
    if body:
        report = body.get("data") or body.get("meta", {}).get("health") or {}
        index = report.get("providers", {}).get("idx", {}).get("index") or {}
        if index.get("state") in ("ready", "failed"):
            break
    time.sleep(0.05)
ms = (time.time_ns() - started_ns) / 1e6
print(json.dumps({"ms": round(ms), **index}))
PY
  }
  local first again
  start_gateway
  first="$(wait_ready)"
  kill -TERM "$pid"; wait "$pid" || true
  start_gateway
  again="$(wait_ready)"
  python3 - "$port" "$dir" "$queries" "$name" "$first" "$again" <<'PY'
import http.client, json, os, random, statistics, sys, time
port, root, n, name = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
first, again = json.loads(sys.argv[5]), json.loads(sys.argv[6])
conn = http.client.HTTPConnection("127.0.0.1", port)
def call(tool, args):
    conn.request("POST", "/call-tool", json.dumps({"tool": tool, "arguments": args}),
                 {"content-type": "application/json"})
    return json.loads(conn.getresponse().read())
# Query words: identifiers found in the tree, so the searches have hits.
files = call("find_files", {"glob": "*", "limit": 1000})["data"]["files"]
rng = random.Random(7)
words = []
for f in rng.sample(files, min(50, len(files))):
    text = call("read_file", {"path": f["path"], "end_line": 40})["data"]["text"]
    words += [w for w in text.replace("(", " ").replace(")", " ").split() if w.isidentifier() and len(w) > 4]
words = words or ["main"]
lat = []
for i in range(n):
    q = " ".join(rng.sample(words, 1 if i % 2 else 2))
    t = time.perf_counter()
    answer = call("search_code", {"query": q, "limit": 10})
    lat.append((time.perf_counter() - t) * 1000)
    assert answer["success"], answer
lat.sort()
p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
# Save → searchable.
saves = []
for i in range(10):
    token = "savedtoken" + "".join(rng.choice("bcdfghjklmnpqrstvwz") for _ in range(12))
    saved = f"zz_search_bench_{i}.rs"
    path = os.path.join(root, saved)
    t = time.perf_counter()
    with open(path, "w") as f:
        f.write(f"fn {token}() {{}}\n")
    while not any(h["path"].endswith(saved) for h in call("search_code", {"query": token})["data"]["hits"]):
        if time.perf_counter() - t > 30:
            raise SystemExit(f"{token} not searchable within 30 s")
        time.sleep(0.01)
    saves.append((time.perf_counter() - t) * 1000)
    os.remove(path)
mb = lambda b: f"{b / 1e6:.1f} MB"
print(f"| {name} | {first['files_total']} | {first['documents']} | {mb(first['index_bytes'])} "
      f"| {first['ms'] / 1000:.1f} s | {again['ms'] / 1000:.1f} s ({again['files_unchanged']} unchanged) "
      f"| {p(0.5):.1f} ms | {p(0.99):.1f} ms | {statistics.median(saves):.0f} ms (max {max(saves):.0f}) |")
PY
  kill -TERM "$pid"; wait "$pid" || true
}

echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -sr); $(basename "$release") build."
echo
echo "| tree | files | documents | index on disk | first build | restart (reuse) | search_code p50 | p99 | save → searchable |"
echo "|---|---|---|---|---|---|---|---|---|"
# This repository: a copy of its tracked files, so the saves do not touch the checkout.
git ls-files -z | tar --null -T - -cf - | (mkdir -p "$work/repo" && tar -xf - -C "$work/repo")
bench "this-repository" "$work/repo"
bench "generated-$files" "$tree"
