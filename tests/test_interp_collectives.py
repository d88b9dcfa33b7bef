"""Collectives (axpby, gemm, gemv, ger, hadamard, sum) against NumPy formulas written here:
transposes, element types and mixed precision, strided operands, groups of different sizes,
beta = 0 without reading the output, and .atomic across work-groups."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tlinterp

DT = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "i16": np.int16}
RNG = np.random.default_rng(7)


def data(shape, t):
    if t.startswith("f"):
        return RNG.standard_normal(shape).astype(DT[t])
    return RNG.integers(-9, 10, shape).astype(DT[t])


def close(got, want, t):
    if t.startswith("i"):
        np.testing.assert_array_equal(got, want.astype(DT[t]))
    else:
        tol = 1e-5 if t == "f32" else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def mt(t, *shape, strides=None):
    s = "x".join([t] + [("?" if d is None else str(d)) for d in shape])
    if strides:
        s += ",strided<" + ",".join(str(x) for x in strides) + ">"
    return f"memref<{s}>"


def scalar_text(v, t):
    return repr(float(v)) if t.startswith("f") else str(int(v))


GEMM_TYPES = [("f64", "f64", "f64", "f64"), ("f32", "f32", "f32", "f32"),
              ("f64", "f32", "f64", "f64"), ("i32", "i32", "i32", "i32"),
              ("i32", "i16", "i16", "i32"), ("f32", "i32", "f32", "f64")]


@pytest.mark.parametrize("ta, tb", list(itertools.product("nt", repeat=2)))
@pytest.mark.parametrize("ts", GEMM_TYPES)
def test_gemm_batched_over_groups(ta, tb, ts):
    talpha, tA, tB, tC = ts
    M, K, N, G = 3, 4, 5, 4
    ash = (M, K) if ta == "n" else (K, M)
    bsh = (K, N) if tb == "n" else (N, K)
    A = data(ash + (G,), tA)
    B = data(bsh, tB)
    C = data((M, N, G), tC)
    alpha, beta = (1.5, -0.5) if talpha.startswith("f") else (2, 3)
    src = f"""
func @k(%alpha: {talpha}, %A: {mt(tA, *ash, None)}, %B: {mt(tB, *bsh)}, %C: {mt(tC, M, N, None)}) {{
  %g = group_id
  %a = subview %A[:, :, %g] : {mt(tA, *ash, None)}
  %c = subview %C[:, :, %g] : {mt(tC, M, N, None)}
  gemm.{ta}.{tb} %alpha, %a, %B, {scalar_text(beta, talpha)}, %c
    : {talpha}, {mt(tA, *ash)}, {mt(tB, *bsh)}, {talpha}, {mt(tC, M, N)}
}}"""
    out = tlinterp.run(src, {"alpha": DT[talpha](alpha), "A": A, "B": B, "C": C}, groups=G)
    wide = np.float64 if any(t.startswith("f") for t in ts) else np.int64
    opA = A.astype(wide) if ta == "n" else A.astype(wide).transpose(1, 0, 2)
    opB = B.astype(wide) if tb == "n" else B.astype(wide).T
    want = alpha * np.einsum("mkg,kn->mng", opA, opB) + beta * C.astype(wide)
    close(out["C"], want, tC)


def test_gemm_strided_operands_and_a_shared_output_row():
    src = """
func @k(%A: memref<f64x3x4,strided<2,8>>, %B: memref<f64x4x2,strided<1,5>>,
        %C: memref<f64x6x2>) {
  %c = subview %C[1:3, :] : memref<f64x6x2>
  gemm.n.n 1.0, %A, %B, 1.0, %c
    : f64, memref<f64x3x4,strided<2,8>>, memref<f64x4x2,strided<1,5>>, f64,
      memref<f64x3x2,strided<1,6>>
}"""
    A, B, C = data((3, 4), "f64"), data((4, 2), "f64"), data((6, 2), "f64")
    out = tlinterp.run(src, {"A": A, "B": B, "C": C})
    want = C.copy()
    want[1:4] += A @ B
    close(out["C"], want, "f64")


@pytest.mark.parametrize("trans", "nt")
@pytest.mark.parametrize("order", [1, 2])
def test_axpby(trans, order):
    shape = (4,) if order == 1 else (3, 4)
    ash = shape if (trans == "n" or order == 1) else shape[::-1]
    A, B = data(ash, "f64"), data(shape, "f32")
    src = f"""
func @k(%A: {mt('f64', *ash)}, %B: {mt('f32', *shape)}, %beta: f32) {{
  axpby.{trans} 2.0, %A, %beta, %B : f64, {mt('f64', *ash)}, f32, {mt('f32', *shape)}
}}"""
    out = tlinterp.run(src, {"A": A, "B": B, "beta": np.float32(0.25)})
    opA = A.T if (trans == "t" and order == 2) else A
    close(out["B"], 2.0 * opA + 0.25 * B.astype(np.float64), "f32")


@pytest.mark.parametrize("trans", "nt")
def test_gemv(trans):
    M, K = 5, 3
    ash = (M, K) if trans == "n" else (K, M)
    A, b, c = data(ash, "f64"), data((K,), "f64"), data((M,), "f64")
    src = f"""
func @k(%A: {mt('f64', *ash)}, %b: {mt('f64', K)}, %c: {mt('f64', M)}) {{
  gemv.{trans} 0.5, %A, %b, 2.0, %c : f64, {mt('f64', *ash)}, {mt('f64', K)}, f64, {mt('f64', M)}
}}"""
    out = tlinterp.run(src, {"A": A, "b": b, "c": c})
    opA = A if trans == "n" else A.T
    close(out["c"], 0.5 * opA @ b + 2.0 * c, "f64")


def test_ger_and_hadamard_vector_and_matrix():
    a, b, C = data((4,), "i32"), data((3,), "i32"), data((4, 3), "i32")
    h1, h2 = data((4, 3), "f32"), data((4, 3), "f32")
    u, v, w = data((5,), "f64"), data((5,), "f64"), data((5,), "f64")
    src = """
func @k(%a: memref<i32x4>, %b: memref<i32x3>, %C: memref<i32x4x3>, %h1: memref<f32x4x3>,
        %h2: memref<f32x4x3>, %u: memref<f64x5>, %v: memref<f64x5>, %w: memref<f64x5>) {
  ger 3, %a, %b, -1, %C : i32, memref<i32x4>, memref<i32x3>, i32, memref<i32x4x3>
  hadamard 1.0, %h1, %h1, 1.0, %h2 : f32, memref<f32x4x3>, memref<f32x4x3>, f32, memref<f32x4x3>
  hadamard_product 2.0, %u, %v, 0.5, %w : f64, memref<f64x5>, memref<f64x5>, f64, memref<f64x5>
}"""
    out = tlinterp.run(src, dict(a=a, b=b, C=C, h1=h1, h2=h2, u=u, v=v, w=w))
    close(out["C"], 3 * np.outer(a, b) - C, "i32")
    close(out["h2"], h1.astype(np.float64) ** 2 + h2, "f32")
    close(out["w"], 2 * u * v + 0.5 * w, "f64")


@pytest.mark.parametrize("trans", "nt")
def test_sum_of_matrix_and_of_vector(trans):
    A = data((3, 4), "f64")
    bsz = 3 if trans == "n" else 4
    b, x = data((bsz,), "f64"), data((6,), "f64")
    src = f"""
func @k(%A: memref<f64x3x4>, %b: {mt('f64', bsz)}, %x: memref<f64x6>, %s: memref<f64>) {{
  sum.{trans} 2.0, %A, 1.0, %b : f64, memref<f64x3x4>, f64, {mt('f64', bsz)}
  sum.n 1.0, %x, 0.0, %s : f64, memref<f64x6>, f64, memref<f64>
}}"""
    out = tlinterp.run(src, {"A": A, "b": b, "x": x, "s": np.array(np.nan)})
    opA = A if trans == "n" else A.T
    close(out["b"], 2.0 * opA.sum(axis=1) + b, "f64")
    close(out["s"], np.array(x.sum()), "f64")


def test_beta_zero_does_not_read_nan_output_and_runtime_beta():
    src = """
func @k(%A: memref<f64x2x2>, %C: memref<f64x2x2x?>, %beta: f64) {
  %g = group_id
  %c = subview %C[:, :, %g] : memref<f64x2x2x?>
  %gb = cast %g : index -> f64
  %b = arith.mul %beta, %gb : f64
  gemm.n.n 1.0, %A, %A, %b, %c : f64, memref<f64x2x2>, memref<f64x2x2>, f64, memref<f64x2x2>
}"""
    A = data((2, 2), "f64")
    C = np.full((2, 2, 3), np.nan)
    C[:, :, 1:] = 1.0
    out = tlinterp.run(src, {"A": A, "C": C, "beta": np.float64(1.0)}, groups=3)
    close(out["C"][:, :, 0], A @ A, "f64")  # beta = 0 * 1 = 0: the NaN is not read
    close(out["C"][:, :, 1], A @ A + 1.0, "f64")
    close(out["C"][:, :, 2], A @ A + 2.0, "f64")


def test_groups_of_different_member_sizes_are_batched_by_shape():
    src = """
func @k(%A: group<memref<f64x?x4>>, %B: memref<f64x4x5>, %C: group<memref<f64x?x5>>) {
  %g = group_id
  %a = load %A[%g] : group<memref<f64x?x4>>
  %c = load %C[%g] : group<memref<f64x?x5>>
  gemm.n.n 1.0, %a, %B, 1.0, %c : f64, memref<f64x?x4>, memref<f64x4x5>, f64, memref<f64x?x5>
}"""
    rows = [2, 3, 2, 1]
    As = [data((r, 4), "f64") for r in rows]
    Cs = [data((r, 5), "f64") for r in rows]
    B = data((4, 5), "f64")
    args = {"B": B}
    args.update({f"A.{i}": a for i, a in enumerate(As)})
    args.update({f"C.{i}": c for i, c in enumerate(Cs)})
    out = tlinterp.run(src, args)
    for i in range(len(rows)):
        close(out[f"C.{i}"], As[i] @ B + Cs[i], "f64")


def test_atomic_beta_one_adds_every_group():
    src = """
func @k(%A: memref<f64x3x3x?>, %C: memref<f64x3x3>) {
  %g = group_id
  %a = subview %A[:, :, %g] : memref<f64x3x3x?>
  axpby.n.atomic 1.0, %a, 1.0, %C : f64, memref<f64x3x3>, f64, memref<f64x3x3>
}"""
    A, C = data((3, 3, 6), "f64"), data((3, 3), "f64")
    out = tlinterp.run(src, {"A": A, "C": C}, groups=6)
    close(out["C"], C + A.sum(axis=2), "f64")


def test_atomic_beta_zero_keeps_one_written_value():
    src = """
func @k(%A: memref<i32x4x?>, %C: memref<i32x4>) {
  %g = group_id
  %a = subview %A[:, %g] : memref<i32x4x?>
  axpby.n.atomic 1, %a, 0, %C : i32, memref<i32x4>, i32, memref<i32x4>
}"""
    A = data((4, 5), "i32")
    out = tlinterp.run(src, {"A": A, "C": np.zeros(4, np.int32)}, groups=5)
    assert any((out["C"] == A[:, g]).all() for g in range(5))


def test_non_atomic_collectives_of_two_groups_on_one_output_race():
    src = """
func @k(%A: memref<f32x4>, %C: memref<f32x4>) {
  axpby.n 1.0, %A, 1.0, %C : f32, memref<f32x4>, f32, memref<f32x4>
}"""
    with pytest.raises(tlinterp.UndefinedBehaviour) as e:
        tlinterp.run(src, {"A": np.ones(4, np.float32), "C": np.ones(4, np.float32)}, groups=2)
    r = e.value.reports[0]
    assert r.kind == "data-race" and r.groups == (0, 1) and r.element == (0,)


@pytest.mark.parametrize("t", ["f32", "i32"])
def test_gemm_beta_zero_writes_the_scaled_product_over_nan(t):
    src = f"""
func @k(%A: {mt(t, 3, 2, None)}, %B: {mt(t, 2, 4)}, %C: {mt(t, 3, 4, None)}) {{
  %g = group_id
  %a = subview %A[:, :, %g] : {mt(t, 3, 2, None)}
  %c = subview %C[:, :, %g] : {mt(t, 3, 4, None)}
  gemm.n.n {scalar_text(3, t)}, %a, %B, {scalar_text(0, t)}, %c
    : {t}, {mt(t, 3, 2)}, {mt(t, 2, 4)}, {t}, {mt(t, 3, 4)}
}}"""
    A, B = data((3, 2, 5), t), data((2, 4), t)
    C = np.full((3, 4, 5), np.nan if t == "f32" else 77, DT[t])
    out = tlinterp.run(src, {"A": A, "B": B, "C": C}, groups=5)
    wide = np.float64 if t == "f32" else np.int64
    close(out["C"], 3 * np.einsum("mkg,kn->mng", A.astype(wide), B.astype(wide)), t)
