-- wrk script for scripts/perf.sh: POSTs $WRK_BODY as JSON when set (else the request is a GET),
-- and prints one JSON line: requests, requests/s, latency percentiles in ms, errors (socket
-- errors and non-2xx answers), and, when $WRK_EXPECT is set, "bad": answers whose body does not
-- hold that text.
local body = os.getenv("WRK_BODY")
if body ~= nil and body ~= "" then
  wrk.method = "POST"
  wrk.body = body
  wrk.headers["Content-Type"] = "application/json"
end

local expect = os.getenv("WRK_EXPECT")
local threads = {}
function setup(thread)
  table.insert(threads, thread)
end
bad = 0  -- a global: done() reads it from each thread (thread:get)
if expect ~= nil and expect ~= "" then
  function response(status, headers, body)
    if not string.find(body, expect, 1, true) then
      bad = bad + 1
    end
  end
end

function done(summary, latency, requests)
  local failed = 0
  for _, thread in ipairs(threads) do
    failed = failed + (thread:get("bad") or 0)
  end
  local seconds = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"rps":%.0f,"p50_ms":%.3f,"p95_ms":%.3f,"p99_ms":%.3f,"max_ms":%.3f,"errors":%d,"bad":%d}\n',
    summary.requests, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(95) / 1000,
    latency:percentile(99) / 1000, latency.max / 1000,
    e.connect + e.read + e.write + e.status + e.timeout, failed))
end
