"""Runnable v0.4 cooperative-matrix kernels beyond corpus/cases/v04/core.py: checked loads
and stores at the edges of smaller (dynamic-shape, strided) memrefs with and without transposes,
construct, the atomic load/store/add/max/min from two work-groups, reduce_min, prefetch, and
mul_add in mixed precision (i8 x i8 -> i32, bf16 x bf16 -> f32, f16 x f16 -> f16; K = 8 and a
matrix-engine K). One sub-group
of SG per work-group, matrices of M = SG rows and 8 columns; expected results are plain Python
loops over lists."""

from __future__ import annotations

import numpy as np

from corpus.cases.model import ValidCase
from corpus.cases.util import rng_for
from corpus.cases.v04.core import SG1, M, _v, bf16_bits, bf16_val

ACC = f"coopmatrix<f32 x {M} x 8, matrix_acc>"
MN = f"{M} x 8"  # the shape of the matrices' memrefs


def _eighths(name: str, shape, lo: int = -16, hi: int = 16) -> list:
    rng = rng_for(name)
    rows, cols = shape
    flat = [int(v) / 8 for v in rng.integers(lo, hi + 1, rows * cols)]
    return [flat[r * cols:(r + 1) * cols] for r in range(rows)]


def _get(m: list, i: int, j: int) -> float:
    """m[i][j], or 0 outside m (what a checked load reads there)."""
    return m[i][j] if i < len(m) and j < len(m[0]) else 0.0


def checked() -> list[ValidCase]:
    src = f"""func @k(%A: memref<f32 x ? x ?>, %B: memref<f32 x 5 x 8, strided<1, 6>>,
           %C: memref<f32 x {M} x 6>,
           %R: memref<f32 x {MN}>, %S: memref<f32 x 5 x 6>,
           %U: memref<f32 x 8 x {M}, strided<1, 10>>,
           %V: memref<f32 x {MN}>, %W: memref<f32 x {MN}>) {SG1} {{
    parallel {{
        %c0 = constant 0 : index
        %a = cooperative_matrix_load.both_checked %A[%c0, %c0] : {ACC}
        cooperative_matrix_store %a, %R[%c0, %c0]
        %t = cooperative_matrix_load.t.both_checked %A[%c0, %c0] : {ACC}
        cooperative_matrix_store.both_checked %t, %S[%c0, %c0]
        cooperative_matrix_store.t %a, %U[%c0, %c0]
        %b = cooperative_matrix_load.rows_checked %B[%c0, %c0] : {ACC}
        cooperative_matrix_store %b, %V[%c0, %c0]
        %c = cooperative_matrix_load.cols_checked %C[%c0, %c0] : {ACC}
        cooperative_matrix_store %c, %W[%c0, %c0]
    }}
}}
"""
    a = _eighths("v04_cm_chk_A", (5, 6))
    b = _eighths("v04_cm_chk_B", (5, 8))
    c = _eighths("v04_cm_chk_C", (M, 6))
    r = [[_get(a, i, j) for j in range(8)] for i in range(M)]
    t = [[_get(a, j, i) for j in range(8)] for i in range(M)]  # the transposed load
    s = [[t[i][j] for j in range(6)] for i in range(5)]  # stored where S has elements
    u = [[r[j][i] for j in range(M)] for i in range(8)]
    args = {"A": np.array(a, np.float32), "B": np.array(b, np.float32),
            "C": np.array(c, np.float32), "R": np.full((M, 8), 9.0, np.float32),
            "S": np.full((5, 6), 9.0, np.float32), "U": np.full((8, M), 9.0, np.float32),
            "V": np.full((M, 8), 9.0, np.float32), "W": np.full((M, 8), 9.0, np.float32)}
    exp = {"R": r, "S": s, "U": u, "V": [[_get(b, i, j) for j in range(8)] for i in range(M)],
           "W": [[_get(c, i, j) for j in range(8)] for i in range(M)]}
    case = _v("coopmatrix_checked_edges", src, args, exp,
              ["cooperative_matrix_load", "cooperative_matrix_store", "parallel", "constant"],
              ["f32"])
    return [case]


def checked_transposed() -> list[ValidCase]:
    """The checked flags with transposes and a position other than (0, 0), as v0.4 defines
    them: `.t.rows_checked` tests the memref's column (y + i < s2), `.t.cols_checked` its row
    (x + j < s1); the unchecked direction stays in bounds."""
    src = f"""func @k(%M: memref<f32 x 9 x 5>, %N: memref<f32 x 6 x {M}>, %P: memref<f32 x 5 x 8>,
           %Q: memref<f32 x {M} x 3>, %R: memref<f32 x {MN}>) {SG1} {{
    parallel {{
        %c0 = constant 0 : index
        %c1 = constant 1 : index
        %a = cooperative_matrix_load.t.rows_checked %M[%c1, %c0] : {ACC}
        cooperative_matrix_store.t.cols_checked %a, %N[%c0, %c0]
        cooperative_matrix_store.rows_checked %a, %P[%c0, %c0]
        %b = cooperative_matrix_load.cols_checked %Q[%c0, %c0] : {ACC}
        cooperative_matrix_store %b, %R[%c0, %c0]
    }}
}}
"""
    m = _eighths("v04_cm_chkt_M", (9, 5))
    q = _eighths("v04_cm_chkt_Q", (M, 3))
    a = [[m[1 + j][i] if i < 5 else 0.0 for j in range(8)] for i in range(M)]
    args = {"M": np.array(m, np.float32), "N": np.full((6, M), 9.0, np.float32),
            "P": np.full((5, 8), 9.0, np.float32), "Q": np.array(q, np.float32),
            "R": np.full((M, 8), 9.0, np.float32)}
    exp = {"N": [[a[c][r] for c in range(M)] for r in range(6)],
           "P": [[a[i][j] for j in range(8)] for i in range(5)],
           "R": [[_get(q, i, j) for j in range(8)] for i in range(M)]}
    return [_v("coopmatrix_checked_transposed", src, args, exp,
               ["cooperative_matrix_load", "cooperative_matrix_store"], ["f32"])]


def atomics() -> list[ValidCase]:
    """From 2 work-groups: atomic_add of a constructed matrix, atomic_max/min of a loaded one,
    atomic_load then atomic_store (both groups store the same values); reduce_min rows and
    columns (each group its own column/row of R/Q); a prefetch (no effect on results)."""
    src = f"""func @k(%A: memref<f32 x {MN}>, %C: memref<f32 x {MN}>, %M: memref<f32 x {MN}>,
           %N: memref<f32 x {MN}>, %K: memref<f32 x {MN}>, %L: memref<f32 x {MN}>,
           %R: memref<f32 x {M} x 2>, %Q: memref<f32 x 2 x 8>) {SG1} {{
    %g = group_id.x : index
    parallel {{
        %c0 = constant 0 : index
        cooperative_matrix_prefetch 1, %A[%c0, %c0], {M}, 8
        %half = constant 0.5 : f32
        %z = cooperative_matrix_construct %half : {ACC}
        %o = cooperative_matrix_atomic_add %z, %C[%c0, %c0] : {ACC}
        %a = cooperative_matrix_load %A[%c0, %c0] : {ACC}
        %p = cooperative_matrix_atomic_max %a, %M[%c0, %c0] : {ACC}
        %q = cooperative_matrix_atomic_min.work_group.relaxed %a, %N[%c0, %c0] : {ACC}
        %k = cooperative_matrix_atomic_load %K[%c0, %c0] : {ACC}
        cooperative_matrix_atomic_store %k, %L[%c0, %c0]
        %r = cooperative_matrix_reduce_min.row %a : coopmatrix<f32 x {M} x 1, matrix_acc>
        cooperative_matrix_store %r, %R[%c0, %g]
        %s = cooperative_matrix_reduce_min.column %a : coopmatrix<f32 x 1 x 8, matrix_acc>
        cooperative_matrix_store %s, %Q[%g, %c0]
    }}
}}
"""
    groups = 2
    a, c, m, n, k = (_eighths(f"v04_cm_at_{x}", (M, 8)) for x in "ACMNK")
    args = {"A": a, "C": c, "M": m, "N": n, "K": k, "L": [[0.0] * 8 for _ in range(M)],
            "R": [[0.0] * 2 for _ in range(M)], "Q": [[0.0] * 8] * 2}
    args = {key: np.array(v, np.float32) for key, v in args.items()}
    exp = {"C": [[c[i][j] + groups * 0.5 for j in range(8)] for i in range(M)],
           "M": [[max(m[i][j], a[i][j]) for j in range(8)] for i in range(M)],
           "N": [[min(n[i][j], a[i][j]) for j in range(8)] for i in range(M)],
           "L": k, "R": [[min(a[i])] * groups for i in range(M)],
           "Q": [[min(a[i][j] for i in range(M)) for j in range(8)]] * groups}
    return [_v("coopmatrix_atomics_construct", src, args, exp,
               ["cooperative_matrix_prefetch", "cooperative_matrix_construct",
                "cooperative_matrix_atomic_add", "cooperative_matrix_atomic_max",
                "cooperative_matrix_atomic_min", "cooperative_matrix_atomic_load",
                "cooperative_matrix_atomic_store", "cooperative_matrix_load",
                "cooperative_matrix_reduce_min", "cooperative_matrix_store", "parallel",
                "constant", "group_id"], ["f32"], groups=groups)]


# K of the mixed-precision products: 8, and the K of a hardware matrix-engine (DPAS) shape
# with M = 16 rows and N = 8 columns (i8: K = 32, f16 and bf16: K = 16), which a compiler for
# such an engine may emit differently (tinytc v0.4.0 on pvc: inline DPAS assembly)
_MIXED_K = {"i8": (8, 32), "bf16": (8, 16), "f16": (8, 16)}


def mixed_precision() -> list[ValidCase]:
    out = []
    for (ta, tc), K in ((t, k) for t in (("i8", "i32"), ("bf16", "f32"), ("f16", "f16"))
                        for k in _MIXED_K[t[0]]):
        src = f"""func @k(%A: memref<{ta} x {M} x {K}>, %B: memref<{ta} x {K} x 8>,
           %C: memref<{tc} x {MN}>, %D: memref<{tc} x {MN}>) {SG1} {{
    parallel {{
        %c0 = constant 0 : index
        %a = cooperative_matrix_load %A[%c0, %c0] : coopmatrix<{ta} x {M} x {K}, matrix_a>
        %b = cooperative_matrix_load %B[%c0, %c0] : coopmatrix<{ta} x {K} x 8, matrix_b>
        %c = cooperative_matrix_load %C[%c0, %c0] : coopmatrix<{tc} x {MN}, matrix_acc>
        %d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<{tc} x {MN}, matrix_acc>
        cooperative_matrix_store %d, %D[%c0, %c0]
    }}
}}
"""
        if ta == "i8":
            rng = rng_for("v04_cm_mixed_i8" + (f"_k{K}" if K != 8 else ""))
            a, b, c = ([[int(v) for v in rng.integers(-100, 101, cols)] for _ in range(rows)]
                       for rows, cols in ((M, K), (K, 8), (M, 8)))
            store_ab = lambda x: np.array(x, np.int8)  # noqa: E731
            store_c = lambda x: np.array(x, np.int32)  # noqa: E731
        else:
            # eighths in [-1, 1]: every product and sum of K <= 16 is exact even in f16
            a, b, c = (_eighths(f"v04_cm_mixed_{ta}_{x}" + (f"_k{K}" if K != 8 else ""),
                                (rows, cols), -8, 8)
                       for x, rows, cols in (("a", M, K), ("b", K, 8), ("c", M, 8)))
            if ta == "bf16":
                a = [[bf16_val(bf16_bits(v)) for v in row] for row in a]
                b = [[bf16_val(bf16_bits(v)) for v in row] for row in b]
                store_ab = lambda x: np.array([[bf16_bits(v) for v in row] for row in x],  # noqa: E731
                                              np.uint16)
            else:
                store_ab = lambda x: np.array(x, np.float16)  # noqa: E731
            store_c = (lambda x: np.array(x, np.float32)) if tc == "f32" else (  # noqa: E731
                lambda x: np.array(x, np.float16))
        d = [[0] * 8 for _ in range(M)]
        for i in range(M):
            for j in range(8):
                acc = c[i][j]
                for p in range(K):
                    acc += a[i][p] * b[p][j]
                d[i][j] = acc
        args = {"A": store_ab(a), "B": store_ab(b), "C": store_c(c),
                "D": store_c([[0] * 8 for _ in range(M)])}
        name = f"coopmatrix_mul_add_{ta}_{tc}" + (f"_k{K}" if K != 8 else "")
        out.append(_v(name, src, args, {"D": d},
                      ["cooperative_matrix_load", "cooperative_matrix_mul_add",
                       "cooperative_matrix_store", "parallel", "constant"], [ta, tc]))
    return out


def cases() -> list[ValidCase]:
    return [*checked(), *checked_transposed(), *atomics(), *mixed_precision()]
