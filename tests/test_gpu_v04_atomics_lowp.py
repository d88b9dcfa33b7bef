"""v0.4's atomics (atomic_load, atomic_store, atomic_add|max|min returning the old value) and
`cumsum` on f16, bf16 and c32 elements through our OpenCL lowering, against the interpreter bit
for bit: on pocl (OpenCL C 1.2: a compare-and-swap loop on the aligned 32-bit word holding a
16-bit element, on the 64-bit word of a c32) and on Intel's CPU runtime (OpenCL C 2.0
atomics). c64 atomics (16 bytes, no compare-and-swap) and max/min of complex elements are
refused by name."""

from __future__ import annotations

import numpy as np
import pytest
from opencl_devices import require_device

import tlgpu
import tlinterp
from tlinterp.front.pipeline import lowerable
from tlinterp.interp.lowp import DTYPES
from tlinterp.lang.diagnostics import NotExecutable

pytestmark = [pytest.mark.opencl,
              pytest.mark.filterwarnings("ignore:Non-empty compiler output")]


@pytest.fixture(params=["pocl", "intel"])
def device(request) -> str:
    return require_device(request.param)


def same_bits(src: str, args: dict, device: str, groups=None) -> dict:
    """The lowering's outputs, after checking they equal the interpreter's bit for bit."""
    program = tlinterp.check(tlinterp.parse(src, lang="v0.4"))
    want = tlinterp.run(program, {k: v.copy() for k, v in args.items()}, groups=groups)
    got = tlgpu.run(program, {k: v.copy() for k, v in args.items()}, groups=groups,
                    device=device)
    assert want.keys() == got.keys()
    for k in want:
        w, g = np.ascontiguousarray(want[k]), np.ascontiguousarray(got[k])
        assert w.dtype == g.dtype and w.shape == g.shape, k
        assert w.view(np.uint8).tobytes() == g.view(np.uint8).tobytes(), (k, w, g)
    return got


def _dtype(t: str) -> np.dtype:
    return np.dtype(DTYPES.get(t, {"c32": np.complex64, "c64": np.complex128}.get(t)))


def _cplx(t: str) -> bool:
    return t.startswith("c")


# --- atomics ----------------------------------------------------------------------------------

def atomic_src(t: str, mod: str = "") -> str:
    """In a foreach: every iteration adds its value into one shared element (small integers:
    exact in any order) and into its own (keeping the old value), maxes and mins its own
    element (special values: NaN, -0.0, inf), atomically loads and stores another; outside:
    a mixed atomic_add, applied once per work-item."""
    one = "[1.0, 2.0]" if _cplx(t) else "1.0"
    order = "" if _cplx(t) else f"""
        %m = load %Y[%i] : {t}
        %omax = atomic_max{mod} %m, %P[%i] : {t}
        %omin = atomic_min{mod} %m, %Q[%i] : {t}
        store %omax, %R[%i]
        store %omin, %S[%i]"""
    return f"""func @k(%C: memref<{t} x 2>, %X: memref<{t} x 16>, %O: memref<{t} x 16>,
        %L: memref<{t} x 16>, %Y: memref<{t} x 16>, %P: memref<{t} x 16>,
        %Q: memref<{t} x 16>, %R: memref<{t} x 16>, %S: memref<{t} x 16>,
        %M: memref<{t} x 1>) attributes{{work_group_size=[4,1]}} {{
    %c0 = constant 0 : index
    %c1 = constant 1 : index
    %c16 = constant 16 : index
    foreach (%i) = (%c0), (%c16) {{
        %v = load %X[%i] : {t}
        %o1 = atomic_add{mod} %v, %C[%c1] : {t}
        %o2 = atomic_add{mod} %v, %O[%i] : {t}
        store %o2, %X[%i]
        %w = atomic_load{mod} %L[%i] : {t}
        %s = add %w, %v : {t}
        atomic_store{mod} %s, %L[%i]{order}
    }}
    %one = constant {one} : {t}
    %old = atomic_add{mod} %one, %C[%c0] : {t}
    store %old, %M[%c0]
}}
"""


SPECIALS = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, -2.25, 65504.0, 3e-5, -0.0, np.nan,
            0.0, 1.0, -np.inf, 7.0, 0.5]


def atomic_args(t: str, rng) -> dict:
    dt = _dtype(t)
    ints = lambda: rng.integers(-20, 20, 16).astype(np.float64)  # noqa: E731
    if _cplx(t):
        x, o, lv = (ints() + 1j * ints() for _ in range(3))
        c = np.array([5 + 1j, -3j])
    else:
        x, o, lv = ints(), np.array(SPECIALS), ints()
        c = np.array([5.0, 0.0])
    args = {"C": c.astype(dt), "X": x.astype(dt), "O": o.astype(dt), "L": lv.astype(dt),
            "M": np.zeros(1, dt)}
    if not _cplx(t):
        y = np.array(SPECIALS[::-1])
        args |= {"Y": y.astype(dt), "P": np.array(SPECIALS).astype(dt),
                 "Q": np.roll(SPECIALS, 3).astype(dt), "R": np.zeros(16, dt),
                 "S": np.zeros(16, dt)}
    else:  # unused by the kernel without max/min, still arguments
        args |= {k: np.zeros(16, dt) for k in "YPQRS"}
    return args


@pytest.mark.parametrize("t", ["f16", "bf16", "c32"])
def test_atomics_on_v04_types(device, t):
    args = atomic_args(t, np.random.default_rng(7))
    got = same_bits(atomic_src(t), args, device)
    one = (1 + 2j) if _cplx(t) else 1.0
    assert got["C"][0] == args["C"][0] + 4 * one  # once per work-item of the 4
    assert got["M"][0] == args["C"][0]
    assert np.array_equal(got["X"], args["O"], equal_nan=True)  # the old values


@pytest.mark.parametrize("mod", [".work_group.relaxed", ".device.acquire",
                                 ".subgroup.release", ".cross_device.sequentially_consistent",
                                 ".device.acquire_release"])
@pytest.mark.parametrize("t", ["f16", "c32"])
def test_atomics_on_v04_types_with_scopes_and_semantics(device, t, mod):
    same_bits(atomic_src(t, mod), atomic_args(t, np.random.default_rng(8)), device)


def test_f16_and_bf16_helpers_are_distinct():
    """f16 and bf16 are both ushort in C: their helpers must not share a name."""
    src = """func @k(%A: memref<f16 x 2>, %B: memref<bf16 x 2>, %U: memref<i16 x 2>) {
    %c0 = constant 0 : index
    foreach (%i) = (%c0), (%c0) {
        %a = load %A[%i] : f16
        %o = atomic_max %a, %A[%c0] : f16
        %b = load %B[%i] : bf16
        %p = atomic_max %b, %B[%c0] : bf16
        %u = load %U[%i] : i16
        %q = atomic_max %u, %U[%c0] : i16
    }
}
"""
    program = lowerable(tlinterp.check(tlinterp.parse(src, lang="v0.4")))
    for cl20 in (False, True):
        code = tlgpu.lower(program, None, tlgpu.LoweringConfig(atomics_cl20=cl20))
        names = {n for n in code.split() if n.startswith("tl_fetch_max_")}
        assert len({n.split("(")[0] for n in names}) == 3, names


REFUSED = [("c64", "%o = atomic_add %v, %A[%c0] : c64", "an atomic access to c64 elements"),
           ("c64", "%o = atomic_load %A[%c0] : c64", "an atomic access to c64 elements"),
           ("c64", "atomic_store %v, %A[%c0]", "an atomic access to c64 elements"),
           ("c64", "%s = subview %A[1:2] : memref<c64 x 2>\n    atomic_store %v, %s[%c0]",
            "an atomic access to c64 elements"),
           ("c32", "%o = atomic_max %v, %A[%c0] : c32", "atomic_max of complex elements"),
           ("c32", "%o = atomic_min %v, %A[%c0] : c32", "atomic_min of complex elements"),
           ("c64", "%one = constant [1.0, 0.0] : c64\n    cumsum.atomic %v, %A, 0, %one, %A",
            "an atomic access to c64 elements")]


@pytest.mark.parametrize("t,inst,why", REFUSED)
def test_what_is_not_lowered_is_refused_by_name(t, inst, why):
    src = f"""func @k(%A: memref<{t} x 4>) attributes{{work_group_size=[1,1]}} {{
    %c0 = constant 0 : index
    %v = constant [1.0, 2.0] : {t}
    {inst}
}}
"""
    program = tlinterp.check(tlinterp.parse(src, lang="v0.4"))
    with pytest.raises(NotExecutable, match=f"not yet lowered: {why} at [45]\\."):
        lowerable(program)


# --- cumsum -----------------------------------------------------------------------------------

def cumsum_src(t: str, shape: str, mode: int, beta: str, atomic: bool = False) -> str:
    return f"""func @k(%A: memref<{t} x {shape}>, %B: memref<{t} x {shape}>, %al: {t}) {{
    %beta = constant {beta} : {t}
    cumsum{'.atomic' if atomic else ''} %al, %A, {mode}, %beta, %B
}}
"""


def cumsum_args(t: str, dims, rng, exact: bool) -> dict:
    dt = _dtype(t)

    def vals():
        v = rng.integers(-6, 7, dims) if exact else rng.standard_normal(dims) * 100
        if _cplx(t):
            v = v + 1j * (rng.integers(-6, 7, dims) if exact else rng.standard_normal(dims))
        return v.astype(dt)
    return {"A": vals(), "B": vals(), "al": np.array(0.75 if not _cplx(t) else 0.5 - 2j, dt)}


CUMSUMS = [("f16", "5 x 3", 0, "0.0"), ("f16", "5 x 3", 1, "1.0"), ("bf16", "? x 4", 1, "0.5"),
           ("bf16", "6", 0, "0.0"), ("f16", "4 x ? x 3", 2, "-2.0"),
           ("c32", "5 x 3", 0, "[0.0, 0.0]"), ("c32", "4 x ?", 1, "[1.0, -0.5]"),
           ("c64", "3 x 4", 1, "[0.25, 2.0]"), ("c64", "7", 0, "[0.0, 0.0]")]


@pytest.mark.parametrize("t,shape,mode,beta", CUMSUMS)
def test_cumsum_on_v04_types(device, t, shape, mode, beta):
    dims = [int(s) if s.strip() != "?" else 4 for s in shape.split("x")]
    args = cumsum_args(t, dims, np.random.default_rng(9), exact=False)
    same_bits(cumsum_src(t, shape, mode, beta), args, device)


@pytest.mark.parametrize("t", ["f16", "bf16", "c32"])
def test_cumsum_atomic_shared_by_work_groups(device, t):
    """Three work-groups add into one output with `.atomic` and beta 1 (small integers:
    exact in any order of the updates)."""
    args = cumsum_args(t, (4, 3), np.random.default_rng(10), exact=True)
    args["al"] = np.array(2, args["al"].dtype)
    got = same_bits(cumsum_src(t, "4 x 3", 1, "[1.0, 0.0]" if _cplx(t) else "1.0", True),
                    args, device, groups=3)
    want = args["B"].astype(np.complex128) + 6 * np.cumsum(args["A"].astype(np.complex128), 1)
    assert np.array_equal(got["B"].astype(np.complex128), want)
