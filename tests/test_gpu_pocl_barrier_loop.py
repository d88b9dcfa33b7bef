"""pocl compiler bugs found by the fuzzer, kept as documented reproducers, and the workaround
tlgpu applies (tlgpu/runtime/workarounds.py).

1. (finding mismatch-125d3c377d50)
With optimisation on, pocl 3.0 (LLVM 14) drops a store that sits between two barriers of a
loop whose trip count is not a constant (group id, argument) and which holds a nested loop
with barriers.
The kernel below is free of races (only work-item 0 stores, to distinct addresses) and every
barrier is reached by the whole work-group, so the store must happen; with
-cl-opt-disable, on Oclgrind and with a one-work-item group it does. Our lowering emits
exactly this shape for a `store` inside nested `for` loops, so the fuzzer reports it as a
mismatch against the interpreter: it is not a bug of ours.
The same shape in the tensor language is `KERNEL`: interpreter and OpenCL must agree on it,
which they do through tlgpu because tlgpu builds that kernel with -cl-opt-disable on pocl 3.0.

2. (findings mismatch-1839b0c17ee5, 4291361bde61 and others of the 20-minute pocl campaign)
With optimisation on, pocl 3.0 skips the then branch of an if/else that opens with a barrier,
whatever the (work-group-uniform, non-constant) condition; in some kernels it runs the else
branch instead: `BRANCH`. Our lowering emits that shape for an `if` whose branch starts with
a step that needs a barrier; `BRANCH_KERNEL` is it in the tensor language.

3. (findings backend-crash-5382fcd8523e, 75ed0bd7400b)
With optimisation on, pocl 3.0 aborts the process ("Could not find a dominating alternative
variable.") when it builds the work-group function, at the first launch, of a loop that holds
a barrier and another loop: `ABORT`. Our lowering emits that shape for a collective inside a
`for` (the collective spreads its elements over the work-items with a loop);
`ABORT_KERNEL`, run in a child process, is it in the tensor language.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

pytestmark = pytest.mark.opencl  # needs pocl

REPRO = """
kernel __attribute__((reqd_work_group_size(8, 2, 1)))
void k(global long* out)
{
    const long lid = (long)get_local_id(0) + (long)get_local_id(1) * 8;
    const long g = (long)get_global_id(2);
    global long* o = out + g * 4;
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (long it = 0; it < g; ++it) {
        if (lid == 0) o[1] = 1;
        barrier(CLK_GLOBAL_MEM_FENCE);
        if (lid == 0) o[2] = 2;  /* the store pocl drops */
        for (long j = 0; j < 2; ++j) {
            barrier(CLK_GLOBAL_MEM_FENCE);
            if (lid == 0) o[3] = j;
            barrier(CLK_GLOBAL_MEM_FENCE);
        }
    }
}
"""

KERNEL = """
func @k(%w: memref<i64x4x?>) {
  %g = group_id
  %o = subview %w[:, %g] : memref<i64x4x?>
  for %i = 0, %g, 3 {
    %y = if 1 -> (i16) {
      store -257, %o[1] : memref<i64x4>
      yield -257 : i16
    } else {
      yield 4 : i16
    }
    %z = cast %y : i16 -> i64
    store %z, %o[2] : memref<i64x4>
    for %j = 0, 2, 1 {
      %d = cast %j : index -> i64
      store %d, %o[3] : memref<i64x4>
      store %d, %o[0] : memref<i64x4>
    }
  }
}
"""

# Group 0 runs no iteration; groups 1 and 2 run at least one.
EXPECTED = [[-7, -7, -7, -7], [-7, 1, 2, 1], [-7, 1, 2, 1]]

BRANCH = """
kernel __attribute__((reqd_work_group_size(2, 2, 1)))
void k(global long* out)
{
    const long lid = (long)get_local_id(0) + (long)get_local_id(1) * 2;
    const long g = (long)get_global_id(2);
    if (g != 1) {
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        if (lid == 0) out[2 * g] = 1;  /* pocl never gets here */
    } else {
        if (lid == 0) out[2 * g + 1] = 1;
    }
}
"""

BRANCH_EXPECTED = [[1, -7], [-7, 1], [1, -7]]

BRANCH_KERNEL = """
func @k(%w: memref<i64x2x?>) {
  %g = group_id
  %o = subview %w[:, %g] : memref<i64x2x?>
  %c = cmp.ne %g, 1 : index
  if %c {
    barrier
    store 1, %o[0] : memref<i64x2>
  } else {
    store 1, %o[1] : memref<i64x2>
  }
}
"""


ABORT = """
kernel __attribute__((reqd_work_group_size(8, 4, 1)))
void k(global float* a)
{
    const long lid = (long)get_local_id(0) + (long)get_local_id(1) * 8;
    const long g = (long)get_global_id(2);
    global float* o = a + g * 4;
    for (long it = 0; it < 2; ++it) {
        for (long t = lid; t < 1; t += 32) o[3] = 2.0f * o[2] + o[3];
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        if (lid == 0) o[g & 1] = 3.25f;
    }
    if (lid == 0) a[12 + g] = 1.0f;
}
"""

ABORT_EXPECTED = [[3.25, 0, 0, 0], [0, 3.25, 0, 0], [3.25, 0, 0, 0]]

ABORT_KERNEL = """
func @k(%w: memref<f32x5x?>, %v: memref<f32x?>) work_group_size(8,4) {
  %g = group_id
  %o = subview %w[:, %g] : memref<f32x5x?>
  for %i = 0, 2 {
    %a = subview %o[2:1] : memref<f32x5>
    %b = subview %o[4:1] : memref<f32x5>
    axpby.n 2.0, %a, 1.0, %b : f32, memref<f32x1>, f32, memref<f32x1>
    %j = arith.and %g, 1 : index
    store 3.25, %o[%j] : memref<f32x5>
  }
  store 1.0, %v[%g] : memref<f32x?>
}
"""


_CHILD = """
import json, sys, warnings
import numpy as np, pyopencl as cl
from tlgpu.runtime.devices import handle
source, shape, rows, dtype, options = json.loads(sys.argv[1])
dev = handle('pocl')  # the device the rest of the OpenCL tests use
out = np.full(3 * rows + 4, -7 if dtype == 'int64' else 0, dtype)  # ABORT writes a[12 + g]
buf = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=out)
warnings.simplefilter('ignore')  # pyopencl's warning about a non-empty build log
prog = cl.Program(dev.context, source).build(options=options)
prog.k(dev.queue, (*shape, 3), (*shape, 1), buf)
cl.enqueue_copy(dev.queue, out, buf); dev.queue.finish()
print(json.dumps(out[:3 * rows].reshape(3, rows).tolist()))
"""


def _run(options: list[str], source: str = REPRO, shape=(8, 2), rows: int = 4,
         dtype: str = "int64") -> list[list]:
    """An OpenCL C reproducer built and run on pocl in a child process, so that a pocl release
    that aborts on it fails the test instead of killing pytest; its working directory is a
    temporary one (an aborting pocl writes k.dot there). The first 3 x `rows` values."""
    import json
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as cwd:
        r = subprocess.run([sys.executable, "-c", _CHILD,
                            json.dumps([source, list(shape), rows, dtype, options])],
                           capture_output=True, text=True, timeout=120, cwd=cwd,
                           env={**os.environ, "POCL_KERNEL_CACHE": "0"})
    assert r.returncode == 0, f"pocl died (status {r.returncode}): {r.stderr[-300:]}"
    return json.loads(r.stdout.splitlines()[-1])


def _pocl():
    from tlgpu.runtime.devices import find_device
    from tlinterp import BackendError

    try:
        return find_device("pocl")
    except BackendError:  # no pocl: the tests below fail like every other OpenCL test
        return None


def _affected() -> bool:
    """pocl releases the workaround table lists as having the bugs (3.0 with LLVM 14, Debian's
    3.1 with LLVM 15)."""
    from tlgpu.runtime.workarounds import KNOWN

    dev = _pocl()
    return dev is not None and any(w.reproducer.endswith(os.path.basename(__file__))
                                   and w.applies_to(dev) for w in KNOWN)


def _unseen(check) -> None:
    """Run `check`; on a pocl release that the table does not list, a failure (the bug is
    there, or the release crashes) is an expected failure that says what to do, not an error
    of the suite: the table is keyed on the releases tested, and a release not in it is built
    without the workaround, so its reproducers decide (docs/devices.md)."""
    if _affected() or _pocl() is None:
        check()
        return
    try:
        check()
    except AssertionError as e:
        from tlgpu.runtime.devices import label

        pytest.xfail(f"{label(_pocl())} is not in tlgpu/runtime/workarounds.py and fails this "
                     f"reproducer: check the release and add it to the entry ({str(e)[:200]})")


def test_reproducer_is_correct_without_optimisation():
    # The kernel itself is sound: unoptimised, pocl gets it right.
    assert _run(["-cl-opt-disable"]) == EXPECTED


@pytest.mark.xfail(_affected(), strict=True,
                   reason="pocl 3.0/3.1 bug: a store between barriers in a group-dependent "
                          "loop holding a nested barrier loop is dropped when optimising")
def test_reproducer_optimised():
    _unseen(lambda: _check(_run([]) == EXPECTED))


def _check(ok: bool) -> None:
    assert ok


def test_branch_reproducer_is_correct_without_optimisation():
    assert _run(["-cl-opt-disable"], BRANCH, (2, 2), 2) == BRANCH_EXPECTED


@pytest.mark.xfail(_affected(), strict=True,
                   reason="pocl 3.0/3.1 bug: the then branch holding a barrier is not run "
                          "when optimising")
def test_branch_reproducer_optimised():
    _unseen(lambda: _check(_run([], BRANCH, (2, 2), 2) == BRANCH_EXPECTED))


def _agrees_through_tlgpu(source: str, args: dict, groups: int) -> None:
    """tlgpu on pocl computes what the interpreter does, and says when it built around a
    known pocl bug (a DeviceWorkaround warning, shown by `tlrun -v`, in the child's log).
    Through tlgpu.runtime.isolated, so a pocl abort fails the test instead of killing
    pytest."""
    import tlinterp
    from fuzz.oracle.compare import compare_outputs
    from tlgpu.runtime.isolated import run_isolated
    from tlinterp.interp import run as interp_run

    program = tlinterp.check(tlinterp.parse(source, "k.tl"))
    want = interp_run(program, dict(args), func="k", groups=groups)

    def check():
        try:
            got = run_isolated(program, dict(args), func="k", groups=groups, device="pocl",
                               timeout=120)
        except tlinterp.ExecutionError as e:
            raise AssertionError(e.format()) from None
        bad = compare_outputs(program, "k", args, want, got.outputs, groups=groups)
        assert not bad, "\n".join(str(m) for m in bad[:5])
        assert ("pocl-barrier-in-branch-or-loop-nest" in got.log) == _affected(), got.log

    _unseen(check)


def test_kernel_agrees_with_interpreter():
    import tlinterp
    from tlinterp.interp import run as interp_run

    args = {"w": np.full((4, 3), -7, np.int64)}
    want = interp_run(tlinterp.check(tlinterp.parse(KERNEL, "k.tl")), dict(args), func="k",
                      groups=3)
    assert want["w"][2].tolist() == [-7, -257, -257]  # the interpreter's value is right
    _agrees_through_tlgpu(KERNEL, args, 3)


def test_branch_kernel_agrees_with_interpreter():
    _agrees_through_tlgpu(BRANCH_KERNEL, {"w": np.full((2, 3), -7, np.int64)}, 3)


def test_abort_reproducer_runs_without_optimisation():
    assert _run(["-cl-opt-disable"], ABORT, (8, 4), 4, "float32") == ABORT_EXPECTED


@pytest.mark.xfail(_affected(), strict=True,
                   reason="pocl 3.0/3.1 bug: aborts building a loop holding a barrier and a "
                          "loop")
def test_abort_reproducer_optimised():
    _unseen(lambda: _check(_run([], ABORT, (8, 4), 4, "float32") == ABORT_EXPECTED))


def test_abort_kernel_agrees_with_interpreter():
    _agrees_through_tlgpu(ABORT_KERNEL, {"w": np.zeros((5, 3), np.float32),
                                         "v": np.zeros(3, np.float32)}, 3)
