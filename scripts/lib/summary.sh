# shellcheck shell=bash
# Sourced by scripts/run.sh: once every service of a config folder answers, one table of what
# runs (service, URL, state, tools) and the first commands to try. Reads each service's port
# with the gateway binary (`config get`), so there is one YAML parser.

# service_table BINARY CONFIG_DIR [SECONDS]: waits (up to SECONDS, default 180, for all) until
# each service has settled: its /health answers (any status: `unavailable` is up and talking)
# and no dependency is `unknown` (an MCP server still starting, an index still building, a
# first check not done). Then prints the table, with each service as it is at that moment.
# Status 1 when a service never answered (it is listed as "not answering").
service_table() {
  local bin="$1" dir="$2" seconds="${3:-180}" file name port services=()
  for file in "$dir"/*.yaml; do
    name="$(basename "$file" .yaml)"
    [ "$name" != services ] || continue
    port="$("$bin" config get "$file" service.port 2>/dev/null)" || continue
    services+=("$name=$port")
  done
  python3 - "$seconds" "${services[@]}" <<'PY'
import json, sys, time, urllib.error, urllib.request

def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:  # 503 unavailable still carries the envelope
        return json.load(e)
    except Exception:
        return None

def report(health):
    if health is None:
        return None
    data = health.get("data")
    return data if isinstance(data, dict) else (health.get("meta") or {}).get("health", {})

def settled(rep):
    deps = (rep or {}).get("dependencies") or {}
    return rep is not None and all(d.get("status") != "unknown" for d in deps.values())

deadline = time.monotonic() + float(sys.argv[1])
services = sorted((arg.rsplit("=", 1) for arg in sys.argv[2:]), key=lambda s: int(s[1]))
reports = {}
while True:
    for name, port in services:
        if not settled(reports.get(name)):
            reports[name] = report(get(f"http://127.0.0.1:{port}/health"))
    if all(settled(reports[n]) for n, _ in services) or time.monotonic() > deadline:
        break
    time.sleep(0.2)

rows, missing, first = [], False, None
for name, port in services:
    url = f"http://127.0.0.1:{port}"
    rep = report(get(url + "/health"))
    if rep is None:
        rows.append((name, url, "not answering", "-"))
        missing = True
        continue
    tools = get(url + "/tools")
    listed = (tools or {}).get("data") or {}
    count = len(listed.get("tools", [])) if isinstance(listed, dict) else 0
    rows.append((name, url, rep.get("status", "?"), str(count)))
    if first is None or (rep.get("status") == "healthy" and rows[first][2] != "healthy"):
        first = len(rows) - 1
header = ("SERVICE", "URL", "STATE", "TOOLS")
widths = [max(len(r[i]) for r in rows + [header]) for i in range(4)]
print()
for r in [header] + rows:
    print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
if first is not None:
    url = rows[first][1]
    print(f"\nTry:\n  curl -s {url}/tools     # the tools and their schemas\n"
          f"  curl -s {url}/health    # the service and each dependency\n"
          f"  {url}/docs is Swagger UI; {url}/mcp serves MCP clients\n"
          f"  {url}/status shows how the service is doing, in a browser\n")
sys.exit(1 if missing else 0)
PY
}
