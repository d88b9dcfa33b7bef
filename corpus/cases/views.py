"""Views (subview, expand, fuse, views of views), size, load/store, alloca, lifetime_stop,
barrier, group_id and group_size. Each case states its reference with NumPy indexing:
column-major views are written out as explicit index arithmetic."""

from __future__ import annotations

import numpy as np

from corpus.cases.model import ValidCase
from corpus.cases.util import data, outputs, rng_for, tags


def _case(name, source, args, scalars, expected, instr, types, layouts, groups=None):
    return ValidCase("views", name, source, args, outputs(args, scalars, **expected),
                     tags(instr, types, layouts), groups=groups)


def subview_static() -> ValidCase:
    rng = rng_for("subview_static")
    a = data(rng, "f32", (8, 6))
    src = """func @k(%A: memref<f32x8x6>, %B: memref<f32x3x2>) {
  %v = subview %A[2:3, 1:2] : memref<f32x8x6>
  axpby.n 1.0, %v, 0.0, %B : f32, memref<f32x3x2,strided<1,8>>, f32, memref<f32x3x2>
}
"""
    args = {"A": a, "B": np.zeros((3, 2), np.float32)}
    return _case("subview_static", src, args, (), {"B": a[2:5, 1:3]},
                 ["subview", "axpby"], "f32", ["canonical", "strided"])


def subview_dynamic() -> ValidCase:
    rng = rng_for("subview_dynamic")
    a = data(rng, "f64", (7, 9))
    src = """func @k(%A: memref<f64x7x9>, %o: index, %n: index, %B: memref<f64x?x4>) {
  %v = subview %A[%o:%n, 5:?] : memref<f64x7x9>
  axpby.n 1.0, %v, 0.0, %B : f64, memref<f64x?x4,strided<1,7>>, f64, memref<f64x?x4>
}
"""
    args = {"A": a, "o": np.asarray(2, np.int64), "n": np.asarray(3, np.int64),
            "B": np.zeros((3, 4))}
    return _case("subview_dynamic", src, args, ("o", "n"), {"B": a[2:5, 5:9]},
                 ["subview", "axpby"], "f64", ["canonical", "dynshape", "strided"])


def subview_rank_reduce() -> ValidCase:
    rng = rng_for("subview_rank_reduce")
    a = data(rng, "i32", (5, 6, 3))
    src = """func @k(%A: memref<i32x5x6x3>, %B: memref<i32x6x3>, %c: memref<i32x5>) {
  %r = subview %A[4, :, :] : memref<i32x5x6x3>
  axpby.n 1, %r, 0, %B : i32, memref<i32x6x3,strided<5,30>>, i32, memref<i32x6x3>
  %k = subview %A[:, 2, 1] : memref<i32x5x6x3>
  axpby.n 1, %k, 0, %c : i32, memref<i32x5>, i32, memref<i32x5>
}
"""
    args = {"A": a, "B": np.zeros((6, 3), np.int32), "c": np.zeros(5, np.int32)}
    return _case("subview_rank_reduce", src, args, (), {"B": a[4], "c": a[:, 2, 1]},
                 ["subview", "axpby"], "i32", ["canonical", "strided"])


def subview_of_subview() -> ValidCase:
    rng = rng_for("subview_of_subview")
    a = data(rng, "f32", (10, 8))
    # %two is A[4:6, 3:6]; .t writes its transpose into B.
    src = """func @k(%A: memref<f32x10x?>, %B: memref<f32x3x2>) {
  %one = subview %A[1:8, 2:?] : memref<f32x10x?>
  %two = subview %one[3:2, 1:3] : memref<f32x8x?,strided<1,10>>
  axpby.t 1.0, %two, 0.0, %B : f32, memref<f32x2x3,strided<1,10>>, f32, memref<f32x3x2>
}
"""
    args = {"A": a, "B": np.zeros((3, 2), np.float32)}
    return _case("subview_of_subview", src, args, (), {"B": a[4:6, 3:6].T},
                 ["subview", "axpby"], "f32", ["dynshape", "strided"])


def expand_static() -> ValidCase:
    rng = rng_for("expand_static")
    a = data(rng, "f32", (8, 3))
    # expand mode 0 (size 8) into 2x4: element (i0, i1, j) is A[i0 + 2*i1, j].
    src = """func @k(%A: memref<f32x8x3>, %B: memref<f32x4x3>) {
  %e = expand %A[0->2x4] : memref<f32x8x3>
  %s = subview %e[1, :, :] : memref<f32x2x4x3>
  axpby.n 1.0, %s, 0.0, %B : f32, memref<f32x4x3,strided<2,8>>, f32, memref<f32x4x3>
}
"""
    args = {"A": a, "B": np.zeros((4, 3), np.float32)}
    expected = np.array([[a[1 + 2 * i1, j] for j in range(3)] for i1 in range(4)])
    return _case("expand_static", src, args, (), {"B": expected},
                 ["expand", "subview", "axpby"], "f32", ["canonical", "strided"])


def expand_dynamic() -> ValidCase:
    rng = rng_for("expand_dynamic")
    a = data(rng, "i64", (3, 12))
    # mode 1 (size ?=12) into %p x ?: with p=4 the shape is 3x4x3, (i, j0, j1) = A[i, j0+4*j1].
    src = """func @k(%A: memref<i64x3x?>, %p: index, %B: memref<i64x3x?>) {
  %e = expand %A[1->%p x ?] : memref<i64x3x?>
  %s = subview %e[:, 1, :] : memref<i64x3x?x?>
  axpby.n 1, %s, 0, %B : i64, memref<i64x3x?,strided<1,?>>, i64, memref<i64x3x?>
}
"""
    args = {"A": a, "p": np.asarray(4, np.int64), "B": np.zeros((3, 3), np.int64)}
    expected = np.array([[a[i, 1 + 4 * j1] for j1 in range(3)] for i in range(3)])
    return _case("expand_dynamic", src, args, ("p",), {"B": expected},
                 ["expand", "subview", "axpby"], "i64", ["dynshape", "dynstride"])


def expand_strided() -> ValidCase:
    rng = rng_for("expand_strided")
    a = data(rng, "f64", (6, 2))
    # A has strides (2, 13): expand mode 0 into ?x3 gives strides (2, 4, 13).
    src = """func @k(%A: memref<f64x6x2,strided<2,13>>, %B: memref<f64x2x3x2>) {
  %e = expand %A[0->?x3] : memref<f64x6x2,strided<2,13>>
  foreach %j = 0, 2 {
    %s = subview %e[:, :, %j] : memref<f64x2x3x2,strided<2,4,13>>
    %d = subview %B[:, :, %j] : memref<f64x2x3x2>
    for %i0 = 0, 2 {
      for %i1 = 0, 3 {
        %x = load %s[%i0, %i1] : memref<f64x2x3,strided<2,4>>
        store %x, %d[%i0, %i1] : memref<f64x2x3>
      }
    }
  }
}
"""
    args = {"A": a, "B": np.zeros((2, 3, 2))}
    expected = np.array([[[a[i0 + 2 * i1, j] for j in range(2)] for i1 in range(3)]
                         for i0 in range(2)])
    return _case("expand_strided", src, args, (), {"B": expected},
                 ["expand", "subview", "foreach", "for", "load", "store"], "f64",
                 ["strided", "canonical"])


def fuse_static() -> ValidCase:
    rng = rng_for("fuse_static")
    a = data(rng, "i32", (2, 4, 3))
    src = """func @k(%A: memref<i32x2x4x3>, %B: memref<i32x8x3>) {
  %f = fuse %A[0,1] : memref<i32x2x4x3>
  axpby.n 1, %f, 0, %B : i32, memref<i32x8x3>, i32, memref<i32x8x3>
}
"""
    args = {"A": a, "B": np.zeros((8, 3), np.int32)}
    expected = np.array([[a[i % 2, i // 2, j] for j in range(3)] for i in range(8)])
    return _case("fuse_static", src, args, (), {"B": expected}, ["fuse", "axpby"], "i32",
                 "canonical")


def fuse_dynamic() -> ValidCase:
    rng = rng_for("fuse_dynamic")
    a = data(rng, "f32", (3, 2, 2, 4))
    # modes 1..2 of a dynamically strided memref (strides given canonical at run time)
    src = """func @k(%A: memref<f32x3x2x2x4,strided<1,?,?,?>>, %B: memref<f32x3x4x4>) {
  %f = fuse %A[1,2] : memref<f32x3x2x2x4,strided<1,?,?,?>>
  %s = subview %f[:, :, 3] : memref<f32x3x4x4,strided<1,?,?>>
  %d = subview %B[:, :, 3] : memref<f32x3x4x4>
  axpby.n 1.0, %s, 0.0, %d : f32, memref<f32x3x4,strided<1,?>>, f32, memref<f32x3x4>
}
"""
    b = data(rng, "f32", (3, 4, 4))
    args = {"A": a, "A.strides": np.array([1, 3, 6, 12], np.int64), "B": b}
    expected = b.copy()
    for i in range(3):
        for k in range(4):
            expected[i, k, 3] = a[i, k % 2, k // 2, 3]
    return _case("fuse_dynamic", src, args, (), {"B": expected},
                 ["fuse", "subview", "axpby"], "f32", ["dynstride", "canonical"])


def view_chain() -> ValidCase:
    """fuse(expand(subview)): a view of a view of a view."""
    rng = rng_for("view_chain")
    a = data(rng, "f64", (12, 5))
    src = """func @k(%A: memref<f64x12x5>, %B: memref<f64x6x2>) {
  %s = subview %A[2:6, 1:4] : memref<f64x12x5>
  %e = expand %s[1->2x2] : memref<f64x6x4,strided<1,12>>
  %t = subview %e[:, 1, :] : memref<f64x6x2x2,strided<1,12,24>>
  %f = fuse %e[1,2] : memref<f64x6x2x2,strided<1,12,24>>
  %u = subview %f[:, 3] : memref<f64x6x4,strided<1,12>>
  axpby.n 1.0, %t, 0.0, %B : f64, memref<f64x6x2,strided<1,24>>, f64, memref<f64x6x2>
  %b0 = subview %B[:, 0] : memref<f64x6x2>
  axpby.n 1.0, %u, 1.0, %b0 : f64, memref<f64x6>, f64, memref<f64x6>
}
"""
    args = {"A": a, "B": np.zeros((6, 2))}
    s = a[2:8, 1:5]
    # %e[i, j0, j1] = s[i, j0 + 2*j1]; %t = %e[:, 1, :] -> t[i, j1] = s[i, 1 + 2*j1]
    t = np.array([[s[i, 1 + 2 * j1] for j1 in range(2)] for i in range(6)])
    # %f[i, k] = %e[i, k % 2, k // 2] -> u[i] = f[i, 3] = s[i, 1 + 2*1]
    expected = t.copy()
    expected[:, 0] += s[:, 3]
    return _case("view_chain", src, args, (), {"B": expected},
                 ["subview", "expand", "fuse", "axpby"], "f64", ["canonical", "strided"])


def size_and_scalars() -> ValidCase:
    src = """func @k(%A: memref<f32x?x5x?>, %out: memref<indexx4>, %z: memref<f32>) {
  %s0 = size %A[0] : memref<f32x?x5x?>
  %s1 = size %A[1] : memref<f32x?x5x?>
  %s2 = size %A[2] : memref<f32x?x5x?>
  %v = subview %A[1:?, :, 1:1] : memref<f32x?x5x?>
  %s3 = size %v[0] : memref<f32x?x5x1,strided<1,?,?>>
  store %s0, %out[0] : memref<indexx4>
  store %s1, %out[1] : memref<indexx4>
  store %s2, %out[2] : memref<indexx4>
  store %s3, %out[3] : memref<indexx4>
  %x = load %A[2, 4, 1] : memref<f32x?x5x?>
  %y = load %z[] : memref<f32>
  %w = arith.add %x, %y : f32
  store %w, %z[] : memref<f32>
}
"""
    rng = rng_for("size_and_scalars")
    a = data(rng, "f32", (3, 5, 2))
    z = np.asarray(1.25, np.float32)
    args = {"A": a, "out": np.zeros(4, np.int64), "z": z}
    return _case("size_and_scalars", src, args, (),
                 {"out": np.array([3, 5, 2, 2]), "z": a[2, 4, 1] + z},
                 ["size", "subview", "load", "store", "arith.add"], ["f32", "index"],
                 ["dynshape", "canonical"])


def group_id_size() -> ValidCase:
    src = """func @k(%ids: memref<indexx2x?>) {
  %g = group_id
  %n = group_size
  store %g, %ids[0, %g] : memref<indexx2x?>
  barrier
  store %n, %ids[1, %g] : memref<indexx2x?>
}
"""
    args = {"ids": np.full((2, 6), -1, np.int64)}
    expected = np.array([[0, 1, 2, 3, -1, -1], [4, 4, 4, 4, -1, -1]])
    return _case("group_id_size", src, args, (), {"ids": expected},
                 ["group_id", "group_size", "store", "barrier"], "index", "dynshape",
                 groups=4)


# The spec's sample kernel, verbatim (tests compare spans against this exact text).
SAMPLE_KERNEL = """func @fused_kernel(%alpha: f32,
                   %A: group<memref<f32x16x8>>,
                   %B: memref<f32x8x8>,
                   %C: memref<f32x8x16>,
                   %D: memref<f32x16x16x?>) {
  %0 = group_id
  %1 = load %A[%0] : group<memref<f32x16x8>> ; Returns memref<f32x16x8>
  %2 = subview %D[:,:,%0] : memref<f32x16x16x?> ; Returns memref<f32x16x16>
  %tmp0 = alloca -> memref<f32x16x8>
  gemm.n.t 1.0, %1, %B, 0.0, %tmp0
    : f32, memref<f32x16x8>, memref<f32x8x8>, f32, memref<f32x16x8>
  gemm.n.n %alpha, %tmp0, %C, 1.0, %2
    : f32, memref<f32x16x8>, memref<f32x8x16>, f32, memref<f32x16x16>
}
"""


def fused_kernel_sample() -> ValidCase:
    """The spec's sample: D_g := alpha * (A_g B^T) C + D_g, through an alloca temporary."""
    rng = rng_for("fused_kernel_sample")
    groups = 3
    a = data(rng, "f32", (groups, 16, 8))
    b = data(rng, "f32", (8, 8))
    c = data(rng, "f32", (8, 16))
    d = data(rng, "f32", (16, 16, groups))
    src = SAMPLE_KERNEL
    alpha = np.asarray(0.5, np.float32)
    args = {"alpha": alpha, "A": a, "B": b, "C": c, "D": d}
    exp = d.astype(np.float64)
    for g in range(groups):
        exp[:, :, g] += 0.5 * (a[g].astype(np.float64) @ b.T.astype(np.float64)) @ c
    return _case("fused_kernel_sample", src, args, ("alpha",), {"D": exp},
                 ["alloca", "gemm", "load", "subview", "group_id"], "f32",
                 ["canonical", "dynshape"], groups=groups)


def alloca_lifetime() -> ValidCase:
    """Two allocas with lifetime_stop between them; values flow through both."""
    rng = rng_for("alloca_lifetime")
    a = data(rng, "f64", (4, 3))
    src = """func @k(%A: memref<f64x4x3>, %B: memref<f64x3x4>) {
  %t = alloca -> memref<f64x4x3>
  axpby.n 2.0, %A, 0.0, %t : f64, memref<f64x4x3>, f64, memref<f64x4x3>
  axpby.t 1.0, %t, 0.0, %B : f64, memref<f64x4x3>, f64, memref<f64x3x4>
  lifetime_stop %t
  %u = alloca -> memref<f64x3x4,strided<1,5>>
  axpby.n 1.0, %B, 0.0, %u : f64, memref<f64x3x4>, f64, memref<f64x3x4,strided<1,5>>
  barrier
  axpby.n 1.0, %u, 1.0, %B : f64, memref<f64x3x4,strided<1,5>>, f64, memref<f64x3x4>
}
"""
    args = {"A": a, "B": np.zeros((3, 4))}
    return _case("alloca_lifetime", src, args, (), {"B": 4.0 * a.T},
                 ["alloca", "lifetime_stop", "axpby", "barrier"], "f64",
                 ["canonical", "strided"])


def alloca_in_loop() -> ValidCase:
    """An alloca inside a for body: a fresh temporary each iteration, written before read."""
    rng = rng_for("alloca_in_loop")
    a = data(rng, "f32", (4, 4))
    src = """func @k(%A: memref<f32x4x4>, %acc: memref<f32x4x4>) {
  for %i = 0, 3 {
    %t = alloca -> memref<f32x4x4>
    gemm.n.n 1.0, %A, %acc, 0.0, %t
      : f32, memref<f32x4x4>, memref<f32x4x4>, f32, memref<f32x4x4>
    axpby.n 1.0, %t, 0.0, %acc : f32, memref<f32x4x4>, f32, memref<f32x4x4>
  }
}
"""
    acc = np.eye(4, dtype=np.float32)
    args = {"A": a, "acc": acc}
    exp = np.linalg.matrix_power(a.astype(np.float64), 3)
    return _case("alloca_in_loop", src, args, (), {"acc": exp},
                 ["alloca", "for", "gemm", "axpby"], "f32", "canonical")


def cases() -> list[ValidCase]:
    return [subview_static(), subview_dynamic(), subview_rank_reduce(), subview_of_subview(),
            expand_static(), expand_dynamic(), expand_strided(), fuse_static(), fuse_dynamic(),
            view_chain(), size_and_scalars(), group_id_size(), fused_kernel_sample(),
            alloca_lifetime(), alloca_in_loop()]
