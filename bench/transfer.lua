-- wrk script: wallet transfers between pre-funded wallets, each with a unique reference.
-- Environment: KOBO_KEY (test secret key), KOBO_WALLETS (comma-separated wallet publicIds; or,
-- for several businesses, "key:id,id;key:id,id": each transfer is between two wallets of one
-- business, chosen at random, with its key), KOBO_BENCH_DIR (this folder), and optionally
-- KOBO_RATE: transfers a second in all, paced to a schedule (a lower load; see http_bench.sh),
-- with KOBO_WRK_THREADS the wrk threads that share it (bench_server.sh's run_wrk sets it).
dofile(os.getenv("KOBO_BENCH_DIR") .. "/wrk_report.lua")
local groups = {}  -- {key = ..., wallets = {...}} per business
for group in string.gmatch(os.getenv("KOBO_WALLETS"), "[^;]+") do
  local key, list = string.match(group, "^([^:]+):(.*)$")
  if key == nil then key, list = os.getenv("KOBO_KEY"), group end
  local wallets = {}
  for w in string.gmatch(list, "[^,]+") do wallets[#wallets + 1] = w end
  groups[#groups + 1] = {key = key, wallets = wallets}
end
local rate = tonumber(os.getenv("KOBO_RATE") or "0")
local counter = 0
local threads = {}
-- `thread_id` is a global that setup() gives each thread (a local would shadow it).

function setup(thread)
  thread:set("thread_id", #threads)
  threads[#threads + 1] = thread
end

function init(args)
  math.randomseed(thread_id * 7919 + os.time())
  run_id = os.time()
end

-- A paced run keeps a schedule: each request takes the next slot of its thread's share of the
-- rate, and its connection waits until then. The rate holds whatever the answers' latency (a
-- wait after each answer, as before, made a rate that fell as latency rose, and a run paced to
-- 80 % of the peak reached 69 to 77 %); slots that passed while every connection waited for an
-- answer are taken at once, so that the rate is the schedule's. wrk waits whole milliseconds: a
-- wait is its floor, and the next slots stay where the schedule puts them.
if rate > 0 then
  local ffi = require("ffi")
  ffi.cdef [[
    struct kobo_timespec { long tv_sec; long tv_nsec; };
    int clock_gettime(int clock, struct kobo_timespec* t);
  ]]
  local now_ts = ffi.new("struct kobo_timespec")
  local function now_ms()
    ffi.C.clock_gettime(1, now_ts)  -- CLOCK_MONOTONIC
    return tonumber(now_ts.tv_sec) * 1000 + tonumber(now_ts.tv_nsec) / 1e6
  end
  local interval = 1000 * tonumber(os.getenv("KOBO_WRK_THREADS") or "1") / rate
  local next_slot = nil
  function delay()
    local now = now_ms()
    local slot = next_slot or now
    next_slot = slot + interval
    return math.max(0, math.floor(slot - now))
  end
end

function request()
  counter = counter + 1
  local group = groups[math.random(#groups)]
  local wallets = group.wallets
  local src = wallets[math.random(#wallets)]
  local dst = src
  while dst == src do dst = wallets[math.random(#wallets)] end
  local body = string.format(
    '{"source":"%s","sourceType":"VirtualAccount","destination":"%s","destinationType":"VirtualAccount",' ..
    '"amount":10000,"currency":"NGN","narration":"bench","reference":"b-%d-%d-%d"}',
    src, dst, thread_id, run_id, counter)
  return wrk.format("POST", "/v1/transactions/transfer",
                    {["x-service-key"] = group.key, ["content-type"] = "application/json"}, body)
end
