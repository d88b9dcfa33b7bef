#!/usr/bin/env bash
# a `cast` of a cooperative-matrix `constant` is rejected when compiled ("Expected coopmatrix type")
# tinytc 0.4.0: rejects a valid program. Usage: ./repro.sh [PATH-TO-TINYTC] [--device NAME]
# Exit status: 1 while the bug is there, 0 once it is fixed, 2 when nothing could be tested.
# Needs bash, timeout (coreutils).
set -u
here=$(cd "$(dirname "$0")" && pwd)
compiler=tinytc
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then compiler=$1; shift; fi
command -v "$compiler" > /dev/null || { echo "repro.sh: no compiler '$compiler'" >&2; exit 2; }
tool=$compiler
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
cd "$here"
limit=${REPRO_TIMEOUT:-60}
echo "+ tinytc kernel.tl > /dev/null"
timeout -k 5 "$limit" "$tool" kernel.tl > "$tmp/out" 2> "$tmp/err"
status=$?
head -c 2000 "$tmp/err"
if [ $status -eq 126 ] || [ $status -eq 127 ]; then
  echo "repro.sh: cannot run $tool (exit status $status): nothing tested" >&2; exit 2
fi
if [ $status -eq 0 ]; then
  echo "expected: exit 0 (a valid program); actual: exit 0 (fixed)"; exit 0
fi
echo "expected: exit 0 (a valid program); actual: exit status $status (the bug)"
exit 1
