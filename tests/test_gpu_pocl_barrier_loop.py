"""pocl compiler bugs found by the fuzzer, kept as documented reproducers, and the workaround
tlgpu applies (tlgpu/workarounds.py).

1. (finding mismatch-125d3c377d50)
With optimisation on, pocl 3.0 (LLVM 14) drops a store that sits between two barriers of a
loop whose trip count is not a constant (group id, argument) and which holds a nested loop with barriers.
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
"""

from __future__ import annotations

import warnings

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


def _run(options: list[str], source: str = REPRO, shape=(8, 2), rows: int = 4
         ) -> list[list[int]]:
    import pyopencl as cl

    from tlgpu.devices import handle

    dev = handle("pocl")  # the device the rest of the OpenCL tests use
    ctx, queue = dev.context, dev.queue
    out = np.full(3 * rows, -7, np.int64)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyopencl's warning about a non-empty build log
        prog = cl.Program(ctx, source).build(options=options)
    prog.k(queue, (*shape, 3), (*shape, 1), buf)
    cl.enqueue_copy(queue, out, buf)
    queue.finish()
    return out.reshape(3, rows).tolist()


def _affected() -> bool:
    """pocl releases known to drop the store (3.0 with LLVM 14 here)."""
    from tlgpu.devices import find_device
    from tlinterp import BackendError

    try:
        dev = find_device("pocl")
    except BackendError:  # no pocl: the tests below fail like every other OpenCL test
        return False
    return "PoCL 3.0" in dev.platform.version


def test_reproducer_is_correct_without_optimisation():
    # The kernel itself is sound: unoptimised, pocl gets it right.
    assert _run(["-cl-opt-disable"]) == EXPECTED


@pytest.mark.xfail(_affected(), strict=True,
                   reason="pocl 3.0 bug: a store between barriers in a group-dependent loop "
                          "holding a nested barrier loop is dropped when optimising")
def test_reproducer_optimised():
    assert _run([]) == EXPECTED


def test_branch_reproducer_is_correct_without_optimisation():
    assert _run(["-cl-opt-disable"], BRANCH, (2, 2), 2) == BRANCH_EXPECTED


@pytest.mark.xfail(_affected(), strict=True,
                   reason="pocl 3.0 bug: the then branch holding a barrier is not run when "
                          "optimising")
def test_branch_reproducer_optimised():
    assert _run([], BRANCH, (2, 2), 2) == BRANCH_EXPECTED


def _agrees_through_tlgpu(source: str, args: dict, groups: int) -> None:
    """tlgpu on pocl computes what the interpreter does, and says when it built around a
    known pocl bug (a DeviceWorkaround warning, shown by `tlrun -v`)."""
    import tlgpu
    import tlinterp
    from fuzz.oracle.compare import compare_outputs
    from tlgpu.runtime import DeviceWorkaround
    from tlinterp.interp import run as interp_run

    program = tlinterp.check(tlinterp.parse(source, "k.tl"))
    want = interp_run(program, args, func="k", groups=groups)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = tlgpu.run(program, args, func="k", groups=groups, device="pocl")
    bad = compare_outputs(program, "k", args, want, got, groups=groups)
    assert not bad, "\n".join(str(m) for m in bad[:5])
    said = [str(w.message) for w in caught if issubclass(w.category, DeviceWorkaround)]
    assert bool(said) == _affected(), said
    assert all("pocl-barrier-in-branch-or-nested-loop" in m for m in said)


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
