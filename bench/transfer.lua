-- wrk script: wallet transfers between pre-funded wallets, each with a unique reference.
-- Environment: KOBO_KEY (test secret key), KOBO_WALLETS (comma-separated wallet publicIds),
-- KOBO_BENCH_DIR (this folder), and optionally KOBO_DELAY_MS: each connection waits that long
-- after an answer before its next request (a paced, lower load; see http_bench.sh).
dofile(os.getenv("KOBO_BENCH_DIR") .. "/wrk_report.lua")
local key = os.getenv("KOBO_KEY")
local wallets = {}
for w in string.gmatch(os.getenv("KOBO_WALLETS"), "[^,]+") do wallets[#wallets + 1] = w end
local pause = tonumber(os.getenv("KOBO_DELAY_MS") or "0")
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

if pause > 0 then
  function delay() return pause end
end

function request()
  counter = counter + 1
  local src = wallets[math.random(#wallets)]
  local dst = src
  while dst == src do dst = wallets[math.random(#wallets)] end
  local body = string.format(
    '{"source":"%s","sourceType":"VirtualAccount","destination":"%s","destinationType":"VirtualAccount",' ..
    '"amount":10000,"currency":"NGN","narration":"bench","reference":"b-%d-%d-%d"}',
    src, dst, thread_id, run_id, counter)
  return wrk.format("POST", "/v1/transactions/transfer",
                    {["x-service-key"] = key, ["content-type"] = "application/json"}, body)
end
