#!/usr/bin/env bash
# Installs the Debian packages Kobo Ledger builds and tests with, only those missing.
# Idempotent: a machine that has them all returns at once without touching apt.
# Usage: tools/install-deps.sh [build|kafka|bench|clang|format|tidy]...   (default: build)
set -euo pipefail

build_pkgs=(
  g++ cmake ninja-build make pkg-config lld
  libboost1.81-dev libboost-url1.81-dev
  librocksdb-dev librdkafka-dev nlohmann-json3-dev libsimdjson-dev libssl-dev
  libgtest-dev libgmock-dev libcli11-dev libgoogle-perftools-dev
  python3 python3-jsonschema python3-yaml python3-venv curl
)
kafka_pkgs=(default-jre-headless maven kcat)
bench_pkgs=(libbenchmark-dev wrk nginx-light postgresql-15)
# make asan, make tsan and make fuzz: Debian's clang, and libclang-rt for libFuzzer and the sanitizer runtimes.
clang_pkgs=(clang libclang-rt-14-dev)
# make format-check: the formatter .clang-format is written for.
format_pkgs=(clang-format-14)
# make tidy: the clang-tidy .clang-tidy's curated checks are chosen for.
tidy_pkgs=(clang-tidy-14)

wanted=()
for group in "${@:-build}"; do
  case "$group" in
    build) wanted+=("${build_pkgs[@]}") ;;
    kafka) wanted+=("${kafka_pkgs[@]}") ;;
    bench) wanted+=("${bench_pkgs[@]}") ;;
    clang) wanted+=("${clang_pkgs[@]}") ;;
    format) wanted+=("${format_pkgs[@]}") ;;
    tidy) wanted+=("${tidy_pkgs[@]}") ;;
    *) echo "install-deps: unknown group '$group' (build, kafka, bench, clang, format, tidy)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
