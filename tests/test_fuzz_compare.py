"""fuzz.oracle.compare: exact where the language is exact, error-bounded for float collectives."""

from __future__ import annotations

import numpy as np
import pytest

import tlinterp
from fuzz.oracle.compare import Mismatch, compare_outputs, explain
from tlinterp.interp import run

SCALAR = """
func @s(%x: memref<f32x4>, %y: memref<i32x4>) {
  %0 = load %x[1] : memref<f32x4>
  %1 = arith.mul %0, 3.0 : f32
  store %1, %x[2] : memref<f32x4>
}
"""

GEMM = """
func @g(%A: memref<f32x64x64>, %B: memref<f32x64x64>, %C: memref<f32x64x64>) {
  gemm.n.t 1.5, %A, %B, 1.0, %C : f32, memref<f32x64x64>, memref<f32x64x64>, f32, memref<f32x64x64>
}
"""

NONLINEAR = """
func @n(%A: memref<f32x4x4>, %C: memref<f32x4x4>) {
  gemm.n.n 1.0, %A, %A, 0.0, %C : f32, memref<f32x4x4>, memref<f32x4x4>, f32, memref<f32x4x4>
  %0 = load %C[0, 0] : memref<f32x4x4>
  %1 = cmp.lt %0, 0.0 : f32
}
"""


def prog(text):
    return tlinterp.check(tlinterp.parse(text))


def scalar_args():
    return {"x": np.array([1, 2, 3, 4], np.float32), "y": np.arange(4, dtype=np.int32)}


def test_identical_outputs_agree():
    p = prog(SCALAR)
    out = run(p, scalar_args())
    assert compare_outputs(p, "s", scalar_args(), out, out) == []


def test_integers_and_scalar_floats_are_exact():
    p = prog(SCALAR)
    out = run(p, scalar_args())
    bad = {k: v.copy() for k, v in out.items()}
    bad["x"][2] = np.nextafter(bad["x"][2], np.float32(10))
    bad["y"][3] += 1
    mm = compare_outputs(p, "s", scalar_args(), out, bad)
    assert [(m.key, m.index) for m in mm] == [("x", (2,)), ("y", (3,))]
    assert all(m.bound is None for m in mm)
    assert "exact comparison" in str(mm[0])


def test_nan_and_signed_zero():
    p = prog(SCALAR)
    e = {"x": np.array([np.nan, 0.0, 1, 1], np.float32), "y": np.zeros(4, np.int32)}
    a = {"x": np.array([np.nan, -0.0, 1, 1], np.float32), "y": np.zeros(4, np.int32)}
    mm = compare_outputs(p, "s", scalar_args(), e, a)
    assert [m.index for m in mm] == [(1,)]  # NaN matches NaN, +0 differs from -0


def test_complex_outputs_compare_part_by_part():
    """A NaN part matches a NaN part (a complex NaN never equals itself), a zero part's sign
    counts as for floats."""
    p = prog(SCALAR)
    e = {"x": np.array([complex(np.nan, 1), complex(0.0, -0.0), 1j, 2], np.complex64)}
    a = {"x": np.array([complex(np.nan, 1), complex(0.0, 0.0), 1j, complex(2, np.nan)],
                       np.complex64)}
    mm = compare_outputs(p, "s", scalar_args(), e, a)
    assert [m.index for m in mm] == [(1,), (3,)]


def test_missing_key_shape_and_dtype():
    p = prog(SCALAR)
    out = run(p, scalar_args())
    mm = compare_outputs(p, "s", scalar_args(), out, {"x": out["x"]})
    assert mm and mm[0].key == "y" and "missing" in mm[0].reason
    mm = compare_outputs(p, "s", scalar_args(), out, {**out, "y": out["y"].astype(np.int64)})
    assert mm and "dtype" in mm[0].reason


def gemm_args(rng):
    return {k: rng.uniform(-1, 1, (64, 64)).astype(np.float32) for k in "ABC"}


def test_reassociated_gemm_is_within_the_bound_and_a_wrong_one_is_not():
    rng = np.random.default_rng(1)
    args = gemm_args(rng)
    p = prog(GEMM)
    expected = run(p, args)
    # another summation order (pairwise halves in f32) and rounding of alpha*AB separately
    A, B, C = (args[k].astype(np.float32) for k in "ABC")
    lo = A[:, :32] @ B[:, :32].T
    hi = A[:, 32:] @ B[:, 32:].T
    other = {**expected, "C": (np.float32(1.5) * (hi + lo) + C).astype(np.float32)}
    assert compare_outputs(p, "g", args, expected, other) == []
    plan = explain(p, "g", args)
    assert plan.float_collectives and plan.nonlinear is None and plan.steps >= 64
    wrong = {**expected, "C": other["C"].copy()}
    wrong["C"][5, 7] += 1e-2 * (1 + abs(wrong["C"][5, 7]))  # e.g. one term lost
    mm = compare_outputs(p, "g", args, expected, wrong)
    assert [m.index for m in mm] == [(5, 7)]
    assert isinstance(mm[0], Mismatch) and mm[0].bound is not None and mm[0].bound < 1e-2


def test_nonfinite_where_the_bound_is_finite_is_a_mismatch():
    rng = np.random.default_rng(2)
    args = gemm_args(rng)
    p = prog(GEMM)
    expected = run(p, args)
    wrong = {**expected, "C": expected["C"].copy()}
    wrong["C"][0, 0] = np.nan
    assert [m.index for m in compare_outputs(p, "g", args, expected, wrong)] == [(0, 0)]


def test_elements_without_a_finite_bound_are_not_compared():
    rng = np.random.default_rng(3)
    args = gemm_args(rng)
    args["A"][2, 2] = np.inf  # row 2 of C has no finite magnitude
    p = prog(GEMM)
    expected = run(p, args)
    other = {**expected, "C": expected["C"].copy()}
    other["C"][2, :] = np.nan
    assert compare_outputs(p, "g", args, expected, other) == []


def test_functions_that_cannot_be_bounded_say_why():
    p = prog(NONLINEAR)
    args = {"A": np.eye(4, dtype=np.float32), "C": np.zeros((4, 4), np.float32)}
    assert explain(p, "n", args).nonlinear == "a float comparison"


@pytest.mark.parametrize("text", [SCALAR])
def test_accepts_source_text(text):
    out = run(prog(text), scalar_args())
    assert compare_outputs(text, "s", scalar_args(), out, out) == []


BF16_COPY = """func @k(%A: memref<bf16 x 3>, %B: memref<bf16 x 3>) {
    %c0 = constant 0 : index
    %n = constant 3 : index
    foreach (%i) = (%c0), (%n) {
        %a = load %A[%i] : bf16
        store %a, %B[%i]
    }
}
"""


def test_bf16_outputs_compare_as_bit_patterns_whatever_their_spelling():
    """An in-process run gives ml_dtypes.bfloat16, files hold uint16 bits (np.savez: V2)."""
    import ml_dtypes

    program = tlinterp.parse(BF16_COPY, lang="v0.4")
    bits = np.array([0x3F80, 0xC040, 0x7FC0], np.uint16)  # 1.0, -3.0, nan
    args = {"A": bits, "B": np.zeros(3, np.uint16)}
    actual = run(program, args)
    assert actual["B"].dtype == np.dtype(ml_dtypes.bfloat16)
    assert compare_outputs(program, None, args, {"A": bits, "B": bits}, actual) == []
    assert compare_outputs(program, None, args, {"A": bits, "B": bits.view("V2")},
                           {"A": bits, "B": bits}) == []
    wrong = bits.copy()
    wrong[1] = 0xC041
    [m] = compare_outputs(program, None, args, {"A": bits, "B": wrong}, actual)
    assert m.key == "B"


def test_bf16_nans_match_whatever_their_sign_and_payload():
    """As for f32: inf - inf is -NaN on x86 (the interpreter) and +NaN on NVIDIA (an H200
    campaign finding); a NaN against a number, and +0 against -0, still differ."""
    program = tlinterp.parse(BF16_COPY, lang="v0.4")
    e = np.array([0xFFC0, 0x7FC1, 0x0000, 0x3F80], np.uint16)
    a = np.array([0x7FC0, 0xFFFF, 0x8000, 0x7FC0], np.uint16)
    args = {"A": e, "B": np.zeros(4, np.uint16)}
    mm = compare_outputs(program, None, args, {"A": e, "B": e.view("V2")},
                         {"A": e, "B": a.view("V2")})
    assert [(m.key, m.index) for m in mm] == [("B", (2,)), ("B", (3,))]


def test_bf16_nans_compare_equal_whatever_their_payload():
    """bf16 outputs are compared as bit patterns, but NaN where NaN with any payload and sign
    (the contract above; tinytc writes 0xFFC1 where the reference has 0x7FC0)."""
    src = ("func @k(%A: memref<bf16 x 2>) {\n    %c0 = constant 0 : index\n"
           "    %x = load %A[%c0] : bf16\n    store %x, %A[%c0]\n}\n")
    p = tlinterp.check(tlinterp.parse(src, "k.tl", lang="v0.4"))
    e = {"A": np.array([0x7FC0, 0x3F80], np.uint16)}
    assert compare_outputs(p, "k", e, e, {"A": np.array([0xFFC1, 0x3F80], np.uint16)}) == []
    # a NaN against infinity, and a one-ulp difference, still differ
    for bits in ([0x7F80, 0x3F80], [0x7FC0, 0x3F81]):
        assert len(compare_outputs(p, "k", e, e, {"A": np.array(bits, np.uint16)})) == 1
