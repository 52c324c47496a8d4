-- wrk script for the MCP benchmark (scripts/perf/mcp-peers.sh): POSTs JSON-RPC `tools/call`
-- of $MCP_TOOL (default `echo`) with a distinct id per request (the thread's number times a
-- billion plus a counter) in the Streamable HTTP session $MCP_SESSION (none: a stateless
-- 2026-07-28 request), protocol version $MCP_VERSION, and checks every answer: a 200 whose body
-- (JSON, or an SSE event) holds the echoed text and no error. It prints report.lua's JSON line:
-- requests, requests/s, latency percentiles in ms, socket errors and "bad", the answers that
-- failed the check.
local session = os.getenv("MCP_SESSION") or ""
local version = os.getenv("MCP_VERSION") or "2025-11-25"
local tool = os.getenv("MCP_TOOL") or "echo"
local message = os.getenv("MCP_MESSAGE") or "bench"
local expect = "Echo: " .. message

-- The JSON line and the count of bad answers over every thread are report.lua's (run from
-- the repository's root, as the scripts do).
dofile("scripts/perf/report.lua")
local report_setup = setup
local started = 0
function setup(thread)
  started = started + 1
  thread:set("number", started)
  report_setup(thread)
end

local counter = 0
function init(args)
  counter = number * 1000000000
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  wrk.headers["MCP-Protocol-Version"] = version
  if session ~= "" then
    wrk.headers["Mcp-Session-Id"] = session
  else
    -- 2026-07-28 names the method and tool in headers too (SEP-2243).
    wrk.headers["Mcp-Method"] = "tools/call"
    wrk.headers["Mcp-Name"] = tool
  end
end

function request()
  counter = counter + 1
  local meta = ""
  if session == "" then
    -- 2026-07-28: every request says its version and client (SEP-2575).
    meta = string.format(
      ',"_meta":{"io.modelcontextprotocol/protocolVersion":"%s","io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}',
      version)
  end
  local body = string.format(
    '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":{"message":"%s"}%s}}',
    counter, tool, message, meta)
  return wrk.format(nil, nil, nil, body)
end

function response(status, headers, body)
  if status ~= 200 or not string.find(body, expect, 1, true)
    or string.find(body, '"error":', 1, true) or string.find(body, '"isError":true', 1, true) then
    bad = bad + 1
    if bad <= 3 then
      io.stderr:write(string.format("mcp-call.lua: bad answer %d: %s\n", status, string.sub(body, 1, 300)))
    end
  end
end
