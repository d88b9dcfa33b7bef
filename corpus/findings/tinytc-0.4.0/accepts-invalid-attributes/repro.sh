#!/usr/bin/env bash
# checks almost nothing about parameter and function attributes
# tinytc 0.4.0: accepts an invalid program. Usage: ./repro.sh [PATH-TO-TINYTC] [--device NAME]
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
  echo "expected: an error (an invalid program); actual: exit 0 (the bug)"; exit 1
fi
if [ $status -ge 124 ]; then
  echo "expected: an error message; actual: exit status $status (a crash or timeout)"; exit 1
fi
# a fix names the place in the kernel (kernel.tl:LINE.COL, or <stdin>:LINE.COL)
if ! grep -Eq '(kernel\.tl|<stdin>):[1-9][0-9]*\.[0-9]' "$tmp/err" "$tmp/out"; then
  echo "expected: an error at a place in kernel.tl; actual: exit status $status without one"
  echo "(an internal error: the bug)"
  exit 1
fi
echo "expected: an error (an invalid program); actual: exit status $status, at a place (fixed)"
exit 0
