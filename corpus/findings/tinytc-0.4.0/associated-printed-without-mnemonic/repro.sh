#!/usr/bin/env bash
# `associated` is printed without its mnemonic (`%has = %A : bool`), so the printed program does not read back
# tinytc 0.4.0: prints IR it cannot read back. Usage: ./repro.sh [PATH-TO-TINYTC] [--device NAME]
# Exit status: 1 while the bug is there, 0 once it is fixed, 2 when nothing could be tested.
# Needs bash, timeout (coreutils).
set -u
here=$(cd "$(dirname "$0")" && pwd)
compiler=tinytc
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then compiler=$1; shift; fi
command -v "$compiler" > /dev/null || { echo "repro.sh: no compiler '$compiler'" >&2; exit 2; }
tool=$compiler
case "$compiler" in */*) tool=$(dirname "$compiler")/tinytc-opt;; *) tool=tinytc-opt;; esac
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
cd "$here"
limit=${REPRO_TIMEOUT:-60}
echo "+ tinytc-opt -p check-ir kernel.tl > printed.tl && tinytc-opt -p check-ir printed.tl"
timeout -k 5 "$limit" "$tool" -p check-ir kernel.tl > "$tmp/out" 2> "$tmp/err"
status=$?
head -c 2000 "$tmp/err"
if [ $status -eq 126 ] || [ $status -eq 127 ]; then
  echo "repro.sh: cannot run $tool (exit status $status): nothing tested" >&2; exit 2
fi
if [ $status -ne 0 ]; then
  echo "expected: the pass prints the program; actual: exit status $status"; exit 2
fi
mv "$tmp/out" "$tmp/printed.tl"
echo "+ $tool -p check-ir printed.tl   (what it printed, read back)"
timeout -k 5 "$limit" "$tool" -p check-ir "$tmp/printed.tl" > "$tmp/out" 2> "$tmp/err"
status=$?
sed "s|$tmp/||g" "$tmp/err" | head -c 2000
if [ $status -eq 0 ]; then
  echo "expected: it reads back what it printed; actual: check-ir accepts it (fixed)"; exit 0
fi
echo "expected: it reads back what it printed; actual: check-ir exits $status on it (the bug)"
exit 1
