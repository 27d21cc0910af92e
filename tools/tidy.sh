#!/usr/bin/env bash
# clang-tidy 14 (Debian's) with the curated checks of .clang-tidy over every source of the
# service (its libraries and the executable; the tests, fuzz targets and benchmarks are not
# checked), using the compile commands of BUILD_DIR. Prints each finding and a summary line;
# exits 1 on any finding (.clang-tidy makes every warning an error).
#
#   tools/tidy.sh BUILD_DIR [FILE...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: tools/tidy.sh BUILD_DIR [FILE...]}
shift
cd "$root"
if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(git ls-files '*.cc' | grep -Ev '^(tests|fuzz|bench)/'); fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# One clang-tidy per file, as many at once as there are cores; each file's findings kept apart.
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -I{} sh -c \
  'clang-tidy-14 -p "$0" --quiet --extra-arg=-Wno-unknown-warning-option "$1" >"$2/$(echo "$1" | tr / _).log" 2>&1 || echo "$1" >>"$2/failed"' \
  "$build" {} "$out"
if [ -s "$out/failed" ]; then
  for f in $(sort "$out/failed"); do grep -v ' warnings\? generated\.$' "$out/$(echo "$f" | tr / _).log"; done
  echo "tidy: findings in $(wc -l <"$out/failed") of ${#files[@]} files" >&2
  exit 1
fi
echo "tidy: ${#files[@]} files, no findings"
