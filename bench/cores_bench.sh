#!/usr/bin/env bash
# The server on a given set of cores, the load generator on others: how far the views trail the
# writer after a full-speed transfer run, and whether GETs keep their rate right after it (the
# scaling row of bench/README.md; run it twice, on 2 cores and on 12, with the same binary).
#   1. `kobo serve` pinned to KOBO_CPUS (its HTTP threads and projector lanes follow the cores it
#      may use), 100 funded wallets in BUSINESSES businesses (default 1; more spread them over the
#      log's partitions, PARTITIONS of them, default 6)
#   2. GETs of one wallet for GET_SECONDS (default 10) before the load: the rate at rest
#   3. wallet transfers at full speed for SECONDS (default 30), CONNECTIONS connections (default
#      256), wrk's threads one per load core
#   4. at once: one more transfer, then a GET of its wallet sending the transfer's Kobo-Position
#      token (docs/architecture.md, position tokens): the read waits until the views hold the
#      transfer, so its wait is how far the views trailed the writer when the load ended
#   5. at once: GETs for GET_SECONDS again, to compare with the rate at rest, and as many more
#      windows of GET_SECONDS as GET_AFTER_WINDOWS asks (default 1: none more)
# Prints `RESULT cores=... behind_ms=... get_before_rps=... get_after_rps=...` and the server's
# CPU per transfer by thread over the transfer run and its catch-up (bench/thread_cpu.py).
#
#   bench/cores_bench.sh BUILD_DIR KOBO_CPUS LOAD_CPUS [SECONDS]
#   e.g. bench/cores_bench.sh build-bench 0-11 12-15 30
set -euo pipefail
build=$1 kobo_cpus=$2 load_cpus=$3 seconds=${4:-30}
here=$(cd "$(dirname "$0")" && pwd)
get_seconds=${GET_SECONDS:-10}
connections=${CONNECTIONS:-256}
businesses=${BUSINESSES:-1}
partitions=${PARTITIONS:-6}
cores=$(taskset -c "$kobo_cpus" nproc)
load_threads=$(taskset -c "$load_cpus" nproc)
data=$(mktemp -d "${TMPDIR:-/tmp}/kobo-cores.XXXXXX")
load_front=(taskset -c "$load_cpus")
load() { "${load_front[@]}" "$@"; }
# A read with a token waits for the views up to --read-wait-ms: long enough for any lag measured.
serve_flags=(--partitions "$partitions" --read-wait-ms 60000)
in_front=(taskset -c "$kobo_cpus")
source "$here/bench_server.sh"
serve
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
funded_wallets "$businesses" "$partitions" load

# The GETs name wallets of one business, with its key.
IFS=';' read -r first _ <<<"$KOBO_WALLETS"
get_key=$KOBO_KEY get_wallets=$first
if [[ $first == *:* ]]; then get_key=${first%%:*} get_wallets=${first#*:}; fi
gets() { KOBO_KEY=$get_key KOBO_WALLETS=$get_wallets run_wrk get_wallet.lua "$get_seconds" "$load_threads" 64; }

before=$(gets)
python3 "$here/thread_cpu.py" "$pid" >"$data/cpu0"
r=$(run_wrk transfer.lua "$seconds" "$load_threads")
# Step 4: a transfer, then a read that waits for it (Server-Timing: kobo-position;dur=<ms>).
behind=$(load python3 - "$url" "$get_key" "$get_wallets" <<'EOF'
import json, re, sys, time, urllib.error, urllib.request
url, key, wallets = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
body = {"source": wallets[0], "sourceType": "VirtualAccount", "destination": wallets[1],
        "destinationType": "VirtualAccount", "amount": 10000, "currency": "NGN",
        "narration": "probe", "reference": f"probe-{time.time_ns()}"}
req = urllib.request.Request(url + "/v1/transactions/transfer", data=json.dumps(body).encode(), method="POST",
                             headers={"x-service-key": key, "content-type": "application/json"})
try:
    token = urllib.request.urlopen(req).headers["Kobo-Position"]
except urllib.error.HTTPError as e:
    sys.exit(f"the probe's transfer: {e.code} {e.read().decode()}")
started = time.monotonic()
req = urllib.request.Request(url + "/v1/virtual-accounts/" + wallets[1],
                             headers={"x-service-key": key, "Kobo-Position": token})
answer = urllib.request.urlopen(req, timeout=90)
waited = float(re.search(r"kobo-position;dur=([0-9.]+)", answer.headers["Server-Timing"]).group(1))
print(f"{waited:.1f} {1000 * (time.monotonic() - started):.1f}")
EOF
)
transfers=$(python3 -c "print(round($(field "$r" rps) * $seconds))")
cpu=$(python3 "$here/thread_cpu.py" "$pid" "$data/cpu0" "$transfers")
files_after_run=$(find "$data/views" -name '*.sst' | wc -l)
after=$(gets)
# Later windows (GET_AFTER_WINDOWS, default 1): whether a rate lower than at rest comes back.
later=
for _ in $(seq 2 "${GET_AFTER_WINDOWS:-1}"); do later+="${later:+,}$(printf '%.0f' "$(field "$(gets)" rps)")"; done
files_at_end=$(find "$data/views" -name '*.sst' | wc -l)
read -r behind_ms read_ms <<<"$behind"
echo "$cores cores: $(field "$r" rps) transfers/s (p99 $(ms "$(field "$r" p99_us)") ms, non-2xx $(field "$r" non2xx));" \
     "views behind at the end: ${behind_ms} ms (the read took ${read_ms} ms);" \
     "GETs $(field "$before" rps)/s before, $(field "$after" rps)/s right after${later:+ (then $later)};" \
     "the views' files $files_after_run after the run, $files_at_end at the end; $businesses business(es)" >&2
echo "CPU per transfer, by thread (us): $cpu" >&2
echo "RESULT cores=$cores businesses=$businesses tps=$(printf '%.0f' "$(field "$r" rps)")" \
     "p99_ms=$(ms "$(field "$r" p99_us)") non2xx=$(field "$r" non2xx) behind_ms=$behind_ms" \
     "get_before_rps=$(printf '%.0f' "$(field "$before" rps)") get_after_rps=$(printf '%.0f' "$(field "$after" rps)")${later:+ get_later_rps=$later}" \
     "views_files_after_run=$files_after_run views_files_at_end=$files_at_end $cpu"
