"""Loads, stores and views (subview, expand, fuse, size) on canonical, strided and dynamic
layouts, and group arguments with offsets and members of different sizes; every expected value
is computed here with NumPy slicing."""

from __future__ import annotations

import numpy as np
import pytest

import tlinterp


def copy_kernel(arg_decls: str, setup: str, view: str, vtype: str, order: int) -> str:
    """A kernel that copies view `view` (order `order`) into %out in column-major order,
    looping to its run-time sizes."""
    lines = [f"func @k({arg_decls}, %out: memref<i32x?>) {{", setup]
    for k in range(order):
        lines.append(f"  %n{k} = size {view}[{k}] : {vtype}")
    # linear index: i0 + n0*(i1 + n1*(i2 ...))
    for k in reversed(range(order)):
        lines.append("  " * (order - k) + f"for %i{k} = 0, %n{k} {{")
    ind = "  " * (order + 1)
    lin = f"%i{order - 1}"
    for k in reversed(range(order - 1)):
        lines.append(f"{ind}%m{k} = arith.mul {lin}, %n{k} : index")
        lines.append(f"{ind}%l{k} = arith.add %m{k}, %i{k} : index")
        lin = f"%l{k}"
    idx = ", ".join(f"%i{k}" for k in range(order))
    lines.append(f"{ind}%x = load {view}[{idx}] : {vtype}")
    lines.append(f"{ind}store %x, %out[{lin}] : memref<i32x?>")
    for k in range(order):
        lines.append("  " * (order - k) + "}")
    lines.append("}")
    return "\n".join(lines)


def run_copy(src, args, size):
    out = tlinterp.run(src, {**args, "out": np.full(size, -1, np.int32)})
    return out["out"]


A = np.arange(48, dtype=np.int32).reshape(8, 6) * 3 + 1


@pytest.mark.parametrize("setup, view, vtype, expected", [
    ("  %v = subview %A[2:3, 4:?] : memref<i32x8x6>", "%v", "memref<i32x3x2,strided<1,8>>",
     A[2:5, 4:6]),
    ("  %v = subview %A[%p:3, %q:%q] : memref<i32x8x6>", "%v", "memref<i32x3x?,strided<1,8>>",
     A[1:4, 2:4]),
    ("  %v = subview %A[%p, :] : memref<i32x8x6>", "%v", "memref<i32x6,strided<8>>", A[1, :]),
    ("  %v = subview %A[:, %q] : memref<i32x8x6>", "%v", "memref<i32x8>", A[:, 2]),
    ("  %v = subview %A[5:1, 3:1] : memref<i32x8x6>", "%v",
     "memref<i32x1x1,strided<1,8>>", A[5:6, 3:4]),
    ("  %v = expand %A[1 -> 2x3] : memref<i32x8x6>", "%v", "memref<i32x8x2x3>",
     A.reshape(8, 3, 2).transpose(0, 2, 1)),
    ("  %v = expand %A[0 -> ?x4] : memref<i32x8x6>", "%v", "memref<i32x2x4x6>",
     A.reshape(4, 2, 6, order="F").transpose(1, 0, 2) if False else
     A.reshape(2, 4, 6, order="F")),
    ("  %v = expand %A[1 -> %q x ?] : memref<i32x8x6>", "%v", "memref<i32x8x?x?>",
     A.reshape(8, 2, 3, order="F")),
    ("  %v = fuse %A[0, 1] : memref<i32x8x6>", "%v", "memref<i32x48>", A.reshape(48, order="F")),
    ("  %s = subview %A[:, 1:4] : memref<i32x8x6>\n"
     "  %v = fuse %s[0, 1] : memref<i32x8x4,strided<1,8>>", "%v", "memref<i32x32>",
     A[:, 1:5].reshape(32, order="F")),
])
def test_views_of_a_canonical_matrix(setup, view, vtype, expected):
    order = expected.ndim
    src = copy_kernel("%A: memref<i32x8x6>, %p: index, %q: index", setup, view, vtype, order)
    got = run_copy(src, {"A": A, "p": np.int64(1), "q": np.int64(2)}, expected.size)
    np.testing.assert_array_equal(got, expected.reshape(-1, order="F"))


def test_static_non_canonical_strides_are_honoured():
    t = "memref<i32x5x3,strided<2,11>>"
    src = copy_kernel(f"%A: {t}", "", "%A", t, 2)
    a = np.arange(15, dtype=np.int32).reshape(5, 3)
    np.testing.assert_array_equal(run_copy(src, {"A": a}, 15), a.reshape(-1, order="F"))


def test_dynamic_strides_from_the_arguments_file():
    t = "memref<i32x?x?,strided<?,?>>"
    src = copy_kernel(f"%A: {t}", "  %v = subview %A[1:?, 1:2] : " + t, "%v",
                      "memref<i32x?x2,strided<?,?>>", 2)
    a = np.arange(20, dtype=np.int32).reshape(5, 4) - 7
    got = run_copy(src, {"A": a, "A.strides": np.array([3, 17], np.int64)}, 8)
    np.testing.assert_array_equal(got, a[1:, 1:3].reshape(-1, order="F"))


def test_dynamic_fuse_and_expand_of_strided_views():
    t = "memref<i32x?x?x?>"
    setup = ("  %f = fuse %A[0, 1] : memref<i32x?x?x?>\n"
             "  %e = expand %f[0 -> 3x?] : memref<i32x?x?,strided<1,?>>")
    src = copy_kernel(f"%A: {t}", setup, "%e", "memref<i32x3x?x?,strided<1,3,?>>", 3)
    a = np.arange(3 * 4 * 2, dtype=np.int32).reshape(3, 4, 2)
    got = run_copy(src, {"A": a}, a.size)
    np.testing.assert_array_equal(got, a.reshape(-1, order="F"))


def test_store_through_views_and_per_group_subviews():
    src = """
func @k(%D: memref<f64x4x3x?>) {
  %g = group_id
  %v = subview %D[:, :, %g] : memref<f64x4x3x?>
  %w = subview %v[1:2, 2] : memref<f64x4x3>
  %x = cast %g : index -> f64
  store %x, %w[1] : memref<f64x2,strided<1>>
}"""
    d = np.zeros((4, 3, 5))
    out = tlinterp.run(src, {"D": d}, groups=5)
    expect = np.zeros((4, 3, 5))
    expect[2, 2, :] = np.arange(5)
    np.testing.assert_array_equal(out["D"], expect)


GROUP_SRC = """
func @k(%G: group<memref<i32x?x?>, offset: ?>, %s: memref<i32x?>) {
  %g = group_id
  %m = load %G[%g] : group<memref<i32x?x?>, offset: ?>
  %r = size %m[0] : memref<i32x?x?>
  %c = size %m[1] : memref<i32x?x?>
  %k = arith.mul %r, %c : index
  %kk = cast %k : index -> i32
  store %kk, %s[%g] : memref<i32x?>
  for %j = 0, %c {
    for %i = 0, %r {
      %x = load %m[%i, %j] : memref<i32x?x?>
      %y = arith.mul %x, 2 : i32
      store %y, %m[%i, %j] : memref<i32x?x?>
    }
  }
}"""


def test_group_members_of_different_sizes_with_a_dynamic_offset():
    members = [np.arange(6, dtype=np.int32).reshape(2, 3), np.arange(20, dtype=np.int32)
               .reshape(5, 4) - 3, np.full((1, 1), 9, np.int32)]
    args = {f"G.{i}": m for i, m in enumerate(members)}
    args.update({"G.offset": np.int64(3), "s": np.zeros(3, np.int32)})
    out = tlinterp.run(GROUP_SRC, args)
    for i, m in enumerate(members):
        np.testing.assert_array_equal(out[f"G.{i}"], m * 2)
    assert out["s"].tolist() == [6, 20, 1]


def test_group_with_static_offset_as_one_array():
    src = """
func @k(%G: group<memref<i64x4>, offset: 2>, %o: memref<i64x?>) {
  %g = group_id
  %m = load %G[%g] : group<memref<i64x4>, offset: 2>
  %a = load %m[3] : memref<i64x4>
  %b = load %m[0] : memref<i64x4>
  %c = arith.sub %a, %b : i64
  store %c, %o[%g] : memref<i64x?>
}"""
    g = np.arange(20, dtype=np.int64).reshape(5, 4) ** 2
    out = tlinterp.run(src, {"G": g, "o": np.zeros(5, np.int64)})
    np.testing.assert_array_equal(out["o"], g[:, 3] - g[:, 0])
    np.testing.assert_array_equal(out["G"], g)


def test_uniform_member_index_and_group_size():
    src = """
func @k(%G: group<memref<i32x3>>, %o: memref<indexx?>) {
  %g = group_id
  %n = group_size
  %m = load %G[1] : group<memref<i32x3>>
  %x = load %m[2] : memref<i32x3>
  %y = cast %x : i32 -> index
  %z = arith.add %y, %n : index
  store %z, %o[%g] : memref<indexx?>
}"""
    g = np.arange(12, dtype=np.int32).reshape(4, 3)
    out = tlinterp.run(src, {"G": g, "o": np.zeros(4, np.int64)})
    assert out["o"].tolist() == [5 + 4] * 4
