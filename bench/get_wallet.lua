-- wrk script: GET /v1/virtual-accounts/{id} over random wallets of the caller.
-- Environment: KOBO_KEY, KOBO_WALLETS (comma-separated publicIds), KOBO_BENCH_DIR.
dofile(os.getenv("KOBO_BENCH_DIR") .. "/wrk_report.lua")
local key = os.getenv("KOBO_KEY")
local requests = {}
for w in string.gmatch(os.getenv("KOBO_WALLETS"), "[^,]+") do
  requests[#requests + 1] = wrk.format("GET", "/v1/virtual-accounts/" .. w, {["x-service-key"] = key})
end

function init(args)
  math.randomseed(os.time())
end

function request()
  return requests[math.random(#requests)]
end
