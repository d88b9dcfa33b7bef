"""The single-lane scalar fast path (interp/fastpath.py) computes exactly what the general
path computes and reports the same undefined behaviour: random UB-free kernels with for loops
on one work-group, hand-written UB inside loops, and the scalar-operation table compared
value by value with scalar.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tlinterp
from fuzz.strategies import kernels
from tlinterp.interp import fastpath, scalar
from tlinterp.lang import ops
from tlinterp.lang.ir import Const
from tlinterp.lang.types import V03_SCALARS, ScalarType


def _both(src_or_prog, args, groups=1, **kw):
    """(result or error text) with the fast path, then without it."""
    out = []
    for fast in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            if not fast:
                mp.setattr(fastpath, "eligible", lambda inst, cache: False)
            try:
                out.append(tlinterp.run(src_or_prog, args, groups=groups, **kw))
            except tlinterp.TLError as e:
                out.append((type(e).__name__, e.format()))
    return out


def _same(a, b):
    if isinstance(a, tuple) or isinstance(b, tuple):
        assert a == b
        return
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


@settings(max_examples=60, suppress_health_check=list(HealthCheck))
@given(kernels(max_groups=1, statement_weights={"for_": 8, "foreach": 1, "collective": 1},
               max_trips=4))
def test_random_single_group_kernels_agree(case):
    fast, slow = _both(case.program, case.args, groups=1, func=case.func)
    _same(fast, slow)


LOOP = """func @f(%x: memref<{t}x8>, %a: {t}, %b: {t}) {{
  for %i = 0, 8 {{
    %v = load %x[%i] : memref<{t}x8>
    %s = {op} %v, %a : {t}
    %r = {op2} %s, %b : {t}
    store %r, %x[%i] : memref<{t}x8>
  }}
}}"""

UB_CASES = [
    # (element type, op, op2, x, a, b): every one ends in undefined behaviour on some lane
    ("i32", "arith.add", "arith.mul", np.arange(8, dtype=np.int32), 2**31 - 5, 1),
    ("i64", "arith.mul", "arith.sub", np.full(8, 2**40), 2**30, 0),
    ("i16", "arith.div", "arith.add", np.arange(8, dtype=np.int16), 0, 1),
    ("i8", "arith.rem", "arith.add", np.array([-128] * 8, np.int8), -1, 0),
    ("i32", "arith.shl", "arith.add", np.ones(8, np.int32), 31, 0),
    ("i32", "arith.shr", "arith.add", np.ones(8, np.int32), 32, 0),
    ("u8", "arith.add", "arith.div", np.arange(8, dtype=np.uint8), 250, 0),
]
OK_CASES = [
    ("u16", "arith.mul", "arith.sub", np.arange(8, dtype=np.uint16) * 999, 77, 5),
    ("f32", "arith.mul", "arith.div", np.linspace(-3, 3, 8, dtype=np.float32), 3e38, 0.0),
    ("f64", "arith.div", "arith.rem", np.linspace(-3, 3, 8), 0.0, 2.0),
    ("f32", "arith.add", "arith.rem", np.array([np.nan, np.inf, -1, 2, 3, 4, 5, 6],
                                              np.float32), 1.5, 0.75),
    ("i64", "arith.shr", "arith.xor", np.arange(-4, 4), 1, -7),
]


@pytest.mark.parametrize("t, op, op2, x, a, b", UB_CASES + OK_CASES)
def test_loops_agree_on_results_and_reports(t, op, op2, x, a, b):
    dt = ScalarType(t).dtype
    src = LOOP.format(t=t, op=op, op2=op2)
    fast, slow = _both(src, {"x": x.astype(dt), "a": dt.type(a), "b": dt.type(b)})
    _same(fast, slow)


ALLOCA = """func @g(%y: memref<f64x4>) {
  %t = alloca -> memref<f64x4>
  store 1.0, %t[0] : memref<f64x4>
  for %i = 0, 5 {
    %v = load %t[%i] : memref<f64x4>
    store %v, %y[%i] : memref<f64x4>
  }
}"""


def test_uninitialised_and_out_of_bounds_reports_match():
    fast, slow = _both(ALLOCA, {"y": np.zeros(4)})
    assert fast[0] == "UndefinedBehaviour" and "uninitialised" in fast[1]
    _same(fast, slow)


def test_step_budget_names_the_same_instruction():
    src = LOOP.format(t="i64", op="arith.add", op2="arith.add").replace("0, 8", "0, 4")
    args = {"x": np.zeros(8, np.int64), "a": np.int64(1), "b": np.int64(1)}
    for budget in (1, 2, 3, 7, 10, 16):
        _same(*_both(src, args, max_steps=budget))


# v0.3 types only: loops with v0.4 types never take the fast path (fastpath._v04)
TYPES = [t for t in V03_SCALARS if not t.is_bool]
OPS = list(ops.names(ops.BINARY))


def _assert_agrees(r, want, faults, t) -> None:
    """The fast path's result `r` is scalar.py's `want`, bit for bit, and scalar.py saw no
    undefined behaviour in it (`faults`)."""
    if r is fastpath._BAIL:
        return  # handed to scalar.py itself
    assert not any(np.any(m) for _, m, _ in faults), "the fast path hid undefined behaviour"
    assert np.array(r, t.dtype).tobytes() == np.asarray(want, t.dtype).tobytes()


@settings(max_examples=300)
@given(st.sampled_from(TYPES), st.sampled_from(OPS), st.integers(-2**64, 2**64),
       st.integers(-2**64, 2**64), st.floats(width=32), st.floats(width=32))
def test_binary_table_matches_scalar_py(t, op, ia, ib, fa, fb):
    if ops.type_class(t) not in ops.find(ops.BINARY, op).accepts:
        return
    a = scalar.const(Const(fa if t.is_float else ia), t)
    b = scalar.const(Const(fb if t.is_float else ib), t)
    r = fastpath.binary(op, t, a.item(), b.item())
    want, faults = scalar.binary(op, t, a, b)
    _assert_agrees(r, want, faults, t)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@settings(max_examples=300)
@given(st.sampled_from(V03_SCALARS), st.sampled_from(V03_SCALARS),
       st.integers(-2**64, 2**64), st.floats())
def test_cast_table_matches_scalar_py(src, dst, i, f):
    a = scalar.const(Const(f if src.is_float else i), src)
    r = fastpath.cast(src, dst, a.item())
    want, faults = scalar.cast(src, dst, a)
    _assert_agrees(r, want, faults, dst)


@settings(max_examples=200)
@given(st.sampled_from(V03_SCALARS), st.sampled_from(["neg", "not"]),
       st.integers(-2**64, 2**64), st.floats(width=32))
def test_unary_table_matches_scalar_py(t, op, i, f):
    if t.is_float and op == "not":
        return
    a = scalar.const(Const(f if t.is_float else i), t)
    r = fastpath.unary(op, t, a.item())
    want, faults = scalar.unary(op, t, a)
    _assert_agrees(r, want, faults, t)


def test_the_fast_path_is_taken_and_fast_enough_to_matter(monkeypatch):
    calls = []
    real = fastpath.FastRunner.run_for
    monkeypatch.setattr(fastpath.FastRunner, "run_for",
                        lambda self, inst: calls.append(inst) or real(self, inst))
    src = LOOP.format(t="i64", op="arith.add", op2="arith.mul")
    out = tlinterp.run(src, {"x": np.arange(8), "a": np.int64(2), "b": np.int64(3)}, groups=1)
    np.testing.assert_array_equal(out["x"], (np.arange(8) + 2) * 3)
    assert len(calls) == 1
