# shellcheck shell=bash
# Owns the status-page command: one HTML page that links every service's status page (GET
# /status) with its port and its health read now, written beside the logs and opened in the
# browser. The page itself is a file: nothing in it is fetched, so it says the health as it was
# when written (each service's own page updates live). Sourced by services-manager.sh; defines
# functions only.
# shellcheck disable=SC2154 # the settings, S_*, targets, log_dir are services-manager.sh's; HP_* probe.sh's

html_escape() { # text for an HTML text node or a double-quoted attribute
  local s="${1//&/&amp;}"
  s="${s//</&lt;}"
  s="${s//>/&gt;}"
  printf '%s' "${s//\"/&quot;}"
}

# The command that opens a file in the browser here: open (macOS), else xdg-open; none: empty.
page_opener() {
  if [ "$(uname -s)" = Darwin ] && command -v open >/dev/null 2>&1; then
    echo open
  elif command -v xdg-open >/dev/null 2>&1; then
    echo xdg-open
  fi
}

# status-page [SERVICE]: writes <log folder>/status.html and opens it (not with --no-open);
# prints its path. Status 0 once written, whatever the services' health: the page says it.
cmd_status_page() {
  local i name url health label rows="" page opener written
  probe_all "${targets[@]}"
  for i in "${targets[@]}"; do
    name="${S_NAME[$i]}"
    url="${S_URL[$i]}"
    probe_read "$i"
    health="$HP_HEALTH"
    if [ "$HP_CODE" != 000 ] && [ -n "$HP_SERVICE" ] && [ "$HP_SERVICE" != "$name" ]; then
      health=other
    fi
    case "$health" in
      healthy) label="healthy" ;;
      degraded) label="degraded" ;;
      unavailable) label="unavailable (running, no tool can run)" ;;
      down) label="down (no answer)" ;;
      other) label="another service answers on this port" ;;
      *) label="$health" ;;
    esac
    rows="$rows<tr><th scope=\"row\">$(html_escape "$name")</th><td class=\"num\">${S_PORT[$i]}</td>"
    rows="$rows<td><span class=\"health\" data-health=\"$(html_escape "$health")\">$(html_escape "$label")</span></td>"
    rows="$rows<td><a href=\"$(html_escape "$url/status")\">$(html_escape "$url/status")</a></td>"
    rows="$rows<td><a href=\"$(html_escape "$url/health")\">/health</a></td></tr>"$'\n'
  done
  mkdir -p "$log_dir" || die "cannot create $log_dir for the page"
  page="$log_dir/status.html"
  written="$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  cat >"$page.tmp" <<EOF
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mcp-http-gateway services</title>
<style>
body { font: 16px/1.5 system-ui, sans-serif; margin: 1.5rem; color: #1b1f24; }
table { border-collapse: collapse; }
th, td { text-align: left; padding: 0.4rem 0.8rem; border-bottom: 1px solid #d0d7de; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.health { font-weight: 600; }
.health[data-health="healthy"] { color: #116329; }
.health[data-health="degraded"], .health[data-health="unavailable"], .health[data-health="starting"] { color: #7d4e00; }
.health[data-health="down"], .health[data-health="other"], .health[data-health="unhealthy"], .health[data-health="stopping"] { color: #a40e26; }
a { color: #0550ae; }
</style>
</head>
<body>
<main>
<h1>mcp-http-gateway services</h1>
<p>Health as read at $(html_escape "$written") by services-manager.sh (mode: $(html_escape "$mode")). Each service's own status page updates live; run <code>services-manager.sh status-page</code> again to read the health anew.</p>
<table>
<caption>Every service of the registry ($(html_escape "$registry"))</caption>
<thead><tr><th scope="col">Service</th><th scope="col">Port</th><th scope="col">Health</th><th scope="col">Status page</th><th scope="col">JSON</th></tr></thead>
<tbody>
$rows</tbody>
</table>
</main>
</body>
</html>
EOF
  mv "$page.tmp" "$page"
  echo "$page"
  [ "$open_page" -eq 1 ] || return 0
  opener="$(page_opener)"
  if [ -z "$opener" ]; then
    echo "no open or xdg-open here: open $page in a browser" >&2
    return 0
  fi
  "$opener" "$page" >/dev/null 2>&1 || echo "$opener $page failed: open it in a browser" >&2
}
