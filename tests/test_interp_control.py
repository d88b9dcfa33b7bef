"""Control flow: divergent if (with and without results, with memory effects), for with
per-group bounds and steps and integer types, foreach with per-group ranges, alloca lifetimes
inside loops, barrier; every expected value computed here in plain Python/NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import tlinterp
from tlinterp.lang.diagnostics import ExecutionError


def test_divergent_if_with_results_and_stores():
    src = """
func @k(%x: memref<i32x?>, %y: memref<i32x?>) {
  %g = group_id
  %v = load %x[%g] : memref<i32x?>
  %p = cmp.lt %v, 0 : i32
  %r, %s = if %p -> (i32, i32) {
    %n = arith.neg %v : i32
    store %n, %x[%g] : memref<i32x?>
    yield %n, 1 : i32, i32
  } else {
    %d = arith.div 100, %v : i32
    yield %d, 2 : i32, i32
  }
  %t = arith.mul %r, %s : i32
  store %t, %y[%g] : memref<i32x?>
}"""
    x = np.array([-3, 5, 7, -1, 50, 1], np.int32)
    out = tlinterp.run(src, {"x": x, "y": np.zeros(6, np.int32)}, groups=6)
    want_y = [(-v) * 1 if v < 0 else int(100 / v) * 2 for v in x]
    assert out["y"].tolist() == want_y
    assert out["x"].tolist() == [abs(v) if v < 0 else v for v in x]


def test_if_conversion_does_not_report_faults_of_untaken_branches():
    src = """
func @k(%x: memref<i32x?>, %y: memref<i32x?>) {
  %g = group_id
  %v = load %x[%g] : memref<i32x?>
  %p = cmp.ne %v, 0 : i32
  %r = if %p -> (i32) {
    %d = arith.div 12, %v : i32
    yield %d : i32
  } else {
    yield -1 : i32
  }
  store %r, %y[%g] : memref<i32x?>
}"""
    x = np.array([0, 3, 0, -4], np.int32)
    out = tlinterp.run(src, {"x": x, "y": np.zeros(4, np.int32)}, groups=4)
    assert out["y"].tolist() == [-1, 4, -1, -3]


def test_if_without_else_and_uniform_condition():
    src = """
func @k(%y: memref<i64x?>, %flag: i1) {
  %g = group_id
  %two = arith.rem %g, 2 : index
  %odd = cmp.eq %two, 1 : index
  if %odd {
    %c = cast %g : index -> i64
    store %c, %y[%g] : memref<i64x?>
  }
  if %flag {
    store 7, %y[0] : memref<i64x?>
  }
}"""
    out = tlinterp.run(src, {"y": np.zeros(5, np.int64), "flag": np.bool_(True)}, groups=1)
    assert out["y"].tolist() == [7, 0, 0, 0, 0]
    src2 = src.replace("%flag: i1", "%flag: i32").replace(
        "if %flag {", "%f = cmp.ne %flag, 0 : i32\n  if %f {")
    out = tlinterp.run(src2, {"y": np.zeros(5, np.int64), "flag": np.int32(0)}, groups=5)
    assert out["y"].tolist() == [0, 1, 0, 3, 0]


def test_for_with_per_group_bounds_step_and_type():
    src = """
func @k(%y: memref<i64x?>) {
  %g = group_id
  %g16 = cast %g : index -> i16
  %stop = arith.mul %g16, 3 : i16
  for %i = 1, %stop, 2 : i16 {
    %o = load %y[%g] : memref<i64x?>
    %i64 = cast %i : i16 -> i64
    %s = arith.add %o, %i64 : i64
    store %s, %y[%g] : memref<i64x?>
  }
}"""
    out = tlinterp.run(src, {"y": np.zeros(6, np.int64)}, groups=6)
    assert out["y"].tolist() == [sum(range(1, 3 * g, 2)) for g in range(6)]


def test_nested_loops_with_uniform_bounds():
    src = """
func @k(%y: memref<indexx4x3>) {
  for %j = 0, 3 {
    for %i = 0, 4 {
      %a = arith.mul %i, 10 : index
      %b = arith.add %a, %j : index
      store %b, %y[%i, %j] : memref<indexx4x3>
    }
  }
}"""
    out = tlinterp.run(src, {"y": np.zeros((4, 3), np.int64)})
    assert out["y"].tolist() == [[10 * i + j for j in range(3)] for i in range(4)]


def test_foreach_with_per_group_ranges_and_nested_if():
    src = """
func @k(%x: memref<f32x8x?>, %y: memref<f32x8x?>) {
  %g = group_id
  %lo = arith.rem %g, 3 : index
  %hi = arith.add %lo, 4 : index
  foreach %i = %lo, %hi {
    %v = load %x[%i, %g] : memref<f32x8x?>
    %p = cmp.gt %v, 0.0 : f32
    if %p {
      %w = arith.mul %v, 2.0 : f32
      store %w, %y[%i, %g] : memref<f32x8x?>
    } else {
      store 0.0, %y[%i, %g] : memref<f32x8x?>
    }
  }
}"""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 7)).astype(np.float32)
    y = np.full((8, 7), -5.0, np.float32)
    out = tlinterp.run(src, {"x": x, "y": y}, groups=7)
    want = y.copy()
    for g in range(7):
        for i in range(g % 3, g % 3 + 4):
            want[i, g] = x[i, g] * 2 if x[i, g] > 0 else 0.0
    np.testing.assert_array_equal(out["y"], want)


def test_foreach_with_i32_variable_and_empty_range():
    src = """
func @k(%y: memref<i32x10>) {
  foreach %i = 3, 7 : i32 {
    %j = cast %i : i32 -> index
    %s = arith.mul %i, %i : i32
    store %s, %y[%j] : memref<i32x10>
  }
  foreach %k = 5, 2 {
    store 99, %y[%k] : memref<i32x10>
  }
}"""
    out = tlinterp.run(src, {"y": np.zeros(10, np.int32)})
    assert out["y"].tolist() == [0, 0, 0, 9, 16, 25, 36, 0, 0, 0]


def test_alloca_in_a_loop_and_barrier():
    src = """
func @k(%y: memref<f64x4x?>) {
  %g = group_id
  %o = subview %y[:, %g] : memref<f64x4x?>
  for %r = 0, 3 {
    %t = alloca -> memref<f64x4>
    %rf = cast %r : index -> f64
    foreach %i = 0, 4 {
      store %rf, %t[%i] : memref<f64x4>
    }
    barrier
    axpby.n 1.0, %t, 1.0, %o : f64, memref<f64x4>, f64, memref<f64x4,strided<1>>
    lifetime_stop %t
  }
}"""
    out = tlinterp.run(src, {"y": np.ones((4, 3))}, groups=3)
    np.testing.assert_array_equal(out["y"], np.full((4, 3), 1.0 + 0 + 1 + 2))


def test_step_budget_stops_runaway_loops():
    src = """
func @k(%y: memref<i64x1>, %n: i64) {
  for %i = 0, %n : i64 {
    store %i, %y[0] : memref<i64x1>
  }
}"""
    with pytest.raises(ExecutionError) as e:
        tlinterp.run(src, {"y": np.zeros(1, np.int64), "n": np.int64(1 << 40)}, max_steps=1000)
    assert "step budget" in str(e.value)
    out = tlinterp.run(src, {"y": np.zeros(1, np.int64), "n": np.int64(50)}, max_steps=1000)
    assert out["y"].tolist() == [49]


def test_nonpositive_step_over_a_nonempty_range_is_an_error():
    src = """
func @k(%s: index) {
  for %i = 0, 10, %s {
    barrier
  }
}"""
    with pytest.raises(ExecutionError, match="never terminates"):
        tlinterp.run(src, {"s": np.int64(0)})
    tlinterp.run(src, {"s": np.int64(3)})


def test_huge_foreach_is_refused_before_allocating():
    src = """
func @k(%n: index) {
  foreach %i = 0, %n {
    %x = arith.add %i, 1 : index
  }
}"""
    with pytest.raises(ExecutionError, match="GiB"):
        tlinterp.run(src, {"n": np.int64(1 << 50)}, groups=4)


def test_zero_groups_runs_nothing():
    src = """
func @k(%y: memref<i32x2>) {
  store 1, %y[0] : memref<i32x2>
}"""
    out = tlinterp.run(src, {"y": np.zeros(2, np.int32)}, groups=0)
    assert out["y"].tolist() == [0, 0]


def test_huge_alloca_is_refused_before_allocating():
    src = """
func @k() {
  %t = alloca -> memref<f64x100000x100000>
}"""
    with pytest.raises(ExecutionError, match="GiB"):
        tlinterp.run(src, {}, groups=2)
