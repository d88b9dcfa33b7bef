#!/usr/bin/env bash
# `tinytc-opt -p insert-barrier kernel.tl` never ends (the hang depends on the file name, i.e. on heap addresses)
# tinytc 0.4.0: hang. Usage: ./repro.sh [PATH-TO-TINYTC] [--device NAME]
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
limit=${REPRO_TIMEOUT:-10}
echo "+ tinytc-opt -p insert-barrier < kernel.tl > /dev/null"
timeout -k 5 "$limit" "$tool" -p insert-barrier < kernel.tl > "$tmp/out" 2> "$tmp/err"
status=$?
head -c 2000 "$tmp/err"
if [ $status -eq 126 ] || [ $status -eq 127 ]; then
  echo "repro.sh: cannot run $tool (exit status $status): nothing tested" >&2; exit 2
fi
if [ $status -eq 124 ] || [ $status -eq 137 ]; then
  echo "expected: the command ends; actual: no answer within $limit s (the bug)"; exit 1
fi
echo "expected: the command ends; actual: it ended with exit status $status (fixed)"
exit 0
