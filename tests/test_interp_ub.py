"""Every undefined-behaviour kind triggered by a small program, with its report asserted
(kind, source range, work-group(s), element); and programs that look close but are defined."""

from __future__ import annotations

import numpy as np
import pytest

import tlinterp
from tlinterp.lang.diagnostics import UndefinedBehaviour


def ub(src, args, groups=None, **kw):
    with pytest.raises(UndefinedBehaviour) as e:
        tlinterp.run(src, args, groups=groups, **kw)
    assert e.value.exit_status == 1
    return e.value


def first(err, kind):
    rs = [r for r in err.reports if r.kind == kind]
    assert rs, [r.kind for r in err.reports]
    return rs[0]


def line_of(src, text):
    return next(i for i, ln in enumerate(src.splitlines(), 1) if text in ln)


def test_out_of_bounds_load_reports_element_and_group():
    src = """
func @k(%x: memref<f32x4>, %y: memref<f32x?>) {
  %g = group_id
  %i = arith.add %g, 2 : index
  %v = load %x[%i] : memref<f32x4>
  store %v, %y[%g] : memref<f32x?>
}"""
    err = ub(src, {"x": np.zeros(4, np.float32), "y": np.zeros(5, np.float32)}, groups=5)
    r = first(err, "out-of-bounds")
    assert r.groups == (2,) and r.element == (4,)
    assert (r.span.line, r.span.col) == (5, 3)
    assert {x.groups for x in err.reports} == {(2,), (3,), (4,)}
    assert "<input>:5.3-34: out of bounds: work-group 2 reads element (4) of %x" in err.format()


def test_touching_a_subview_outside_its_parent_is_out_of_bounds():
    src = """
func @k(%x: memref<i32x4x4>) {
  %v = subview %x[2:4, 3] : memref<i32x4x4>
  store 1, %v[1] : memref<i32x4,strided<1>>
  store 1, %v[3] : memref<i32x4,strided<1>>
}"""
    err = ub(src, {"x": np.zeros((4, 4), np.int32)})
    r = first(err, "out-of-bounds")
    assert r.span.line == 5 and r.groups == (0,) and r.element is None
    assert "outside %x" in r.message


def test_out_of_bounds_group_member_and_collective_operand():
    src = """
func @k(%G: group<memref<f64x2>>) {
  %g = group_id
  %i = arith.add %g, 1 : index
  %m = load %G[%i] : group<memref<f64x2>>
}"""
    err = ub(src, {"G": np.zeros((3, 2))})
    r = first(err, "out-of-bounds")
    assert r.groups == (2,) and r.element == (3,)
    src2 = """
func @k(%x: memref<f64x4>, %y: memref<f64x4>) {
  %v = subview %x[2:4] : memref<f64x4>
  axpby.n 1.0, %v, 0.0, %y : f64, memref<f64x4,strided<1>>, f64, memref<f64x4>
}"""
    err = ub(src2, {"x": np.zeros(4), "y": np.zeros(4)})
    r = first(err, "out-of-bounds")
    assert r.span.line == 4 and r.element is None and "outside %x" in r.message


def test_race_between_work_groups_writing_one_element():
    src = """
func @k(%y: memref<i32x4>) {
  %g = group_id
  %c = cast %g : index -> i32
  store %c, %y[1] : memref<i32x4>
}"""
    err = ub(src, {"y": np.zeros(4, np.int32)}, groups=3)
    r = first(err, "data-race")
    assert r.element == (1,) and len(r.groups) == 2 and r.span.line == 5
    assert "both write element (1) of %y" in r.message


def test_race_between_a_write_and_a_later_read_of_another_group():
    src = """
func @k(%y: memref<i32x4>, %z: memref<i32x?>) {
  %g = group_id
  %p = cmp.eq %g, 1 : index
  if %p {
    store 5, %y[2] : memref<i32x4>
  }
  %v = load %y[2] : memref<i32x4>
  store %v, %z[%g] : memref<i32x?>
}"""
    err = ub(src, {"y": np.zeros(4, np.int32), "z": np.zeros(3, np.int32)}, groups=3)
    r = first(err, "data-race")
    assert r.element == (2,) and 1 in r.groups and r.span.line == 8


def test_race_between_foreach_iterations():
    src = """
func @k(%y: memref<indexx4>) {
  foreach %i = 0, 8 {
    %j = arith.rem %i, 4 : index
    store %i, %y[%j] : memref<indexx4>
  }
}"""
    err = ub(src, {"y": np.zeros(4, np.int64)})
    r = first(err, "data-race")
    assert r.groups == (0,) and r.span.line == 5 and "foreach" in r.message


def test_defined_access_patterns_are_not_races():
    src = """
func @k(%y: memref<i64x8x?>, %s: memref<i64x?>) {
  %g = group_id
  %v = subview %y[:, %g] : memref<i64x8x?>
  foreach %i = 0, 8 {
    %c = cast %i : index -> i64
    store %c, %v[%i] : memref<i64x8>
  }
  %a = load %v[3] : memref<i64x8>
  store %a, %v[3] : memref<i64x8>
  foreach %k = 0, 8 {
    %b = load %v[%k] : memref<i64x8>
    %b2 = arith.add %b, 1 : i64
    store %b2, %v[%k] : memref<i64x8>
  }
  %r = load %y[0, 0] : memref<i64x8x?>
  %t = load %y[0, 0] : memref<i64x8x?>
  store %t, %s[%g] : memref<i64x?>
}"""
    y = np.zeros((8, 3), np.int64)
    # group 0 writes y[0,0] while groups 1, 2 read it: a race; with one group it is defined
    out = tlinterp.run(src, {"y": y[:, :1].copy(), "s": np.zeros(1, np.int64)}, groups=1)
    assert out["y"][:, 0].tolist() == list(range(1, 9)) and out["s"].tolist() == [1]
    err = ub(src, {"y": y, "s": np.zeros(3, np.int64)}, groups=3)
    assert {r.kind for r in err.reports} == {"data-race"}


def test_uninitialised_alloca_read():
    src = """
func @k(%y: memref<f32x4>) {
  %t = alloca -> memref<f32x4>
  store 1.0, %t[0] : memref<f32x4>
  %a = load %t[0] : memref<f32x4>
  %b = load %t[2] : memref<f32x4>
  store %b, %y[0] : memref<f32x4>
}"""
    err = ub(src, {"y": np.zeros(4, np.float32)})
    r = first(err, "uninitialised-read")
    assert r.span.line == 6 and r.element == (2,) and r.groups == (0,)


def test_uninitialised_alloca_as_collective_input_but_not_as_beta_zero_output():
    src = """
func @k(%y: memref<f32x4>) {
  %t = alloca -> memref<f32x4>
  axpby.n 1.0, %y, 0.0, %t : f32, memref<f32x4>, f32, memref<f32x4>
  %u = alloca -> memref<f32x4>
  axpby.n 1.0, %u, 1.0, %y : f32, memref<f32x4>, f32, memref<f32x4>
}"""
    err = ub(src, {"y": np.zeros(4, np.float32)})
    r = first(err, "uninitialised-read")
    assert r.span.line == 6 and r.element == (0,)


def test_use_after_lifetime_stop():
    src = """
func @k(%y: memref<f32x4>) {
  %t = alloca -> memref<f32x4>
  store 1.0, %t[0] : memref<f32x4>
  lifetime_stop %t
  %a = load %t[0] : memref<f32x4>
}"""
    err = ub(src, {"y": np.zeros(4, np.float32)}, groups=2)
    r = first(err, "use-after-lifetime")
    assert r.span.line == 6 and r.groups in ((0,), (1,))


@pytest.mark.parametrize("op, a, b, kind", [
    ("div", 5, 0, "division-by-zero"), ("rem", 5, 0, "division-by-zero"),
    ("div", -2147483648, -1, "division-overflow"), ("add", 2147483647, 1, "signed-overflow"),
    ("mul", 65536, 65536, "signed-overflow"), ("shl", 1, 32, "shift-out-of-range"),
    ("shr", 1, -1, "shift-out-of-range"), ("shl", 1 << 30, 2, "signed-overflow"),
])
def test_integer_arithmetic_faults(op, a, b, kind):
    src = f"""
func @k(%a: memref<i32x?>, %b: memref<i32x?>) {{
  %g = group_id
  %x = load %a[%g] : memref<i32x?>
  %y = load %b[%g] : memref<i32x?>
  %z = arith.{op} %x, %y : i32
}}"""
    err = ub(src, {"a": np.array([1, 1, a], np.int32), "b": np.array([1, 1, b], np.int32)},
             groups=3)
    assert [(r.kind, r.groups, r.span.line) for r in err.reports] == [(kind, (2,), 6)]


def test_invalid_float_to_int_cast():
    src = """
func @k(%x: f64) {
  %i = cast %x : f64 -> i16
}"""
    err = ub(src, {"x": np.float64(40000.0)})
    assert [(r.kind, r.groups) for r in err.reports] == [("invalid-cast", (0,))]
    ub(src, {"x": np.float64("nan")})
    tlinterp.run(src, {"x": np.float64(-32768.9)})  # truncates to -32768: defined


def test_overlapping_collective_operands():
    src = """
func @k(%x: memref<f64x8>) {
  %a = subview %x[0:4] : memref<f64x8>
  %c = subview %x[3:4] : memref<f64x8>
  axpby.n 1.0, %a, 1.0, %c : f64, memref<f64x4>, f64, memref<f64x4,strided<1>>
}"""
    err = ub(src, {"x": np.zeros(8)})
    r = first(err, "overlapping-operands")
    assert r.element == (3,) and r.groups == (0,) and r.span.line == 5
    ok = src.replace("%x[3:4]", "%x[4:4]")
    tlinterp.run(ok, {"x": np.zeros(8)})


def test_order_dependent_atomic():
    src = """
func @k(%a: memref<f64x2>, %c: memref<f64x2>) {
  axpby.n.atomic 1.0, %a, 2.0, %c : f64, memref<f64x2>, f64, memref<f64x2>
}"""
    err = ub(src, {"a": np.ones(2), "c": np.ones(2)}, groups=3)
    r = first(err, "order-dependent-atomic")
    assert r.element == (0,) and r.groups == (0, 1) and r.span.line == 3
    one = tlinterp.run(src, {"a": np.ones(2), "c": np.ones(2)}, groups=1)
    assert one["c"].tolist() == [3.0, 3.0]  # a single group: beta = 2 is fine


@pytest.mark.parametrize("body, arg", [
    ("%v = subview %x[%n:2] : memref<f32x8>", -1),
    ("%v = subview %x[1:%n] : memref<f32x8>", 0),
    ("%v = expand %x[0 -> %n x ?] : memref<f32x8>", 3),
    ("%v = expand %x[0 -> %n x 2] : memref<f32x8>", 3),
])
def test_invalid_views(body, arg):
    src = f"""
func @k(%x: memref<f32x8>, %n: index) {{
  {body}
}}"""
    err = ub(src, {"x": np.zeros(8, np.float32), "n": np.int64(arg)})
    r = first(err, "invalid-view")
    assert r.span.line == 3 and r.groups == (0,)


def test_illegal_dynamic_fuse():
    src = """
func @k(%x: memref<f32x4x4,strided<1,?>>) {
  %f = fuse %x[0, 1] : memref<f32x4x4,strided<1,?>>
}"""
    err = ub(src, {"x": np.zeros((4, 4), np.float32), "x.strides": np.array([1, 5])})
    assert first(err, "invalid-view").span.line == 3
    tlinterp.run(src, {"x": np.zeros((4, 4), np.float32), "x.strides": np.array([1, 4])})


def test_no_check_mode_gives_the_same_results_for_defined_programs():
    src = """
func @k(%x: memref<f32x16x?>, %y: memref<f32x16x?>) {
  %g = group_id
  %a = subview %x[:, %g] : memref<f32x16x?>
  %b = subview %y[:, %g] : memref<f32x16x?>
  foreach %i = 0, 16 {
    %v = load %a[%i] : memref<f32x16>
    %w = arith.mul %v, %v : f32
    store %w, %b[%i] : memref<f32x16>
  }
  sum.n 1.0, %a, 1.0, %b : f32, memref<f32x16>, f32, memref<f32x16>
}"""
    src = src.replace("sum.n 1.0, %a, 1.0, %b : f32, memref<f32x16>, f32, memref<f32x16>",
                      "axpby.n 1.0, %a, 1.0, %b : f32, memref<f32x16>, f32, memref<f32x16>")
    x = np.random.default_rng(0).standard_normal((16, 9)).astype(np.float32)
    a = tlinterp.run(src, {"x": x, "y": np.zeros_like(x)}, groups=9)
    b = tlinterp.run(src, {"x": x, "y": np.zeros_like(x)}, groups=9, check=False)
    np.testing.assert_array_equal(a["y"], b["y"])
    np.testing.assert_array_equal(a["y"], x * x + x)


def test_unchecked_out_of_bounds_never_touches_foreign_memory():
    src = """
func @k(%x: memref<f32x4>) {
  store 1.0, %x[100000000] : memref<f32x4>
}"""
    err = ub(src, {"x": np.zeros(4, np.float32)}, check=False)
    assert err.reports[0].kind == "out-of-bounds"


def test_race_found_among_scattered_addresses_of_one_store():
    src = """
func @k(%y: memref<indexx2>) {
  %g = group_id
  %j = arith.rem %g, 2 : index
  store %g, %y[%j] : memref<indexx2>
}"""
    err = ub(src, {"y": np.zeros(2, np.int64)}, groups=4)
    r = first(err, "data-race")
    assert r.groups == (0, 2) and r.element == (0,)
    out = tlinterp.run(src, {"y": np.zeros(2, np.int64)}, groups=2)
    assert out["y"].tolist() == [0, 1]


def test_write_after_reads_of_several_groups():
    src = """
func @k(%y: memref<i32x2>, %z: memref<i32x?>) {
  %g = group_id
  %v = load %y[0] : memref<i32x2>
  store %v, %z[%g] : memref<i32x?>
  %p = cmp.eq %g, 0 : index
  if %p {
    store 3, %y[0] : memref<i32x2>
  }
}"""
    err = ub(src, {"y": np.zeros(2, np.int32), "z": np.zeros(3, np.int32)}, groups=3)
    r = first(err, "data-race")
    assert r.groups == (0,) and r.element == (0,) and r.span.line == 8
    assert "several work-groups read" in r.message


def test_unchecked_collective_outside_its_buffer_is_refused():
    src = """
func @k(%x: memref<f64x4>, %y: memref<f64x8>) {
  %v = subview %x[2:8] : memref<f64x4>
  axpby.n 1.0, %v, 0.0, %y : f64, memref<f64x8,strided<1>>, f64, memref<f64x8>
}"""
    for check in (True, False):
        err = ub(src, {"x": np.zeros(4), "y": np.zeros(8)}, check=check)
        assert err.reports[0].kind == "out-of-bounds" and err.reports[0].span.line == 4


def test_race_between_foreach_iterations_on_alloca_memory():
    src = """
func @k(%y: memref<f32x4>) {
  %t = alloca -> memref<f32x4>
  store 0.0, %t[1] : memref<f32x4>
  %a = load %t[1] : memref<f32x4>
  foreach %i = 0, 4 {
    store 1.0, %t[1] : memref<f32x4>
  }
}"""
    err = ub(src, {"y": np.zeros(4, np.float32)}, groups=3)
    r = first(err, "data-race")
    assert r.element == (1,) and r.span.line == 7 and len(r.groups) == 1


# every collective on dynamic sizes that disagree at run time: (instruction, operand types,
# shapes that disagree, shapes that agree); the sizes per work-group come from a group member
SHAPE_CASES = [
    ("axpby.n 1.0, %a, 1.0, %b : f64, memref<f64x?>, f64, memref<f64x?>",
     "%a: memref<f64x?>, %b: memref<f64x?>", {"a": (4,), "b": (5,)}, {"a": (5,), "b": (5,)}),
    ("axpby.t 1.0, %a, 0.0, %b : f64, memref<f64x?x2>, f64, memref<f64x2x3>",
     "%a: memref<f64x?x2>, %b: memref<f64x2x3>", {"a": (4, 2), "b": (2, 3)},
     {"a": (3, 2), "b": (2, 3)}),
    ("gemm.n.n 1.0, %a, %b, 0.0, %c : f64, memref<f64x2x?>, memref<f64x?x3>, f64, "
     "memref<f64x2x3>", "%a: memref<f64x2x?>, %b: memref<f64x?x3>, %c: memref<f64x2x3>",
     {"a": (2, 4), "b": (5, 3), "c": (2, 3)}, {"a": (2, 5), "b": (5, 3), "c": (2, 3)}),
    ("gemv.n 1.0, %a, %b, 0.0, %c : f64, memref<f64x?x3>, memref<f64x3>, f64, memref<f64x?>",
     "%a: memref<f64x?x3>, %b: memref<f64x3>, %c: memref<f64x?>",
     {"a": (2, 3), "b": (3,), "c": (4,)}, {"a": (4, 3), "b": (3,), "c": (4,)}),
    ("ger 1.0, %a, %b, 0.0, %c : f64, memref<f64x?>, memref<f64x3>, f64, memref<f64x2x3>",
     "%a: memref<f64x?>, %b: memref<f64x3>, %c: memref<f64x2x3>",
     {"a": (3,), "b": (3,), "c": (2, 3)}, {"a": (2,), "b": (3,), "c": (2, 3)}),
    ("hadamard_product 1.0, %a, %b, 0.0, %c : f64, memref<f64x?>, memref<f64x4>, f64, "
     "memref<f64x4>", "%a: memref<f64x?>, %b: memref<f64x4>, %c: memref<f64x4>",
     {"a": (3,), "b": (4,), "c": (4,)}, {"a": (4,), "b": (4,), "c": (4,)}),
    ("sum.n 1.0, %a, 0.0, %b : f64, memref<f64x?x3>, f64, memref<f64x2>",
     "%a: memref<f64x?x3>, %b: memref<f64x2>", {"a": (4, 3), "b": (2,)},
     {"a": (2, 3), "b": (2,)}),
]


@pytest.mark.parametrize("check", [True, False])
@pytest.mark.parametrize("inst,params,bad,good", SHAPE_CASES,
                         ids=[c[0].split(" ")[0] for c in SHAPE_CASES])
def test_collectives_on_dynamic_sizes_that_disagree(inst, params, bad, good, check):
    """The checker cannot see these; the run reports them (also with checks off: NumPy
    cannot combine the operands) instead of failing inside the interpreter."""
    src = f"func @k({params}) {{\n  {inst}\n}}\n"
    rng = np.random.default_rng(0)
    err = ub(src, {k: rng.standard_normal(s) for k, s in bad.items()}, check=check)
    r = first(err, "shape-mismatch")
    assert r.span.line == 2 and r.groups == (0,)
    assert "incompatible shapes" in r.message and "differ" in r.message
    tlinterp.run(src, {k: rng.standard_normal(s) for k, s in good.items()}, check=check)


def test_shape_mismatch_names_the_sizes_and_every_work_group_shape():
    """Work-groups of one run may see different sizes (group members): only those whose sizes
    disagree are reported."""
    src = """
func @k(%a: group<memref<f64x?>>, %b: memref<f64x4x?>) {
  %g = group_id
  %x = load %a[%g] : group<memref<f64x?>>
  %y = subview %b[:, %g] : memref<f64x4x?>
  axpby.n 1.0, %x, 0.0, %y : f64, memref<f64x?>, f64, memref<f64x4>
}"""
    a = {"a.0": np.ones(4), "a.1": np.ones(3), "a.2": np.ones(4)}
    with pytest.raises(tlinterp.lang.diagnostics.ArgumentError, match="members differ in shape"):
        tlinterp.run(src, {"a": list(a.values()), "b": np.zeros((4, 3))}, groups=3)
    err = ub(src, {**a, "b": np.zeros((4, 3))}, groups=3)
    r = first(err, "shape-mismatch")
    assert r.groups == (1,) and "op(A) is 3, B is 4: mode 0 (3 vs 4) differ" in r.message
