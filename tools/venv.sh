#!/usr/bin/env bash
# Makes (or refreshes) the virtualenv of the test-only Python tools in .venv at the repository's
# root: Debian's python3 and venv module, the packages of tools/test-requirements.txt from PyPI.
# Idempotent and quick when nothing changed: the requirements file's hash is kept in the venv.
# Prints the venv's path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
requirements="$root/tools/test-requirements.txt"
stamp="$venv/.requirements.sha256"
want=$(sha256sum "$requirements" | cut -d' ' -f1)
# Tests that need the venv may start at once (ctest -j2): one makes it, the others wait.
mkdir -p "$root/build"
exec 9>"$root/build/.venv.lock"
flock 9
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "venv: installing $(grep -v '^#' "$requirements" | tr '\n' ' ')into $venv" >&2
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2
  echo "$want" >"$stamp"
fi
echo "$venv"
