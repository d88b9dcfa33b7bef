#!/usr/bin/env bash
# constant folding casts a float constant's unrounded literal: `cast` of `constant 0.001 : f32` to f64 gives 0.001, not 0.0010000000474974513
# tinytc 0.4.0: wrong result. Usage: ./repro.sh [PATH-TO-TINYTC] [--device NAME]
# Exit status: 1 while the bug is there, 0 once it is fixed, 2 when nothing could be tested.
# Needs bash, timeout (coreutils), python3 with numpy and pyopencl.
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
echo "+ tinytc kernel.tl > kernel.spv"
timeout -k 5 "$limit" "$tool" kernel.tl > "$tmp/out" 2> "$tmp/err"
status=$?
head -c 2000 "$tmp/err"
if [ $status -eq 126 ] || [ $status -eq 127 ]; then
  echo "repro.sh: cannot run $tool (exit status $status): nothing tested" >&2; exit 2
fi
if [ $status -ne 0 ]; then
  echo "expected: tinytc compiles the kernel; actual: exit status $status"
  exit 2
fi
mv "$tmp/out" "$tmp/kernel.spv"
timeout -k 5 "$limit" python3 "$here/host.py" "$tmp/kernel.spv" "$@"
status=$?
case $status in
  0|1|2) exit $status;;
  124|137) echo "expected: the kernel ends; actual: no answer within $limit s (the bug)";;
  *) echo "expected: host.py ends with 0 or 1; actual: it died with status $status"
     echo "(the OpenCL runtime crashed on the code: the bug)";;
esac
exit 1
