"""The planted bugs of our v0.4 OpenCL lowering (fuzz/mutants/lowering_v04.py, the mutants of
`bench/mutants.py --lang v0.4 --target opencl`): each applies to a small hand-written kernel of
the construct it breaks and changes that kernel's result on pocl, while the unmutated lowering
agrees with the interpreter there; and every mutant is undone after use."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from opencl_devices import require_device

import tlgpu
import tlinterp
from fuzz.mutants import lowering_v04 as M
from fuzz.mutants.lowering_v03 import HITS
from fuzz.mutants.registry import known
from tlinterp.front.pipeline import parse
from tlinterp.interp import run as interp_run

pytestmark = [pytest.mark.opencl,
              pytest.mark.filterwarnings("ignore:Non-empty compiler output")]

_IDX = "\n".join(f"  %c{k} = constant {k} : index" for k in range(6))

SUBGROUPS = f"""func @k(%A: memref<f32 x 8>, %O: memref<f32 x 8 x 4>)
    attributes{{subgroup_size=8, work_group_size=[8, 1]}} {{
{_IDX}
  parallel {{
    %k = subgroup_local_id : i32
    %ki = cast %k : index
    %x = load %A[%ki] : f32
    %three = constant 3 : i32
    %b = subgroup_broadcast %x, %three : f32
    store %b, %O[%ki, %c0]
    %s = subgroup_inclusive_scan_add %x : f32
    store %s, %O[%ki, %c1]
    %r = subgroup_reduce_add %x : f32
    store %r, %O[%ki, %c2]
    %e = subgroup_exclusive_scan_max %x : f32
    store %e, %O[%ki, %c3]
  }}
}}
"""

COOPMATRIX = f"""func @k(%A: memref<f32 x 8 x 8>, %B: memref<f32 x 8 x 8>, %C: memref<f32 x 8 x 8>,
        %D: memref<f32 x 8 x 8>) attributes{{subgroup_size=8, work_group_size=[8, 1]}} {{
{_IDX}
  parallel {{
    %a = cooperative_matrix_load %A[%c0, %c0] : coopmatrix<f32 x 8 x 8, matrix_a>
    %b = cooperative_matrix_load.t %B[%c0, %c0] : coopmatrix<f32 x 8 x 8, matrix_b>
    %c = cooperative_matrix_load %C[%c0, %c0] : coopmatrix<f32 x 8 x 8, matrix_acc>
    %d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<f32 x 8 x 8, matrix_acc>
    cooperative_matrix_store %d, %D[%c0, %c0]
  }}
}}
"""

SCALARS = f"""func @k(%A: memref<f32 x 2>, %H: memref<f16 x 2>, %G: memref<bf16 x 2>,
        %Z: memref<c32 x 3>, %P: memref<c32 x 2>, %I: memref<i32 x 1>, %N: memref<i8 x 1>) {{
{_IDX}
  foreach (%i) = (%c0), (%c2) {{
    %x = load %A[%i] : f32
    %h = cast %x : f16
    store %h, %H[%i]
    %g = cast %x : bf16
    store %g, %G[%i]
  }}
  %z0 = load %Z[%c0] : c32
  %z1 = load %Z[%c1] : c32
  %p = mul %z0, %z1 : c32
  store %p, %P[%c0]
  %z2 = load %Z[%c2] : c32
  %q = div %z0, %z2 : c32
  store %q, %P[%c1]
  %n = load %I[%c0] : i32
  %n8 = cast %n : i8
  store %n8, %N[%c0]
}}
"""

# two sub-groups in the work-group: pocl runs its sub-group operations only where every
# work-item reaches them (directly in `parallel`), so a mutant must keep that place
TWO_SUBGROUPS = f"""func @k(%A: memref<f32 x 16>, %O: memref<f32 x 16 x 2>)
    attributes{{subgroup_size=8, work_group_size=[16, 1]}} {{
{_IDX}
  parallel {{
    %l = subgroup_local_id : i32
    %g = subgroup_linear_id : i32
    %eight = constant 8 : i32
    %g8 = mul %g, %eight : i32
    %k = add %g8, %l : i32
    %ki = cast %k : index
    %x = load %A[%ki] : f32
    %s = subgroup_inclusive_scan_add %x : f32
    store %s, %O[%ki, %c0]
    %three = constant 3 : i32
    %b = subgroup_broadcast %x, %three : f32
    store %b, %O[%ki, %c1]
  }}
}}
"""

ATOMICS = f"""func @k(%C: memref<i32 x 4>, %F: memref<f32 x 4>, %O: memref<i32 x 4>,
        %Q: memref<f32 x 4>) {{
{_IDX}
  foreach (%i) = (%c0), (%c4) {{
    %five = constant 5 : i32
    %old = atomic_add %five, %C[%i] : i32
    store %old, %O[%i]
    %half = constant 0.5 : f32
    %fold = atomic_max %half, %F[%i] : f32
    store %fold, %Q[%i]
  }}
}}
"""

CONTROL = f"""func @k(%A: memref<i32 x 4>, %B: memref<i32 x 4>, %O: memref<i64 x 1>,
        %E: memref<i32 x 5 x 5>) {{
{_IDX}
  %one = constant 1 : i32
  %zero = constant 0 : i32
  cumsum %one, %A, 0, %zero, %B
  %z = constant 0 : i64
  %s = for %i = %c0, %c5 init(%acc = %z) -> (i64) {{
    %ii = cast %i : i64
    %a1 = add %acc, %ii : i64
    yield (%a1)
  }}
  store %s, %O[%c0]
  foreach (%i, %j) = (%c0, %c0), (%c3, %c5) {{
    %ten = constant 10 : index
    %i10 = mul %i, %ten : index
    %v = add %i10, %j : index
    %w = cast %v : i32
    store %w, %E[%i, %j]
  }}
}}
"""


def _args(kernel: str) -> dict:
    rng = np.random.default_rng(3)
    if kernel is SUBGROUPS:
        return {"A": np.arange(1, 9, dtype=np.float32)[::-1].copy(),
                "O": np.zeros((8, 4), np.float32)}
    if kernel is COOPMATRIX:
        m = lambda: rng.integers(-4, 5, (8, 8)).astype(np.float32)  # noqa: E731 - exact sums
        return {"A": m(), "B": m(), "C": m(), "D": np.zeros((8, 8), np.float32)}
    if kernel is SCALARS:
        # an f16 subnormal; 1 + 3/4 of a bf16 ulp (rounds up to nearest even)
        return {"A": np.array([1e-6, 1 + 3 * 2.0 ** -9], np.float32),
                "H": np.zeros(2, np.float16), "G": np.zeros(2, ml_dtypes.bfloat16),
                "Z": np.array([1 + 2j, 3 + 4j, 0.5 + 3j], np.complex64),
                "P": np.zeros(2, np.complex64),
                # (1 + 2i) / (0.5 + 3i) rounds differently by the naive formula; 300 wraps to
                # 44 in i8 (saturating: 127)
                "I": np.array([300], np.int32), "N": np.zeros(1, np.int8)}
    if kernel is TWO_SUBGROUPS:
        return {"A": np.arange(1, 17, dtype=np.float32), "O": np.zeros((16, 2), np.float32)}
    if kernel is ATOMICS:
        return {"C": np.array([1, -2, 3, 7], np.int32), "F": np.array([0, 1, -1, 2], np.float32),
                "O": np.zeros(4, np.int32), "Q": np.zeros(4, np.float32)}
    return {"A": np.array([4, -1, 7, 2], np.int32), "B": np.zeros(4, np.int32),
            "O": np.zeros(1, np.int64), "E": np.zeros((5, 5), np.int32)}


KERNEL = {  # mutant -> the kernel whose result it changes
    "cl-sg-scan-exclusive": SUBGROUPS, "cl-sg-reduce-skip-last": SUBGROUPS,
    "cl-sg-broadcast-next-lane": SUBGROUPS, "cl-sg-identity-zero": SUBGROUPS,
    "cl-coop-store-transposed": COOPMATRIX, "cl-coop-load-trans-ignored": COOPMATRIX,
    "cl-coop-mul-add-a-shifted": COOPMATRIX,
    "cl-bf16-truncate": SCALARS, "cl-f16-flush-subnormals": SCALARS,
    "cl-complex-mul-sign": SCALARS, "cl-complex-div-naive": SCALARS,
    "cl-cast-saturating": SCALARS, "cl-atomic-return-new": ATOMICS,
    "cl-cumsum-exclusive": CONTROL, "cl-for-carried-stale": CONTROL,
    "cl-foreach-nd-swapped": CONTROL,
}


def _outputs(kernel: str, device: str, runner) -> dict:
    program = tlinterp.check(parse(kernel, lang="v0.4"))  # a fresh program: no cached lowering
    return {k: np.asarray(v) for k, v in runner(program, _args(kernel), device).items()}


def _device(program, args, device):
    return tlgpu.run(program, args, device=device)


def _interp(program, args, device):
    return interp_run(program, args)


def _same(a: dict, b: dict) -> bool:
    return all(np.array_equal(a[k].view(np.uint8), b[k].view(np.uint8)) for k in a)


def test_every_mutant_has_a_kernel_and_a_known_name():
    assert set(KERNEL) == set(M.MUTATIONS)
    assert set(M.MUTATIONS) <= set(known())  # tlfuzz --mutation takes them
    assert set(M.CATEGORIES) == {m.category for m in M.MUTATIONS.values()}


@pytest.fixture(scope="module")
def pocl() -> str:
    return require_device("pocl")


@pytest.fixture(scope="module")
def references(pocl) -> dict:
    """kernel -> the interpreter's outputs, which the unmutated lowering gives on pocl."""
    out = {}
    for kernel in {id(k): k for k in KERNEL.values()}.values():
        ref = _outputs(kernel, pocl, _interp)
        assert _same(ref, _outputs(kernel, pocl, _device)), kernel
        out[id(kernel)] = ref
    return out


@pytest.mark.parametrize("name", list(KERNEL))
def test_mutant_applies_and_changes_the_result(name, pocl, references):
    import tlgpu.lowering.function as lf
    import tlgpu.runtime.launch as rt

    rules = dict(lf.LOWER)
    kernel = KERNEL[name]
    with M.installed(name):
        got = _outputs(kernel, pocl, _device)
        assert HITS[0] > 0, f"{name} did not apply to its kernel"
    assert rt.SOURCE_FILTER is None and lf.LOWER == rules  # undone
    assert not _same(references[id(kernel)], got), f"{name} left its kernel's result alone"


@pytest.mark.parametrize("name", ["cl-sg-scan-exclusive", "cl-sg-broadcast-next-lane"])
def test_rule_mutant_keeps_its_place_in_parallel(name, pocl):
    """A mutant that hands the lowering a changed sub-group instruction still lowers on
    pocl's local-memory emulation for a work-group of two sub-groups (it would be refused,
    and the campaign skip the kernel, if the changed instruction lost its place)."""
    reference = _outputs(TWO_SUBGROUPS, pocl, _interp)
    assert _same(reference, _outputs(TWO_SUBGROUPS, pocl, _device))
    with M.installed(name):
        got = _outputs(TWO_SUBGROUPS, pocl, _device)
        assert HITS[0] > 0
    assert not _same(reference, got)
