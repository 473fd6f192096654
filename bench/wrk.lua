-- Load script of make bench-full (bench/full.py) for wrk: every connection cycles over
-- WRK_PATHS (space separated); thread n sends the cookies WRK_COOKIE_<n> (a signed-in member's
-- session) when set, and stops after WRK_MAX_REQUESTS responses (per thread; wrk's -d bounds the
-- time); with WRK_THINK_MS a connection waits that long between its requests (a visitor reading the
-- page; bench/surge.py), without it none. At the end it prints requests, seconds, errors and latency
-- percentiles (ms).
local paths = {}
for p in string.gmatch(os.getenv("WRK_PATHS") or "/", "%S+") do table.insert(paths, p) end
local threads = 0

function setup(thread)
  thread:set("n", threads)
  thread:set("cookie", os.getenv("WRK_COOKIE_" .. threads) or "")
  threads = threads + 1
end

function init(args)
  i = n
  answered = 0
  most = tonumber(os.getenv("WRK_MAX_REQUESTS") or "") or math.huge
end

function response(status, headers, body)
  answered = answered + 1
  if answered >= most then wrk.thread:stop() end
end

local think = tonumber(os.getenv("WRK_THINK_MS") or "")
if think then
  function delay()
    return think
  end
end

function request()
  i = i + 1
  local headers = {}
  if cookie ~= "" then headers["Cookie"] = cookie end
  return wrk.format("GET", paths[(i % #paths) + 1], headers)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("requests %d\nseconds %.3f\nerrors %d\nnon2xx %d\n", summary.requests,
                         summary.duration / 1e6, e.connect + e.read + e.write + e.timeout, e.status))
  for _, p in ipairs({50, 95, 99}) do
    io.write(string.format("p%d %.1f\n", p, latency:percentile(p) / 1000))
  end
end
