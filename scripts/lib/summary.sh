# shellcheck shell=bash
# Sourced by scripts/run.sh: once every service of a config folder answers, one table of what
# runs (service, URL, state, tools) and the first commands to try. Reads each service's port
# with the gateway binary (`config get`), so there is one YAML parser.

# service_table BINARY CONFIG_DIR [SECONDS]: waits (up to SECONDS, default 180, for all) until
# each service's /health answers (any status: `unavailable` is up and talking), then prints the
# table. Status 1 when a service never answered (it is listed as "not answering").
service_table() {
  local bin="$1" dir="$2" seconds="${3:-180}" file name port services=()
  local deadline=$((SECONDS + seconds))
  for file in "$dir"/*.yaml; do
    name="$(basename "$file" .yaml)"
    [ "$name" != services ] || continue
    port="$("$bin" config get "$file" service.port 2>/dev/null)" || continue
    until [[ "$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health" 2>/dev/null)" != 000 ]]; do
      ((SECONDS <= deadline)) || break
      sleep 0.2
    done
    services+=("$name=$port")
  done
  python3 - "${services[@]}" <<'PY'
import json, sys, urllib.error, urllib.request

def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:  # 503 unavailable still carries the envelope
        return json.load(e)
    except Exception:
        return None

rows, missing, first = [], False, None
for arg in sys.argv[1:]:
    name, port = arg.rsplit("=", 1)
    url = f"http://127.0.0.1:{port}"
    health = get(url + "/health")
    if health is None:
        rows.append((name, url, "not answering", "-"))
        missing = True
        continue
    report = health["data"] if isinstance(health.get("data"), dict) else (health.get("meta") or {}).get("health", {})
    tools = get(url + "/tools")
    listed = (tools or {}).get("data") or {}
    count = len(listed.get("tools", [])) if isinstance(listed, dict) else 0
    rows.append((name, url, report.get("status", "?"), str(count)))
    if first is None or (report.get("status") == "healthy" and rows[first][2] != "healthy"):
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
          f"  {url}/docs is Swagger UI; {url}/mcp serves MCP clients\n")
sys.exit(1 if missing else 0)
PY
}
