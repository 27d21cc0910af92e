-- wrk script: wallet transfers between pre-funded wallets, each with a unique reference.
-- Environment: KOBO_KEY (test secret key), KOBO_WALLETS (comma-separated wallet publicIds; or,
-- for several businesses, "key:id,id;key:id,id": each transfer is between two wallets of one
-- business, chosen at random, with its key), KOBO_BENCH_DIR (this folder), and optionally
-- KOBO_DELAY_MS: each connection waits that long on average (a fraction allowed) after an answer
-- before its next request (a paced, lower load; see http_bench.sh).
dofile(os.getenv("KOBO_BENCH_DIR") .. "/wrk_report.lua")
local groups = {}  -- {key = ..., wallets = {...}} per business
for group in string.gmatch(os.getenv("KOBO_WALLETS"), "[^;]+") do
  local key, list = string.match(group, "^([^:]+):(.*)$")
  if key == nil then key, list = os.getenv("KOBO_KEY"), group end
  local wallets = {}
  for w in string.gmatch(list, "[^,]+") do wallets[#wallets + 1] = w end
  groups[#groups + 1] = {key = key, wallets = wallets}
end
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

-- wrk waits whole milliseconds: a fractional pause is its floor or its ceiling, at random in the
-- proportion that averages to it (at 8,000 transfers/s over 64 connections a millisecond more or
-- less per request moves the rate by a tenth).
if pause > 0 then
  local whole = math.floor(pause)
  local fraction = pause - whole
  function delay()
    if math.random() < fraction then return whole + 1 end
    return whole
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
