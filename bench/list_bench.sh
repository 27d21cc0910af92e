#!/usr/bin/env bash
# Lists at a million transaction records in one business: `kobo_make_log` writes wallet transfers
# between the wallets of one business until its transaction list holds RECORDS records (two per
# transfer; default 1,000,000), `kobo replay` builds the views, and `kobo_restart_bench lists`
# times GET /v1/transactions' read of the views (what the route renders into its answer) for every
# combination of its filters (entry, status, amount, live, a createdAt range), page 1 and page
# 10,000 of 10, three runs each. Prints `RESULT list_records=… list_p50_ms=… list_worst_ms=…`.
#
#   bench/list_bench.sh [BUILD_DIR] [RECORDS]      KEEP=1 keeps the data dir; DIR=… measures a kept one
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
records=${2:-1000000}
if [ -n "${DIR:-}" ]; then
  dir=$DIR
else
  dir=$(mktemp -d "${TMPDIR:-/tmp}/kobo-lists-XXXXXX")
  trap '[ "${KEEP:-0}" = 1 ] && echo "kept $dir" >&2 || rm -rf "$dir"' EXIT
  # Events: the business, its 20 wallets and their fundings, then one transfer (two records) each.
  "$build/bench/kobo_make_log" --data-dir "$dir" --businesses 1 --wallets 20 --events $((records / 2 + 41)) >&2
  "$build/kobo" replay --data-dir "$dir" >&2
fi
"$build/bench/kobo_restart_bench" lists --data-dir "$dir" --deep-page 10000
