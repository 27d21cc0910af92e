#!/usr/bin/env bash
# `make bench`: prints the figures measured so far. Issue 7 grows this into the full table.
set -euo pipefail
build=${1:-build-bench}
here=$(cd "$(dirname "$0")" && pwd)
echo "machine: $(nproc) cores, $(uname -r)"
echo "== wallet transfers over HTTP (embedded log, fsync per group commit, 64 connections)"
"$here/http_transfers.sh" "$build" 10
echo
echo "== replay and audit speed on a log of a million events"
"$here/replay_speed.sh" "$build" 1000000
