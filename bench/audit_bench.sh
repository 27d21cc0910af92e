#!/usr/bin/env bash
# `kobo audit` against history (guarantee 9; docs/architecture.md section 5a, "The audit"): for
# each size, a log of that many wallet transfers among 5,000 wallets (kobo_make_log: 10 businesses
# of 500), then `kobo audit` of it, every check of the log (kobo_make_log writes no views, so none
# are compared), with its scratch index beside the log. Measures the audit's peak resident memory
# (the kernel's maximum RSS of the process, the figure `/usr/bin/time -v` prints), its wall time
# and its CPU time (user + system, every thread: RocksDB's compactions included). Prints
# `RESULT size=N events=… audit_rss_mib=… audit_s=… audit_cpu_s=…` per size; run.sh runs one size
# per call and makes the rows.
#
#   bench/audit_bench.sh [BUILD_DIR] [SIZES]      e.g. bench/audit_bench.sh build 1000000,5000000
#
# KEEP=1 keeps the data dirs; KOBO=PATH audits with another kobo binary (an older build, to compare
# on the same logs: KEEP=1 once, then DIR=PATH for the kept data dir of one size). Needs kobo and
# bench/kobo_make_log of BUILD_DIR.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
sizes=${2:-1000000,5000000}
kobo=${KOBO:-$build/kobo}
root=$(mktemp -d "${TMPDIR:-/tmp}/kobo-audit-bench-XXXXXX")
trap '[ "${KEEP:-0}" = 1 ] && echo "kept $root" >&2 || rm -rf "$root"' EXIT

for n in ${sizes//,/ }; do
  dir=${DIR:-$root/$n}
  if [ -z "${DIR:-}" ]; then
    echo "== $n wallet transfers among 5,000 wallets (fsync off)" >&2
    "$build/bench/kobo_make_log" --data-dir "$dir" --events "$n" --businesses 10 --wallets 500 >&2
  fi
  mkdir -p "$root/scratch"
  echo "== kobo audit of $dir" >&2
  # The rusage of the waited-for child: ru_maxrss in KiB, as /usr/bin/time -v reports it.
  line=$(python3 - "$kobo" audit --data-dir "$dir" --scratch-dir "$root/scratch" <<'PY'
import re, resource, subprocess, sys, time
started = time.monotonic()
run = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, text=True)
wall = time.monotonic() - started
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stderr.write(run.stdout)
if run.returncode != 0:
    sys.exit(f"kobo audit exited {run.returncode}")
events = re.search(r"events:\s+([\d,]+)", run.stdout).group(1).replace(",", "")
print(f"events={events} audit_rss_mib={usage.ru_maxrss / 1024:.0f} audit_s={wall:.1f} "
      f"audit_cpu_s={usage.ru_utime + usage.ru_stime:.1f}")
PY
  )
  echo "RESULT size=$n $line"
  [ "${KEEP:-0}" = 1 ] || [ -n "${DIR:-}" ] || rm -rf "$dir"
done
