"""Group arguments: stacked members, static and dynamic (`?`) offsets, separate members of
different dynamic sizes (NAME.0, NAME.1, ...), dynamic strides; the work-group count comes
from the member count (no --groups)."""

from __future__ import annotations

import numpy as np

from corpus.cases.model import ValidCase
from corpus.cases.util import data, outputs, rng_for, tags


def _case(name, source, args, scalars, expected, instr, types, layouts, groups=None):
    return ValidCase("groups", name, source, args, outputs(args, scalars, **expected),
                     tags(["group", "load", *instr], types, layouts), groups=groups)


def stacked_axpby() -> ValidCase:
    rng = rng_for("group_stacked")
    x = data(rng, "f32", (3, 4, 3))
    y = data(rng, "f32", (3, 4, 3))
    src = """func @k(%X: group<memref<f32x4x3>>, %Y: group<memref<f32x4x3>>) {
  %g = group_id
  %x = load %X[%g] : group<memref<f32x4x3>>
  %y = load %Y[%g] : group<memref<f32x4x3>>
  axpby.n 1.5, %x, -2.0, %y : f32, memref<f32x4x3>, f32, memref<f32x4x3>
}
"""
    args = {"X": x, "Y": y}
    return _case("stacked_axpby", src, args, (), {"Y": 1.5 * x - 2.0 * y}, ["axpby"], "f32",
                 "canonical")


def static_offset() -> ValidCase:
    rng = rng_for("group_static_offset")
    x = data(rng, "i32", (4, 5))
    src = """func @k(%X: group<memref<i32x5>, offset: 3>, %s: memref<i32x4>) {
  %g = group_id
  %x = load %X[%g] : group<memref<i32x5>, offset: 3>
  %o = subview %s[%g:1] : memref<i32x4>
  %z = subview %o[0] : memref<i32x1>
  sum.n 1, %x, 0, %z : i32, memref<i32x5>, i32, memref<i32>
  %t = alloca -> memref<i32x5>
  axpby.n 1, %x, 0, %t : i32, memref<i32x5>, i32, memref<i32x5>
  hadamard_product 1, %t, %t, 1, %x : i32, memref<i32x5>, memref<i32x5>, i32, memref<i32x5>
}
"""
    args = {"X": x, "s": np.zeros(4, np.int32)}
    return _case("static_offset", src, args, (), {"X": x * x + x, "s": x.sum(axis=1)},
                 ["sum", "hadamard", "alloca", "axpby", "subview"], "i32", "canonical")


def dynamic_offset() -> ValidCase:
    rng = rng_for("group_dynamic_offset")
    a = data(rng, "f64", (2, 3, 2))
    src = """func @k(%A: group<memref<f64x?x2>, offset: ?>, %c: memref<f64x3x?>) {
  %g = group_id
  %a = load %A[%g] : group<memref<f64x?x2>, offset: ?>
  %o = subview %c[:, %g] : memref<f64x3x?>
  %b = alloca -> memref<f64x2>
  foreach %i = 0, 2 {
    %ii = cast %i : index -> i64
    %v = cast %ii : i64 -> f64
    store %v, %b[%i] : memref<f64x2>
  }
  gemv.n 1.0, %a, %b, 0.0, %o : f64, memref<f64x?x2>, memref<f64x2>, f64, memref<f64x3>
}
"""
    args = {"A": a, "A.offset": np.asarray(2, np.int64), "c": np.full((3, 2), 9.0)}
    exp = np.stack([a[g] @ np.array([0.0, 1.0]) for g in range(2)], axis=1)
    return _case("dynamic_offset", src, args, (), {"c": exp},
                 ["gemv", "alloca", "foreach", "cast", "store", "subview"], ["f64", "index"],
                 "dynshape")


def separate_members() -> ValidCase:
    rng = rng_for("group_separate")
    sizes = (2, 4, 1)
    members = [data(rng, "f32", (n, 3)) for n in sizes]
    src = """func @k(%X: group<memref<f32x?x3>>, %out: memref<f32x3x3>, %rows: memref<indexx3>) {
  %g = group_id
  %x = load %X[%g] : group<memref<f32x?x3>>
  %n = size %x[0] : memref<f32x?x3>
  store %n, %rows[%g] : memref<indexx3>
  %o = subview %out[:, %g] : memref<f32x3x3>
  sum.t 1.0, %x, 0.0, %o : f32, memref<f32x?x3>, f32, memref<f32x3>
  foreach %i = 0, %n {
    for %j = 0, 3 {
      %v = load %x[%i, %j] : memref<f32x?x3>
      %h = arith.mul %v, 0.5 : f32
      store %h, %x[%i, %j] : memref<f32x?x3>
    }
  }
}
"""
    args = {f"X.{i}": m for i, m in enumerate(members)}
    args.update({"out": np.zeros((3, 3), np.float32), "rows": np.zeros(3, np.int64)})
    exp = {f"X.{i}": 0.5 * m for i, m in enumerate(members)}
    exp["out"] = np.stack([m.sum(axis=0) for m in members], axis=1)
    exp["rows"] = np.array(sizes)
    return _case("separate_members", src, args, (), exp,
                 ["sum", "size", "store", "foreach", "for", "arith.mul", "subview"],
                 ["f32", "index"], "dynshape")


def separate_offset_dynamic() -> ValidCase:
    rng = rng_for("group_separate_offset")
    members = [data(rng, "i64", (n,)) for n in (3, 5)]
    src = """func @k(%X: group<memref<i64x?>, offset: ?>, %tot: memref<i64x2>) {
  %g = group_id
  %x = load %X[%g] : group<memref<i64x?>, offset: ?>
  %t = subview %tot[%g] : memref<i64x2>
  sum.n 2, %x, 1, %t : i64, memref<i64x?>, i64, memref<i64>
}
"""
    tot = np.array([10, -10], np.int64)
    args = {"X.0": members[0], "X.1": members[1], "X.offset": np.asarray(4, np.int64),
            "tot": tot}
    return _case("separate_offset_dynamic", src, args, (),
                 {"tot": tot + 2 * np.array([m.sum() for m in members])},
                 ["sum", "subview"], "i64", "dynshape")


def dynamic_strides() -> ValidCase:
    rng = rng_for("group_dynamic_strides")
    a = data(rng, "f32", (2, 3, 4))
    b = data(rng, "f32", (2, 4, 2))
    c = data(rng, "f32", (2, 3, 2))
    src = """func @k(%A: group<memref<f32x3x4,strided<1,?>>>, %B: group<memref<f32x4x2>>,
         %C: group<memref<f32x3x2,strided<?,?>>, offset: 1>) {
  %g = group_id
  %a = load %A[%g] : group<memref<f32x3x4,strided<1,?>>>
  %b = load %B[%g] : group<memref<f32x4x2>>
  %c = load %C[%g] : group<memref<f32x3x2,strided<?,?>>, offset: 1>
  gemm.n.n 1.0, %a, %b, 1.0, %c
    : f32, memref<f32x3x4,strided<1,?>>, memref<f32x4x2>, f32, memref<f32x3x2,strided<?,?>>
}
"""
    args = {"A": a, "A.strides": np.array([1, 5], np.int64), "B": b, "C": c,
            "C.strides": np.array([2, 7], np.int64)}
    exp = c + np.einsum("gik,gkj->gij", a.astype(np.float64), b.astype(np.float64))
    return _case("dynamic_strides", src, args, (), {"C": exp}, ["gemm"], "f32",
                 ["dynstride", "canonical"])


def offset_omitted() -> ValidCase:
    """A group load whose written type lacks the operand's offset: accepted with a warning
    naming both types (the original compiler uses the operand's type); the offset is used."""
    rng = rng_for("group_offset_omitted")
    x = data(rng, "f32", (3, 6))
    src = """func @k(%X: group<memref<f32x6>, offset: 2>, %s: memref<f32x3>) {
  %g = group_id
  %x = load %X[%g] : group<memref<f32x6>>
  %v = load %x[4] : memref<f32x6>
  store %v, %s[%g] : memref<f32x3>
}
"""
    args = {"X": x, "s": np.zeros(3, np.float32)}
    case = _case("offset_omitted_warning", src, args, (), {"s": x[:, 4]}, ["store"], "f32",
                 "canonical")
    case.warns, case.warns_line = "%X", 3
    return case


def cases() -> list[ValidCase]:
    return [stacked_axpby(), static_offset(), dynamic_offset(), separate_members(),
            separate_offset_dynamic(), dynamic_strides(), offset_omitted()]
