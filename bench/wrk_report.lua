-- Shared by the wrk scripts: prints one machine-readable line after the run (microseconds).
function done(summary, latency, requests)
  local non2xx = summary.errors.status
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  io.write(string.format("WRK requests=%d seconds=%.3f rps=%.1f p50_us=%d p99_us=%d max_us=%d non2xx=%d errors=%d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), latency.max, non2xx, errors))
end
