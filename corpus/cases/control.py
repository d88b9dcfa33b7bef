"""Control flow: if (with and without results, varying and uniform conditions), for (steps,
dynamic and empty ranges, i32/i64 induction variables), foreach (dynamic bounds, i32 type)."""

from __future__ import annotations

import numpy as np

from corpus.cases.model import ValidCase
from corpus.cases.util import data, outputs, rng_for, tags


def _case(name, source, args, scalars, expected, instr, types, layouts="canonical",
          groups=None):
    return ValidCase("control", name, source, args, outputs(args, scalars, **expected),
                     tags(instr, types, layouts), groups=groups)


def if_results() -> ValidCase:
    rng = rng_for("if_results")
    a = data(rng, "i32", (10,), -5, 5)
    f = data(rng, "f32", (10,))
    src = """func @k(%a: memref<i32x10>, %f: memref<f32x10>,
         %r: memref<i32x10>, %s: memref<f32x10>) {
  foreach %i = 0, 10 {
    %x = load %a[%i] : memref<i32x10>
    %y = load %f[%i] : memref<f32x10>
    %c = cmp.lt %x, 0 : i32
    %p, %q = if %c -> (i32, f32) {
      %n = arith.neg %x : i32
      yield %n, %y : i32, f32
    } else {
      %d = arith.mul %y, 2.0 : f32
      yield 100, %d : i32, f32
    }
    store %p, %r[%i] : memref<i32x10>
    store %q, %s[%i] : memref<f32x10>
  }
}
"""
    args = {"a": a, "f": f, "r": np.zeros(10, np.int32), "s": np.zeros(10, np.float32)}
    neg = a < 0
    return _case("if_results", src, args, (),
                 {"r": np.where(neg, -a, 100), "s": np.where(neg, f, 2 * f)},
                 ["if", "yield", "cmp.lt", "arith.neg", "arith.mul", "foreach"],
                 ["i32", "f32"])


def if_no_else() -> ValidCase:
    rng = rng_for("if_no_else")
    a = data(rng, "f64", (9,))
    src = """func @k(%a: memref<f64x9>) {
  foreach %i = 0, 9 {
    %x = load %a[%i] : memref<f64x9>
    %c = cmp.gt %x, 0.25 : f64
    if %c {
      %z = arith.sub %x, 10.0 : f64
      store %z, %a[%i] : memref<f64x9>
    }
  }
}
"""
    args = {"a": a}
    return _case("if_no_else", src, args, (), {"a": np.where(a > 0.25, a - 10, a)},
                 ["if", "cmp.gt", "arith.sub", "foreach"], "f64")


def if_collective() -> ValidCase:
    """A condition that differs between work-groups choosing between collectives."""
    rng = rng_for("if_collective")
    g = 4
    a = data(rng, "f32", (3, 3, g))
    b = data(rng, "f32", (3, 3, g))
    src = """func @k(%A: memref<f32x3x3x?>, %B: memref<f32x3x3x?>) {
  %g = group_id
  %a = subview %A[:, :, %g] : memref<f32x3x3x?>
  %b = subview %B[:, :, %g] : memref<f32x3x3x?>
  %r = arith.rem %g, 2 : index
  %even = cmp.eq %r, 0 : index
  if %even {
    gemm.t.n 1.0, %a, %a, 1.0, %b : f32, memref<f32x3x3>, memref<f32x3x3>, f32, memref<f32x3x3>
  } else {
    axpby.t -1.0, %a, 1.0, %b : f32, memref<f32x3x3>, f32, memref<f32x3x3>
  }
}
"""
    args = {"A": a, "B": b}
    exp = b.astype(np.float64).copy()
    for k in range(g):
        ak = a[:, :, k].astype(np.float64)
        exp[:, :, k] += ak.T @ ak if k % 2 == 0 else -ak.T
    return _case("if_collective", src, args, (), {"B": exp},
                 ["if", "gemm", "axpby", "arith.rem", "cmp.eq", "group_id", "subview"],
                 ["f32", "index"], "dynshape", groups=g)


def for_step() -> ValidCase:
    src = """func @k(%out: memref<i64x4>) {
  for %i = 1, 20, 3 : i64 {
    %s = load %out[0] : memref<i64x4>
    %t = arith.add %s, %i : i64
    store %t, %out[0] : memref<i64x4>
  }
  for %j = -7, 8, 5 : i32 {
    %c = load %out[1] : memref<i64x4>
    %w = cast %j : i32 -> i64
    %d = arith.mul %c, 2 : i64
    %e = arith.add %d, %w : i64
    store %e, %out[1] : memref<i64x4>
  }
  for %k = 5, 5 {
    %kk = cast %k : index -> i64
    store %kk, %out[2] : memref<i64x4>
  }
  for %m = 0, 4, 10 {
    %q = load %out[3] : memref<i64x4>
    %q1 = arith.add %q, 1 : i64
    store %q1, %out[3] : memref<i64x4>
  }
}
"""
    out = np.array([0, 1, 42, 0], np.int64)
    exp = out.copy()
    exp[0] = sum(range(1, 20, 3))
    v = 1
    for j in range(-7, 8, 5):
        v = 2 * v + j
    exp[1] = v
    exp[3] = 1
    return _case("for_step", src, {"out": out}, (), {"out": exp},
                 ["for", "arith.add", "arith.mul", "cast", "load", "store"],
                 ["i64", "i32", "index"])


def for_dynamic() -> ValidCase:
    rng = rng_for("for_dynamic")
    a = data(rng, "f64", (12,))
    src = """func @k(%a: memref<f64x?>, %lo: index, %hi: index, %step: index, %r: memref<f64>) {
  for %i = %lo, %hi, %step {
    %x = load %a[%i] : memref<f64x?>
    %acc = load %r[] : memref<f64>
    %y = arith.add %acc, %x : f64
    store %y, %r[] : memref<f64>
  }
}
"""
    lo, hi, step = 2, 11, 4
    r = np.asarray(0.5)
    args = {"a": a, "lo": np.asarray(lo, np.int64), "hi": np.asarray(hi, np.int64),
            "step": np.asarray(step, np.int64), "r": r}
    total = 0.5
    for i in range(lo, hi, step):
        total = total + float(a[i])
    return _case("for_dynamic", src, args, ("lo", "hi", "step"), {"r": np.asarray(total)},
                 ["for", "load", "store", "arith.add"], ["f64", "index"], "dynshape")


def for_in_foreach() -> ValidCase:
    """Row sums of a matrix: foreach over rows, a sequential for over columns."""
    rng = rng_for("for_in_foreach")
    a = data(rng, "i16", (6, 5))
    src = """func @k(%A: memref<i16x6x5,strided<2,13>>, %s: memref<i16x6>) {
  foreach %i = 0, 6 {
    for %j = 0, 5 {
      %x = load %A[%i, %j] : memref<i16x6x5,strided<2,13>>
      %acc = load %s[%i] : memref<i16x6>
      %y = arith.add %acc, %x : i16
      store %y, %s[%i] : memref<i16x6>
    }
  }
}
"""
    s = data(rng, "i16", (6,))
    args = {"A": a, "s": s}
    return _case("for_in_foreach", src, args, (), {"s": s + a.sum(axis=1)},
                 ["foreach", "for", "load", "store", "arith.add"], "i16",
                 ["strided", "canonical"])


def foreach_dynamic_i32() -> ValidCase:
    """Each group handles a slice of one vector; the foreach variable is i32."""
    g = 3
    src = """func @k(%v: memref<f32x?>, %chunk: i32) {
  %gid = group_id
  %g32 = cast %gid : index -> i32
  %lo = arith.mul %g32, %chunk : i32
  %hi = arith.add %lo, %chunk : i32
  foreach %i = %lo, %hi : i32 {
    %ix = cast %i : i32 -> index
    %x = load %v[%ix] : memref<f32x?>
    %f = cast %i : i32 -> f32
    %y = arith.add %x, %f : f32
    store %y, %v[%ix] : memref<f32x?>
  }
}
"""
    rng = rng_for("foreach_dynamic_i32")
    v = data(rng, "f32", (g * 4 + 2,))
    args = {"v": v, "chunk": np.asarray(4, np.int32)}
    exp = v.copy()
    exp[: g * 4] += np.arange(g * 4, dtype=np.float32)
    return _case("foreach_dynamic_i32", src, args, ("chunk",), {"v": exp},
                 ["foreach", "cast", "group_id", "arith.mul", "arith.add", "load", "store"],
                 ["f32", "i32", "index"], "dynshape", groups=g)


def nested_if_in_for() -> ValidCase:
    """Collatz steps, a data-dependent if inside a for inside a foreach."""
    src = """func @k(%n: memref<i32x8>, %steps: memref<i32x8>) {
  foreach %i = 0, 8 {
    for %t = 0, 12 {
      %x = load %n[%i] : memref<i32x8>
      %one = cmp.ne %x, 1 : i32
      if %one {
        %r = arith.and %x, 1 : i32
        %odd = cmp.eq %r, 1 : i32
        %nx = if %odd -> (i32) {
          %m = arith.mul %x, 3 : i32
          %p = arith.add %m, 1 : i32
          yield %p : i32
        } else {
          %h = arith.shr %x, 1 : i32
          yield %h : i32
        }
        store %nx, %n[%i] : memref<i32x8>
        %s = load %steps[%i] : memref<i32x8>
        %s1 = arith.add %s, 1 : i32
        store %s1, %steps[%i] : memref<i32x8>
      }
    }
  }
}
"""
    n = np.array([1, 2, 3, 6, 7, 9, 16, 27], np.int32)
    fin, steps = n.copy(), np.zeros(8, np.int32)
    for k in range(8):
        x = int(n[k])
        for _ in range(12):
            if x != 1:
                x = 3 * x + 1 if x % 2 else x // 2
                steps[k] += 1
        fin[k] = x
    args = {"n": n, "steps": np.zeros(8, np.int32)}
    return _case("nested_if_in_for", src, args, (), {"n": fin, "steps": steps},
                 ["foreach", "for", "if", "yield", "arith.and", "arith.shr", "cmp.eq",
                  "cmp.ne"], "i32")


def sibling_names() -> ValidCase:
    """Names are scoped by region: both branches define %a and %t, a loop body defines %v
    and the code after the loop defines %v again (the original compiler's scoping)."""
    rng = rng_for("sibling_names")
    a = data(rng, "i32", (6,), -5, 5)
    src = """func @k(%a: memref<i32x6>, %r: memref<i32x6>) {
  foreach %i = 0, 6 {
    %x = load %a[%i] : memref<i32x6>
    %c = cmp.lt %x, 0 : i32
    %y = if %c -> (i32) {
      %t = arith.neg %x : i32
      yield %t : i32
    } else {
      %t = arith.add %x, 10 : i32
      yield %t : i32
    }
    if %c {
      %s = arith.mul %y, 2 : i32
      store %s, %r[%i] : memref<i32x6>
    } else {
      %s = arith.mul %y, 3 : i32
      store %s, %r[%i] : memref<i32x6>
    }
  }
  for %j = 0, 6 {
    %v = load %r[%j] : memref<i32x6>
    %w = arith.add %v, 1 : i32
    store %w, %r[%j] : memref<i32x6>
  }
  %v = load %r[0] : memref<i32x6>
  store %v, %a[0] : memref<i32x6>
}
"""
    args = {"a": a, "r": np.zeros(6, np.int32)}
    r = np.where(a < 0, -a * 2, (a + 10) * 3) + 1
    a2 = a.copy()
    a2[0] = r[0]
    return _case("sibling_names", src, args, (), {"r": r, "a": a2},
                 ["foreach", "for", "if", "yield", "cmp.lt", "arith.neg", "arith.add",
                  "arith.mul"], "i32")


def if_empty_results() -> ValidCase:
    """`if %c -> () { ... }`: an empty result list means no results."""
    rng = rng_for("if_empty_results")
    a = data(rng, "f32", (8,))
    src = """func @k(%a: memref<f32x8>) {
  foreach %i = 0, 8 {
    %x = load %a[%i] : memref<f32x8>
    %c = cmp.ge %x, 0.0 : f32
    if %c -> () {
      %z = arith.mul %x, 4.0 : f32
      store %z, %a[%i] : memref<f32x8>
    } else {
      store 0.0, %a[%i] : memref<f32x8>
    }
  }
}
"""
    args = {"a": a}
    return _case("if_empty_results", src, args, (), {"a": np.where(a >= 0, 4 * a, 0)},
                 ["foreach", "if", "cmp.ge", "arith.mul"], "f32")


def cases() -> list[ValidCase]:
    return [if_results(), if_no_else(), if_collective(), for_step(), for_dynamic(),
            for_in_foreach(), foreach_dynamic_i32(), nested_if_in_for(), sibling_names(),
            if_empty_results()]
