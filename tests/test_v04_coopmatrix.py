"""v0.4 cooperative matrices (tlinterp/interp/coopmatrix.py): the layout against the layout
document's tables and a brute-force construction of its A* tensor, cases observed on tinytc
v0.4.0 (docs/semantics.md), loads and stores against the v0.4 formulas, mul_add and reduce
against loops over NumPy scalars."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tlinterp.interp import coopmatrix as cm
from tlinterp.interp import lowp

pow2 = st.sampled_from([1, 2, 4, 8, 16, 32, 64])


def _brute_components(M, N, S, K1, full):
    """W^p from the document's definitions, built differently: the A* tensor of shape
    (I, K1, J, K2) filled entry by entry, flattened with L = i + k1 I + j I K1 + k2 I K1 J
    (Fortran order), then W^p[v] = A*[L^-1(p + vS)] by reshaping."""
    I = min(M, S)
    J = next(n for n in range(N, N + S + 1) if (I * n) % S == 0)
    K = M // I
    K2 = K // K1
    A = np.zeros((I, K1, J, K2), full.dtype)
    for i in range(I):
        for k1 in range(K1):
            for j in range(J):
                for k2 in range(K2):
                    r = i + k1 * I + k2 * I * K1
                    if r < M and j < N:
                        A[i, k1, j, k2] = full[r, j]
    flat = A.reshape(-1, order="F")
    V = flat.size // S
    return flat.reshape(V, S).T


@given(pow2, st.integers(1, 40), st.sampled_from([4, 8, 16, 32]),
       st.sampled_from(cm.USES), st.sampled_from(["i8", "i16", "f16", "bf16", "f32", "f64",
                                                   "c32"]))
def test_layout_matches_brute_force(M, N, S, use, ty):
    L = cm.Layout(M, N, ty, use, S)
    full = (1 + np.arange(M * N)).reshape(M, N).astype(np.int64)
    want = _brute_components(M, N, S, L.K1, full)
    got = cm.to_components(L, cm.pad(cm.Layout(M, N, "i64", use, S), full))
    assert got.shape == (S, L.V)
    np.testing.assert_array_equal(got, want)
    # bijection: back to the padded matrix
    comps = np.arange(S * L.V).reshape(S, L.V)
    np.testing.assert_array_equal(cm.to_components(L, cm.from_components(L, comps)), comps)


def test_document_tables():
    # 4 x 15, S = 16: component v of lane p is entry (p mod 4, p div 4 + 4 v), the last four
    # lanes of .w are padding
    L = cm.Layout(4, 15, "f32", "matrix_acc", 16)
    r, c = L.positions
    for p in range(16):
        for v in range(4):
            assert (r[p, v], c[p, v]) == (p % 4, p // 4 + 4 * v)
    assert (c[12:, 3] >= 15).all() and (c[:12, 3] < 15).all()
    # 1 x 17: lane p holds (0, p) and (0, 16 + p); only lane 0's second is an entry
    L = cm.Layout(1, 17, "f32", "matrix_acc", 16)
    r, c = L.positions
    assert L.V == 2 and (r == 0).all()
    assert c[:, 0].tolist() == list(range(16)) and c[0, 1] == 16 and (c[1:, 1] >= 17).all()


def test_tinytc_observed_matrix_b_blocks():
    # observed with tinytc v0.4.0 (extract after load, run on Intel's CPU OpenCL): an i8
    # matrix_b of 32 x 3 with S = 16 has K1 = 2, so lane p component v holds
    # (p + 16 (v mod 2), v div 2); the same shape as matrix_acc has K1 = 1
    b = cm.Layout(32, 3, "i8", "matrix_b", 16)
    assert (b.K1, b.V) == (2, 6)
    assert b.position(5, 1) == (21, 0) and b.position(5, 2) == (5, 1)
    acc = cm.Layout(32, 3, "i8", "matrix_acc", 16)
    assert acc.position(5, 1) == (5, 1) and acc.position(5, 3) == (21, 0)
    assert cm.Layout(32, 3, "f32", "matrix_b", 16).K1 == 1  # size 4: ω_b = 1


def test_layout_rejects():
    with pytest.raises(ValueError, match="powers of two"):
        cm.Layout(12, 4, "f32", "matrix_acc", 16)
    with pytest.raises(ValueError, match="use"):
        cm.Layout(16, 4, "f32", "matrix_c", 16)


def test_extract_insert():
    L = cm.Layout(16, 5, "f32", "matrix_acc", 8)
    P = cm.pad(L, np.arange(80, dtype=np.float32).reshape(16, 5))
    for v in range(L.V):
        e = cm.extract(L, P, v)
        np.testing.assert_array_equal(e, cm.to_components(L, P)[:, v])
        Q = cm.insert(L, P, -1 - np.arange(8), v)
        changed = Q != P
        assert changed.sum() == 8  # exactly one entry per lane
        np.testing.assert_array_equal(cm.extract(L, Q, v), -1 - np.arange(8))
    with pytest.raises(ValueError, match="outside 0..9"):
        cm.extract(L, P, L.V)
    # batched over (work-group, sub-group)
    PB = np.stack([P, P + 100])[:, None]
    assert cm.extract(L, PB, 2).shape == (2, 1, 8)


def _ref_load(mem, x, y, M, N, t, checked):
    s1, s2 = mem.shape
    out = np.zeros((M, N), mem.dtype)
    oob = False
    for i in range(M):
        for j in range(N):
            a, b = (x + j, y + i) if t else (x + i, y + j)
            rc = b if t else a  # the memref coordinate the row index i selects ...
            rext = s2 if t else s1
            cc = a if t else b
            cext = s1 if t else s2
            if checked in ("rows", "both") and not 0 <= rc < rext:
                continue
            if checked in ("cols", "both") and not 0 <= cc < cext:
                continue
            if not (0 <= a < s1 and 0 <= b < s2):
                oob = True
                continue
            out[i, j] = mem[a, b]
    return out, oob


@given(st.sampled_from([4, 8, 16]), st.integers(1, 9), st.integers(-3, 12),
       st.integers(-3, 12), st.booleans(), st.sampled_from(cm.CHECKED))
def test_load_matches_formula(M, N, x, y, t, checked):
    mem = np.arange(1, 1 + 10 * 11, dtype=np.float32).reshape(10, 11)
    L = cm.Layout(M, N, "f32", "matrix_acc", 8)
    P, acc = cm.load(L, mem, x, y, t, checked)
    want, oob = _ref_load(mem, x, y, M, N, t, checked)
    np.testing.assert_array_equal(cm.unpad(L, P), want)
    assert bool(acc.oob.any()) == oob
    assert (P[:, N:] == 0).all()  # padding loads as zero
    if oob:
        f = cm.oob_findings(acc, "cooperative_matrix_load")
        assert f and f[0].kind == "out-of-bounds"


def test_load_oob_findings_batched():
    mem = np.zeros((3, 16, 16), np.float32)
    L = cm.Layout(8, 8, "f32", "matrix_acc", 8)
    _, acc = cm.load(L, mem, np.array([0, 9, 0]), np.array([0, 0, 12]))
    f = cm.oob_findings(acc, "load", groups=[4, 5, 6])
    assert [(x.groups, x.element) for x in f] == [((5,), (16, 0)), ((6,), (0, 16))]


@given(st.sampled_from([4, 8]), st.integers(1, 6), st.integers(-2, 8), st.integers(-2, 8),
       st.booleans(), st.sampled_from(cm.CHECKED))
def test_store_matches_formula(M, N, x, y, t, checked):
    L = cm.Layout(M, N, "f32", "matrix_acc", 4)
    full = 1 + np.arange(M * N, dtype=np.float32).reshape(M, N)
    P = cm.pad(L, full)
    P[:, N:] = -7  # padding is never stored
    mem = np.zeros((7, 9), np.float32)
    got, acc = cm.store(L, P, mem, x, y, t, checked)
    want = mem.copy()
    for i in range(M):
        for j in range(N):
            a, b = (x + j, y + i) if t else (x + i, y + j)
            rc, rext = (b, 9) if t else (a, 7)
            cc, cext = (a, 7) if t else (b, 9)
            if checked in ("rows", "both") and not 0 <= rc < rext:
                continue
            if checked in ("cols", "both") and not 0 <= cc < cext:
                continue
            if 0 <= a < 7 and 0 <= b < 9:
                want[a, b] = full[i, j]
    np.testing.assert_array_equal(got, want)
    assert (got != -7).all()


def test_mul_add_f32_sequential_order():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((2, 16, 8)).astype(np.float32)
    B = rng.standard_normal((2, 8, 4)).astype(np.float32)
    C = rng.standard_normal((2, 16, 4)).astype(np.float32)
    D = cm.mul_add(A, B, C, "f32", "f32", "f32", "f32")
    for g in range(2):
        for m in range(16):
            for n in range(4):
                acc = C[g, m, n]
                for k in range(8):
                    acc = np.float32(np.float32(A[g, m, k] * B[g, k, n]) + acc)
                assert D[g, m, n] == acc


@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(["f16", "bf16"]),
       st.sampled_from(["f16", "f32", "bf16"]))
def test_mul_add_low_precision_rounding_point(seed, tab, tc):
    if not lowp.promotable(tab, tc):
        return
    rng = np.random.default_rng(seed)
    t, u = lowp.dtype(tab), lowp.dtype(tc)
    A = rng.uniform(-2, 2, (16, 16)).astype(t)
    B = rng.uniform(-2, 2, (16, 8)).astype(t)
    C = rng.uniform(-2, 2, (16, 8)).astype(u)
    D = cm.mul_add(A, B, C, tab, tab, tc, tc)
    assert D.dtype == u
    # every product and sum rounded to C's type (NumPy float scalars round per operation)
    acc = C.astype(np.float64)
    for k in range(16):
        prod = (A[:, k:k + 1].astype(np.float64) * B[k:k + 1, :].astype(np.float64))
        acc = (prod.astype(np.float32).astype(u).astype(np.float64) + acc).astype(
            np.float32).astype(u).astype(np.float64)
    np.testing.assert_array_equal(D.astype(np.float64), acc)
    exact = A.astype(np.float64) @ B.astype(np.float64) + C.astype(np.float64)
    assert (np.abs(D.astype(np.float64) - exact) <= cm.mul_add_bound(A, B, C, tc, tc)).all()



@pytest.mark.parametrize("tc,tr", [("f32", "f32"), ("f64", "f32"), ("i32", "i32")])
def test_mul_add_padding_columns_are_cs(tc, tr):
    """D's padding columns are C's (cast to D's type), whatever B's padding holds (here 1, as
    after a construct): one rule for the sequential path and the executor's f32 product path
    (`product`), which once added A times B's padding there. (A checked program's C has no
    padding: its rows are a multiple of S, so J = N.)"""
    L = cm.Layout(4, 3, tc, "matrix_acc", 8)  # J = 4: column 3 is padding
    assert L.J == 4
    dt = lowp.dtype(tc)
    A = np.arange(16).reshape(4, 4).astype(dt)
    B = np.ones((4, L.J), dt)  # B's padding column non-zero
    C = np.full((4, L.J), 2, dt)
    D = cm.mul_add(A, B, C, tc, tc, tc, tr, n=3)
    assert D.dtype == lowp.dtype(tr)
    np.testing.assert_array_equal(D[:, 3], np.full(4, 2, D.dtype))  # C's, not 2 + row sums
    np.testing.assert_array_equal(D[:, :3], (2 + A.sum(1, keepdims=True) * B[:, :3]
                                             ).astype(D.dtype))
    fast = cm.mul_add(A, None, C, tc, tc, tc, tr, n=3, product=(A @ B[:, :3] + C[:, :3]))
    np.testing.assert_array_equal(fast, D)

def test_mul_add_integers_wrap_and_result_cast():
    A = np.full((16, 4), 127, np.int8)
    B = np.full((4, 16), 127, np.int8)
    C = np.full((16, 16), 2 ** 31 - 1 - 4 * 127 * 127 + 1, np.int32)
    D = cm.mul_add(A, B, C, "i8", "i8", "i32", "i32")
    assert (D == -2 ** 31).all()  # one past the top wraps
    D = cm.mul_add(A, B, np.zeros((16, 16), np.int32), "i8", "i8", "i32", "f32")
    assert D.dtype == np.float32 and (D == 4 * 127 * 127).all()
    with pytest.raises(ValueError, match="promotable"):
        cm.mul_add(A.astype(np.int16), B, C, "i16", "f16", "f16", "f16")


def test_reduce_row_and_column():
    L = cm.Layout(8, 5, "f32", "matrix_acc", 4)
    rng = np.random.default_rng(2)
    P = rng.standard_normal((3, 8, 5)).astype(np.float32)
    row = cm.reduce(L, P, "add", "row")
    assert row.shape == (3, 8, 1)
    for g in range(3):
        for m in range(8):
            acc = P[g, m, 0]
            for j in range(1, 5):
                acc = np.float32(acc + P[g, m, j])
            assert row[g, m, 0] == acc
    col = cm.reduce(L, P, "max", "column")
    assert col.shape == (3, 1, 8)  # 1 x 5 padded to 8 with S = 4
    np.testing.assert_array_equal(col[:, 0, :5], P.max(axis=1))
    assert (col[:, 0, 5:] == 0).all()


def test_column_reduce_is_pairwise_over_lanes():
    # S = 4, M = 8: lane p first adds rows p and p + 4, then lanes pair up (0+1)+(2+3)
    L = cm.Layout(8, 1, "f32", "matrix_acc", 4)
    P = np.zeros((8, 1), np.float32)
    P[:4, 0] = [2.0 ** 24, 1, 1, 1]
    got = cm.reduce(L, P, "add", "column")[0, 0]
    assert got == 2.0 ** 24 + 2  # sequential over lanes would give 2^24
    with pytest.raises(ValueError, match="multiple of the sub-group"):
        cm.reduce(cm.Layout(2, 4, "f32", "matrix_acc", 4), np.zeros((2, 4)), "add", "row")


def test_scale_construct_componentwise_cast_use():
    L = cm.Layout(16, 3, "f16", "matrix_acc", 16)
    m = cm.construct(L, np.array([1.5, -2.0], np.float16))
    assert m.shape == (2, 16, L.J) and (m[1] == -2).all()  # padding too
    s = cm.scale(np.array([2, 3], np.float16), m, "f16")
    assert (s[0] == 3).all() and (s[1] == -6).all()
    a = np.full((16, 3), 2048, np.float16)
    r = cm.componentwise("add", a, np.ones((16, 3), np.float16), "f16")
    assert (r == 2048).all()  # 2049 rounds to even in f16
    cm.cast_use("matrix_acc", "matrix_b")
    cm.cast_use("matrix_a", "matrix_a")
    with pytest.raises(ValueError, match="not allowed"):
        cm.cast_use("matrix_a", "matrix_acc")
    i, j = cm.apply_indices(L)
    assert i.dtype == np.int32 and i[5, 2] == 5 and j[5, 2] == 2
    L4 = cm.Layout(4, 3, "f16", "matrix_acc", 16)  # J = 4: one padding column
    r = cm.apply_result(L4, np.full((2, 4, L4.J), 9, np.float16))
    assert L4.J == 4 and (r[..., :3] == 9).all() and (r[..., 3] == 0).all()


@given(st.integers(0, 2 ** 32 - 1))
def test_complex_mul_add_other_order_within_bound(seed):
    rng = np.random.default_rng(seed)
    K = 8

    def shape(*s):
        return (rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(np.complex64)

    A, B, C = shape(16, K), shape(K, 4), shape(16, 4)
    D = cm.mul_add(A, B, C, "c32", "c32", "c32", "c32")
    # tinytc v0.4.0's order: C + Σ A·Re(B), Σ A·Im(B) apart, then + i·(the second)
    re, im = C.copy(), np.zeros_like(C)
    for k in range(K):
        re = (re + A[:, k:k + 1] * B[k:k + 1, :].real.astype(np.complex64)).astype(np.complex64)
        im = (im + A[:, k:k + 1] * B[k:k + 1, :].imag.astype(np.complex64)).astype(np.complex64)
    other = (re + im * np.complex64(1j)).astype(np.complex64)
    exact = A.astype(np.complex128) @ B.astype(np.complex128) + C
    bound = cm.mul_add_bound(A, B, C, "c32", "c32")
    assert (np.abs(D - exact) <= bound).all()
    assert (np.abs(other - exact) <= bound).all()
