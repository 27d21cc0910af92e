#!/usr/bin/env bash
# clang-tidy 14 (Debian's) with the curated checks of .clang-tidy over every source of the
# service (its libraries and the executable; the tests, fuzz targets and benchmarks are not
# checked), using the compile commands of BUILD_DIR. Prints each finding and a summary line;
# exits 1 on any finding (.clang-tidy makes every warning an error).
#
# In a tree of unity batches (KOBO_UNITY, CMakeLists.txt) a source is compiled only inside its
# batch, so the batch is what is checked: its sources are included files there, which
# .clang-tidy's HeaderFilterRegex names with the headers. Most of a file's time is clang-tidy 14
# matching the system headers' declarations (Beast, Asio, RocksDB): once per batch rather than
# once per source.
#
# The clang static analyzer (clang-analyzer-*) is most of the time at its own budget (50 s of
# projection/views.cc's 61; 9.5 min for the whole run on 2 cores). TIDY_ANALYZER_NODES (default
# 40000, what CI runs) bounds the nodes it explores per function, with its default inlining (6 min
# for the whole run, no less than without the analyzer); `deep` is its own budget (225,000). Its
# `mode=shallow` is not used: inlining less, it reports Boost.Asio's coroutine machinery
# (awaitable.hpp) as dereferencing uninitialized pointers.
#
#   [TIDY_ANALYZER_NODES=N|deep] tools/tidy.sh BUILD_DIR [FILE...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: tools/tidy.sh BUILD_DIR [FILE...]}
shift
cd "$root"
if [ $# -gt 0 ]; then sources=("$@"); else mapfile -t sources < <(git ls-files '*.cc' | grep -Ev '^(tests|fuzz|bench)/'); fi
# Each source, or the unity batch that compiles it.
mapfile -t batches < <(sed -n 's|^ *"file": "\(.*/Unity/unity_[0-9]*_cxx\.cxx\)",*$|\1|p' "$build/compile_commands.json")
files=()
for s in "${sources[@]}"; do
  if grep -q "\"file\": \"$root/$s\"" "$build/compile_commands.json"; then
    files+=("$s")
  elif [ ${#batches[@]} -gt 0 ] && batch=$(grep -l "^#include \"$root/$s\"$" "${batches[@]}" | head -n 1) &&
    [ -n "$batch" ]; then
    files+=("$batch")
  else
    echo "tools/tidy.sh: $s has no compile command in $build" >&2
    exit 2
  fi
done
mapfile -t files < <(printf '%s\n' "${files[@]}" | awk '!seen[$0]++')
nodes=${TIDY_ANALYZER_NODES:-40000}
case "$nodes" in
  deep) analyzer=() ;;
  *[!0-9]* | '' | 0*) echo "tools/tidy.sh: TIDY_ANALYZER_NODES is a count or deep, not '$nodes'" >&2; exit 2 ;;
  *) analyzer=(-Xclang -analyzer-config -Xclang "max-nodes=$nodes") ;;
esac
# Reserved identifiers (.clang-tidy says why these rather than bugprone-reserved-identifier).
extra=(--extra-arg=-Wno-unknown-warning-option --extra-arg=-Wreserved-identifier
  --extra-arg=-Wreserved-macro-identifier)
for a in "${analyzer[@]}"; do extra+=("--extra-arg=$a"); done
# A batch includes its sources, which is what bugprone-suspicious-include looks for; a tree of one
# compile per source (make tidy's default) still checks them for it.
if [ ${#batches[@]} -gt 0 ]; then extra+=(--checks=-bugprone-suspicious-include); fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# One clang-tidy per file, as many at once as there are cores; each file's findings kept apart.
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -I{} sh -c \
  'build=$0 out=$1 file=$2; shift 2; clang-tidy-14 -p "$build" --quiet "$@" "$file" >"$out/$(echo "$file" | tr / _).log" 2>&1 || echo "$file" >>"$out/failed"' \
  "$build" "$out" {} "${extra[@]}"
if [ -s "$out/failed" ]; then
  for f in $(sort "$out/failed"); do grep -v ' warnings\? generated\.$' "$out/$(echo "$f" | tr / _).log"; done
  echo "tidy: findings in $(wc -l <"$out/failed") of ${#files[@]} files" >&2
  exit 1
fi
echo "tidy: ${#files[@]} files, no findings"
