"""v0.4 control flow and memory instructions through our OpenCL lowering, against the
interpreter on the same inputs: `for` with loop-carried values, multi-dimensional `foreach`,
`associated`, `cumsum` (every mode, integer and float, beta 0/1/other, `.atomic` shared by
work-groups), the atomics (load, store, add/max/min returning the old value, every integer and
float width, scopes and semantics, in a foreach and as mixed instructions), on pocl (OpenCL C
1.2 atomics, a stronger semantics between fences) and on Intel's CPU runtime (OpenCL C 2.0
atomics)."""

from __future__ import annotations

import numpy as np
import pytest
from opencl_devices import require_device

import tlgpu
import tlinterp
from tlgpu.lowering import function as lower_function
from tlinterp.front.pipeline import lowerable
from tlinterp.lang import ir

pytestmark = [pytest.mark.opencl,
              pytest.mark.filterwarnings("ignore:Non-empty compiler output")]

DEVICES = ["pocl", "intel"]


def both(src: str, args: dict, device: str, groups=None) -> tuple[dict, dict]:
    """(interpreter outputs, lowering outputs) of a v0.4 kernel."""
    require_device(device)
    program = tlinterp.check(tlinterp.parse(src, lang="v0.4"))
    want = tlinterp.run(program, {k: v.copy() for k, v in args.items()}, groups=groups)
    got = tlgpu.run(program, {k: v.copy() for k, v in args.items()}, groups=groups,
                    device=device)
    return want, got


def same(src: str, args: dict, device: str, groups=None) -> dict:
    want, got = both(src, args, device, groups)
    assert want.keys() == got.keys()
    for k in want:
        assert np.array_equal(want[k], got[k], equal_nan=True), (k, want[k], got[k])
    return got


def test_every_instruction_is_lowered_not_refused():
    """The lowering's table has a rule of its own for every instruction of both versions
    (this area's, the SPMD and coopmatrix ones alike): nothing is left to `_not_yet`."""
    mine = (ir.Associated, ir.ForeachNd, ir.AtomicLoad, ir.AtomicStore,
            ir.AtomicUpdate, ir.Cumsum)
    for cls in mine:
        assert lower_function.LOWER[cls] is not lower_function._not_yet, cls
    left = [c.__name__ for c, rule in lower_function.LOWER.items()
            if rule is lower_function._not_yet]
    assert left == []


# --- for with loop-carried values ----------------------------------------------------------

FOR_SRC = """func @k(%A: memref<i64 x ?>, %F: memref<f64 x ?>, %O: memref<i64 x 5 x ?>,
        %G: memref<f64 x ?>) {
    %c0 = constant 0 : index
    %c1 = constant 1 : index
    %c2 = constant 2 : index
    %c3 = constant 3 : index
    %n = size %A[0] : index
    %g = group_id.x : index
    %z = constant 0 : i64
    %one = constant 1 : i64
    %fz = constant 0.0 : f64
    ; a work-group dependent trip count: groups keep their own carried values
    %stop = sub %n, %g : index
    %s, %cnt, %a, %b, %f = for %i = %c0, %stop init(%acc = %z, %k = %z, %x = %one,
            %y = %one, %fa = %fz) -> (i64, i64, i64, i64, f64) {
        %v = load %A[%i] : i64
        %acc1 = add %acc, %v : i64
        %k1 = add %k, %one : i64
        %xy = add %x, %y : i64
        %w = load %F[%i] : f64
        %big = greater_than %w, %fa : bool
        %fb = if %big -> (f64) {
            yield (%w)
        } else {
            %h = mul %fa, %w : f64
            yield (%h)
        }
        yield (%acc1, %k1, %y, %xy, %fb)
    }
    store %s, %O[%c0, %g]
    store %cnt, %O[%c1, %g]
    store %a, %O[%c2, %g]
    store %b, %O[%c3, %g]
    store %f, %G[%g]
    ; an empty loop: the results are the inits
    %e = for %i = %c2, %c1 init(%q = %one) -> (i64) {
        %q1 = add %q, %q : i64
        yield (%q1)
    }
    %c4 = constant 4 : index
    atomic_store %e, %O[%c4, %g]
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_for_with_loop_carried_values(device):
    rng = np.random.default_rng(0)
    args = {"A": rng.integers(-50, 50, 7).astype(np.int64),
            "F": rng.standard_normal(7), "O": np.zeros((5, 3), np.int64),
            "G": np.zeros(3)}
    got = same(FOR_SRC, args, device, groups=3)
    assert got["O"][1].tolist() == [7, 6, 5]  # trip counts per work-group
    assert got["O"][4].tolist() == [1, 1, 1]


# --- multi-dimensional foreach, associated -----------------------------------------------

FOREACH_SRC = """func @k(%A: memref<i32 x ? x ? x ?>, %B: memref<f32 x ? x ?>, %R: memref<i32 x 3>,
        %E: memref<i32 x 2>) {
    %c0 = constant 0 : index
    %c1 = constant 1 : index
    %c2 = constant 2 : index
    %m = size %A[0] : index
    %n = size %A[1] : index
    %p = size %A[2] : index
    foreach (%i, %j, %k) = (%c1, %c0, %c2), (%m, %n, %p) {
        %c100 = constant 100 : index
        %c10 = constant 10 : index
        %a = mul %i, %c100 : index
        %b = mul %j, %c10 : index
        %ab = add %a, %b : index
        %v = add %ab, %k : index
        %w = cast %v : i32
        store %w, %A[%i, %j, %k]
    }
    %bm = size %B[0] : index
    %bn = size %B[1] : index
    foreach (%i, %j) = (%c0, %c0), (%bm, %bn) {
        %x = load %B[%i, %j] : f32
        %y = add %x, %x : f32
        store %y, %B[%i, %j]
    }
    ; an empty box: nothing runs
    foreach (%i, %j) = (%c2, %c0), (%c1, %bn) {
        %c9 = constant 9 : i32
        store %c9, %E[%c0]
    }
    %T = alloca : memref<f32 x 4, local>
    %has = associated %A : bool
    %hasT = associated %T : bool
    %i1 = constant 1 : i32
    %i0 = constant 0 : i32
    %h = if %has -> (i32) {
        yield (%i1)
    } else {
        yield (%i0)
    }
    %hT = if %hasT -> (i32) {
        yield (%i1)
    } else {
        yield (%i0)
    }
    store %h, %R[%c0]
    store %hT, %R[%c1]
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_foreach_nd_and_associated(device):
    rng = np.random.default_rng(1)
    args = {"A": np.full((4, 3, 5), -1, np.int32),
            "B": rng.standard_normal((5, 7)).astype(np.float32),
            "R": np.zeros(3, np.int32), "E": np.zeros(2, np.int32)}
    got = same(FOREACH_SRC, args, device)
    assert got["A"][3, 2, 4] == 324 and got["A"][0, 0, 0] == -1
    assert got["R"].tolist() == [1, 1, 0] and got["E"].tolist() == [0, 0]


# --- cumsum ---------------------------------------------------------------------------------

def cumsum_src(t: str, shape: str, mode: int, beta: str, atomic: bool = False) -> str:
    return f"""func @k(%A: memref<{t} x {shape}>, %B: memref<{t} x {shape}>, %al: {t}) {{
    %beta = constant {beta} : {t}
    cumsum{'.atomic' if atomic else ''} %al, %A, {mode}, %beta, %B
}}
"""


CUMSUMS = [("f32", "5 x 3", 0, "0.0"), ("f32", "5 x 3", 1, "1.0"), ("f64", "?", 0, "0.5"),
           ("f64", "4 x ? x 3", 1, "0.0"), ("f64", "4 x ? x 3", 2, "2.0"),
           ("i32", "6 x 4", 0, "1"), ("i64", "? x ?", 1, "-2"), ("i8", "3 x 5", 1, "0"),
           ("i16", "7", 0, "3")]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("t,shape,mode,beta", CUMSUMS)
def test_cumsum(device, t, shape, mode, beta):
    rng = np.random.default_rng(2)
    dims = [int(s) if s.strip() != "?" else 4 for s in shape.split("x")]
    dt = np.dtype({"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64,
                   "i8": np.int8, "i16": np.int16}[t])
    if dt.kind == "f":
        a, b, al = rng.standard_normal(dims), rng.standard_normal(dims), 0.75
    else:
        a, b, al = rng.integers(-4, 5, dims), rng.integers(-4, 5, dims), 3
    args = {"A": a.astype(dt), "B": b.astype(dt), "al": np.array(al, dt)}
    same(cumsum_src(t, shape, mode, beta), args, device)


@pytest.mark.parametrize("device", DEVICES)
def test_cumsum_atomic_shared_by_work_groups(device):
    """Three work-groups add into one output with `.atomic` and beta 1 (integers: exact in
    any order of the updates)."""
    rng = np.random.default_rng(3)
    args = {"A": rng.integers(-9, 9, (4, 3)).astype(np.int32),
            "B": rng.integers(-9, 9, (4, 3)).astype(np.int32), "al": np.array(2, np.int32)}
    got = same(cumsum_src("i32", "4 x 3", 1, "1", atomic=True), args, device, groups=3)
    assert np.array_equal(got["B"], args["B"] + 3 * 2 * np.cumsum(args["A"], axis=1))


# --- atomics ----------------------------------------------------------------------------------

def atomic_src(t: str, scope: str = "", sem: str = "") -> str:
    """In a foreach: every iteration adds to, maxes and mins one element each (keeping the
    old values it gets), atomically loads and stores its own; outside: a mixed atomic_add,
    applied once per work-item, and max/min applied once."""
    mod = "".join(f".{x}" for x in (scope, sem) if x)
    one = "1.0" if t.startswith("f") else "1"
    return f"""func @k(%C: memref<{t} x 3>, %X: memref<{t} x 16>, %M: memref<{t} x 4>)
        attributes{{work_group_size=[4,1]}} {{
    %c0 = constant 0 : index
    %c1 = constant 1 : index
    %c2 = constant 2 : index
    %c3 = constant 3 : index
    %c16 = constant 16 : index
    foreach (%i) = (%c0), (%c16) {{
        %v = load %X[%i] : {t}
        %o1 = atomic_max{mod} %v, %C[%c1] : {t}
        %o2 = atomic_min{mod} %v, %C[%c2] : {t}
        %w = atomic_load{mod} %X[%i] : {t}
        %s = sub %w, %v : {t}
        atomic_store{mod} %s, %X[%i]
    }}
    %one = constant {one} : {t}
    %old = atomic_add{mod} %one, %C[%c0] : {t}
    %mx = load %X[%c3] : {t}
    %oldmax = atomic_max{mod} %mx, %M[%c1] : {t}
    store %old, %M[%c0]
    store %oldmax, %M[%c2]
}}
"""


ATOMIC_TYPES = ["i8", "i16", "i32", "i64", "f32", "f64"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("t", ATOMIC_TYPES)
def test_atomics_every_type(device, t):
    rng = np.random.default_rng(4)
    dt = np.dtype({"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
                   "f32": np.float32, "f64": np.float64}[t])
    args = {"C": np.array([5, 0, 0], dt), "X": rng.integers(-20, 20, 16).astype(dt),
            "M": np.array([0, -100, 0, 0], dt)}
    got = same(atomic_src(t), args, device)
    assert got["C"][0] == 5 + 4  # once per work-item of the 4
    assert got["C"][1] == max(0, args["X"].max()) and got["M"][0] == 5


@pytest.mark.parametrize("device", DEVICES)
def test_atomic_add_in_a_foreach_returns_distinct_old_values(device):
    """Each iteration gets the value before its own update: 16 increments of one counter
    return 16 distinct old values, whatever their order."""
    src = """func @k(%C: memref<i32 x 1>, %O: memref<i32 x 16>, %F: memref<f32 x 1>) {
    %c0 = constant 0 : index
    %c16 = constant 16 : index
    foreach (%i) = (%c0), (%c16) {
        %one = constant 1 : i32
        %o = atomic_add %one, %C[%c0] : i32
        store %o, %O[%i]
        %q = constant 0.25 : f32
        %p = atomic_add %q, %F[%c0] : f32
    }
}
"""
    program = tlinterp.check(tlinterp.parse(src, lang="v0.4"))
    args = {"C": np.array([7], np.int32), "O": np.zeros(16, np.int32),
            "F": np.array([1.0], np.float32)}
    got = tlgpu.run(program, args, device=require_device(device))
    assert sorted(got["O"].tolist()) == list(range(7, 23))
    assert got["C"][0] == 23 and got["F"][0] == 5.0


SCOPED = [("", ""), ("work_group", "relaxed"), ("device", "acquire"),
          ("subgroup", "release"), ("device", "acquire_release"),
          ("cross_device", "sequentially_consistent")]


@pytest.mark.parametrize("scope,sem", SCOPED)
@pytest.mark.parametrize("t", ["i32", "i64", "f32", "i16"])
def test_atomics_with_scopes_and_semantics_on_intel(scope, sem, t):
    """OpenCL C 2.0 atomics: every scope and semantics builds and gives the interpreter's
    results."""
    require_device("intel")
    rng = np.random.default_rng(5)
    dt = np.dtype({"i32": np.int32, "i64": np.int64, "f32": np.float32, "i16": np.int16}[t])
    args = {"C": np.array([5, 0, 0], dt), "X": rng.integers(-20, 20, 16).astype(dt),
            "M": np.array([0, -100, 0, 0], dt)}
    same(atomic_src(t, scope, sem), args, "intel")
    program = lowerable(tlinterp.check(tlinterp.parse(atomic_src(t, scope, sem),
                                                      lang="v0.4")))
    code = tlgpu.lower(program, None, tlgpu.LoweringConfig(atomics_cl20=True))
    assert "atomic_compare_exchange_strong_explicit" in code or "atomic_fetch_" in code


@pytest.mark.parametrize("scope,sem,fences", [
    ("device", "acquire", 1), ("", "release", 1), ("", "sequentially_consistent", 2),
    ("cross_device", "relaxed", 0), ("work_group", "acquire_release", 2)])
def test_a_cl12_device_runs_every_semantics_between_fences(scope, sem, fences):
    """OpenCL C 1.2 atomics are relaxed: a stronger semantics is the atomic between memory
    fences (before for release, after for acquire), cross_device the device's own scope; the
    results are the interpreter's on pocl (OpenCL C 1.2)."""
    src = atomic_src("i32", scope, sem)
    args = {"C": np.zeros(3, np.int32), "X": np.arange(16, dtype=np.int32),
            "M": np.array([0, -100, 0, 0], np.int32)}
    same(src, args, "pocl")
    program = lowerable(tlinterp.check(tlinterp.parse(src, lang="v0.4")))
    code = tlgpu.lower(program, None, tlgpu.LoweringConfig(atomics_cl20=False))
    atomics = src.count("atomic_")  # each with the given scope and semantics
    assert code.count("mem_fence(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);") \
        == atomics * fences
