-- wrk script for the flapping-upstream benchmark (scripts/perf/resilience.sh) and the cost of
-- the chain (scripts/perf/resilience-overhead.sh): POSTs /call-tool for $WRK_TOOL (default
-- `lookup`) with its argument $WRK_ARGUMENT (default `key`) set to a text of its own per
-- request (thread number and counter, so no cache or coalescing can answer it: every call is
-- a real call), and sorts every answer:
--   ok      the envelope says "success":true, status 200;
--   failed  the envelope says "success":false, status not 2xx: an error the caller saw, tallied
--           by code (SERVICE_UNAVAILABLE, EXECUTION_ERROR, TIMEOUT, other);
--   bad     anything else (no envelope, or an envelope whose status disagrees): the script
--           fails on any.
-- It prints one JSON line: requests, requests/s, latency percentiles in ms (of every answer,
-- failed ones included), socket errors (connect, read, write, timeout: non-2xx answers are
-- not counted there, they are `failed`), ok, failed, the codes, bad.
local tool = os.getenv("WRK_TOOL") or "lookup"
local argument = os.getenv("WRK_ARGUMENT") or "key"

local threads = {}
local started = 0
function setup(thread)
  started = started + 1
  thread:set("number", started)
  table.insert(threads, thread)
end

-- Globals: done() reads them from each thread (thread:get).
ok, failed, bad = 0, 0, 0
unavailable, execution, timed_out, other = 0, 0, 0, 0

local counter = 0
function init(args)
  counter = number * 1000000000
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  counter = counter + 1
  return wrk.format(nil, "/call-tool", nil,
    string.format('{"tool":"%s","arguments":{"%s":"k%d"}}', tool, argument, counter))
end

function response(status, headers, body)
  if string.find(body, '"success":true', 1, true) and status == 200 then
    ok = ok + 1
  elseif string.find(body, '"success":false', 1, true) and (status < 200 or status > 299) then
    failed = failed + 1
    if string.find(body, '"code":"SERVICE_UNAVAILABLE"', 1, true) then
      unavailable = unavailable + 1
    elseif string.find(body, '"code":"EXECUTION_ERROR"', 1, true) then
      execution = execution + 1
    elseif string.find(body, '"code":"TIMEOUT"', 1, true) then
      timed_out = timed_out + 1
    else
      other = other + 1
    end
  else
    bad = bad + 1
    if bad <= 3 then
      io.stderr:write(string.format("resilience.lua: bad answer %d: %s\n", status, string.sub(body, 1, 300)))
    end
  end
end

function done(summary, latency, requests)
  local sum = { ok = 0, failed = 0, bad = 0, unavailable = 0, execution = 0, timed_out = 0, other = 0 }
  for _, thread in ipairs(threads) do
    for name, _ in pairs(sum) do
      sum[name] = sum[name] + (thread:get(name) or 0)
    end
  end
  local seconds = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"rps":%.0f,"p50_ms":%.3f,"p95_ms":%.3f,"p99_ms":%.3f,"max_ms":%.3f,"errors":%d,'
      .. '"ok":%d,"failed":%d,"codes":{"SERVICE_UNAVAILABLE":%d,"EXECUTION_ERROR":%d,"TIMEOUT":%d,"other":%d},"bad":%d}\n',
    summary.requests, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(95) / 1000,
    latency:percentile(99) / 1000, latency.max / 1000,
    e.connect + e.read + e.write + e.timeout,
    sum.ok, sum.failed, sum.unavailable, sum.execution, sum.timed_out, sum.other, sum.bad))
end
