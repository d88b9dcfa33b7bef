"""v0.4's scalar types f16, bf16, c32, c64 lowered to OpenCL C (tlgpu/lowering/v04/lowp.py,
complexnum.py) against the interpreter, on pocl and Intel's CPU runtime: arithmetic,
comparisons, casts, abs/conj/re/im, constants (inf, NaN, -0.0 bit for bit) and scalar
arguments bit for bit; the math functions within docs/semantics.md's bounds."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from opencl_devices import require_device

import tlgpu
from tlinterp.front.pipeline import parse
from tlinterp.interp import run as interp_run
from tlinterp.interp.lowp import DTYPES

pytestmark = [pytest.mark.opencl,
              pytest.mark.filterwarnings("ignore:Non-empty compiler output")]

N = 64
DEVICES = ["pocl", "intel"]
BINARY = ("add", "sub", "mul", "div", "rem", "min", "max")
UNARY = ("neg", "abs")
MATH = ("cos", "sin", "exp", "exp2", "log", "log2", "native_cos", "native_sin", "native_exp",
        "native_exp2", "native_log", "native_log2")
CMP = ("equal", "not_equal", "greater_than", "greater_than_equal", "less_than",
       "less_than_equal")
NUMBERS = ("i8", "i16", "i32", "i64", "index", "f16", "bf16", "f32", "f64", "c32", "c64")


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    return require_device(request.param)


def _kernel(params: dict[str, str], body: list[str]) -> str:
    sig = ", ".join(f"%{k}: memref<{t} x {N}>" if " x " not in t else f"%{k}: memref<{t}>"
                    for k, t in params.items())
    lines = [f"func @k({sig}) {{", "    %c0 = constant 0 : index",
             f"    %n = constant {N} : index", "    %one = constant 1 : i32",
             "    %zero = constant 0 : i32", "    foreach (%i) = (%c0), (%n) {"]
    lines += [f"        {x}" for x in body] + ["    }", "}"]
    return "\n".join(lines) + "\n"


def _both(src: str, args: dict, device: str) -> tuple[dict, dict]:
    program = parse(src, "v04scalar.tl", lang="v0.4")
    import tlinterp

    program = tlinterp.check(program)
    want = interp_run(program, {k: v.copy() for k, v in args.items()})
    got = tlgpu.run(program, {k: v.copy() for k, v in args.items()}, device=device)
    return want, got


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind == "c":
        a = a.view(a.real.dtype)
    return a.view(f"u{a.dtype.itemsize}")


def _specials(t: str, rng) -> np.ndarray:
    """Values of t with infinities, NaNs (with payloads), signed zeros, subnormals, the
    largest finite value and random full significands."""
    dt = DTYPES[t]
    fin = ml_dtypes.finfo(dt)
    v = (rng.standard_normal(N) * 8).astype(np.float32).astype(dt)
    bits = v.view(np.uint16)
    v[:10] = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, float(fin.smallest_subnormal),
                       -3 * float(fin.smallest_subnormal), float(fin.max), -float(fin.max),
                       1.0], np.float32).astype(dt)
    bits[10] = 0x7c01 if t == "f16" else 0x7f81  # a signalling NaN with a payload
    bits[11] = 0xfe23 if t == "f16" else 0xffc3  # a negative quiet NaN with a payload
    return v


def _pattern(t: str, v: np.ndarray) -> np.ndarray:
    """The array as an argument: bf16 as its uint16 patterns (the .npz convention)."""
    return v.view(np.uint16) if t == "bf16" else v


@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_lowp_arithmetic_and_comparisons(device, t):
    rng = np.random.default_rng(16)
    a, b = _specials(t, rng), _specials(t, rng)
    b[:12] = np.roll(b[:12], 3)  # the special values against each other
    body = [f"%a = load %A[%i] : {t}", f"%b = load %B[%i] : {t}"]
    for k, op in enumerate(BINARY + UNARY):
        rhs = "" if op in UNARY else ", %b"
        body += [f"%r{k} = {op} %a{rhs} : {t}", f"%col{k} = constant {k} : index",
                 f"store %r{k}, %R[%i, %col{k}]"]
    for k, cond in enumerate(CMP):
        body += [f"%p{k} = {cond} %a, %b : bool",
                 f"%v{k} = if %p{k} -> (i32) {{", "    yield (%one)", "} else {",
                 "    yield (%zero)", "}", f"%q{k} = constant {k} : index",
                 f"store %v{k}, %C[%i, %q{k}]"]
    nr = len(BINARY + UNARY)
    src = _kernel({"A": t, "B": t, "R": f"{t} x {N} x {nr}", "C": f"i32 x {N} x {len(CMP)}"},
                  body)
    args = {"A": _pattern(t, a), "B": _pattern(t, b),
            "R": np.zeros((N, nr), np.uint16 if t == "bf16" else np.float16),
            "C": np.zeros((N, len(CMP)), np.int32)}
    want, got = _both(src, args, device)
    for k, op in enumerate(BINARY + UNARY):  # every bit, NaN payloads included
        assert np.array_equal(_bits(want["R"][:, k]), _bits(got["R"][:, k])), (op, device)
    assert np.array_equal(want["C"], got["C"])


def _ulps(t: str, want: np.ndarray, got: np.ndarray) -> np.ndarray:
    """|want - got| in units of the last place of want (inf where they differ in class)."""
    dt = DTYPES[t]
    w, g = want.astype(dt).astype(np.float64), got.astype(dt).astype(np.float64)
    same = (w == g) | (np.isnan(w) & np.isnan(g))
    ulp = np.spacing(np.abs(want.astype(dt))).astype(np.float64)
    return np.where(same, 0.0, np.abs(w - g) / ulp)


@pytest.mark.parametrize("t,bound", [("f16", 2), ("bf16", 1)])
def test_lowp_math_within_bounds(device, t, bound):
    """cos ... native_log2 on f16/bf16: within the docs' bound (2 ulp f16, 1 ulp bf16) of the
    interpreter's, on positive arguments of moderate size (the native forms' range)."""
    rng = np.random.default_rng(17)
    a = rng.uniform(0.01, 20, N).astype(np.float32).astype(DTYPES[t])
    body = [f"%a = load %A[%i] : {t}"]
    for k, f in enumerate(MATH):
        body += [f"%r{k} = {f} %a : {t}", f"%col{k} = constant {k} : index",
                 f"store %r{k}, %R[%i, %col{k}]"]
    src = _kernel({"A": t, "R": f"{t} x {N} x {len(MATH)}"}, body)
    args = {"A": _pattern(t, a),
            "R": np.zeros((N, len(MATH)), np.uint16 if t == "bf16" else np.float16)}
    want, got = _both(src, args, device)
    w = np.asarray(want["R"]).view(DTYPES[t])
    g = np.asarray(got["R"]).view(DTYPES[t])
    assert (_ulps(t, w, g) <= bound).all()


def _complex_values(t: str, rng) -> np.ndarray:
    z = (rng.standard_normal(N) * 4 + 1j * rng.standard_normal(N) * 4).astype(DTYPES[t])
    z[:6] = [0, complex(-0.0, 0.0), complex(3, -4), complex(1e30, 1e30), complex(0, -2.5),
             complex(-8, 15)]
    return z


@pytest.mark.parametrize("t", ["c32", "c64"])
def test_complex_arithmetic(device, t):
    """add sub mul div neg conj on the type, re im abs to the part's type, equal/not_equal:
    bit for bit (the formulas of docs/semantics.md)."""
    rng = np.random.default_rng(32)
    a, b = _complex_values(t, rng), _complex_values(t, rng)
    b[:6] = np.roll(b[:6], 2)
    part = "f32" if t == "c32" else "f64"
    ops = ("add", "sub", "mul", "div")
    body = [f"%a = load %A[%i] : {t}", f"%b = load %B[%i] : {t}"]
    for k, op in enumerate(ops):
        body += [f"%r{k} = {op} %a, %b : {t}", f"%col{k} = constant {k} : index",
                 f"store %r{k}, %R[%i, %col{k}]"]
    body += [f"%g = neg %a : {t}", "%c4 = constant 4 : index", "store %g, %R[%i, %c4]",
             f"%j = conj %a : {t}", "%c5 = constant 5 : index", "store %j, %R[%i, %c5]"]
    for k, op in enumerate(("re", "im", "abs")):
        body += [f"%s{k} = {op} %a : {part}", f"%pc{k} = constant {k} : index",
                 f"store %s{k}, %P[%i, %pc{k}]"]
    for k, cond in enumerate(("equal", "not_equal")):
        body += [f"%p{k} = {cond} %a, %b : bool",
                 f"%v{k} = if %p{k} -> (i32) {{", "    yield (%one)", "} else {",
                 "    yield (%zero)", "}", f"%q{k} = constant {k} : index",
                 f"store %v{k}, %C[%i, %q{k}]"]
    b[7] = a[7]  # one equal pair
    src = _kernel({"A": t, "B": t, "R": f"{t} x {N} x 6", "P": f"{part} x {N} x 3",
                   "C": f"i32 x {N} x 2"}, body)
    args = {"A": a, "B": b, "R": np.zeros((N, 6), DTYPES[t]),
            "P": np.zeros((N, 3), DTYPES[part]), "C": np.zeros((N, 2), np.int32)}
    want, got = _both(src, args, device)
    assert np.array_equal(_bits(want["R"]), _bits(got["R"]))
    assert np.array_equal(_bits(want["P"]), _bits(got["P"]))
    assert np.array_equal(want["C"], got["C"])


@pytest.mark.parametrize("t", ["c32", "c64"])
def test_complex_exp_within_bounds(device, t):
    """exp and exp2 (and native_*): each part within 4 ulp of the result's magnitude."""
    rng = np.random.default_rng(33)
    a = (rng.uniform(-5, 5, N) + 1j * rng.uniform(-6, 6, N)).astype(DTYPES[t])
    a[0] = complex(2, 0)
    fs = ("exp", "exp2", "native_exp", "native_exp2")
    body = [f"%a = load %A[%i] : {t}"]
    for k, f in enumerate(fs):
        body += [f"%r{k} = {f} %a : {t}", f"%col{k} = constant {k} : index",
                 f"store %r{k}, %R[%i, %col{k}]"]
    src = _kernel({"A": t, "R": f"{t} x {N} x {len(fs)}"}, body)
    want, got = _both(src, {"A": a, "R": np.zeros((N, len(fs)), DTYPES[t])}, device)
    w, g = want["R"], got["R"]
    ulp = np.spacing(np.abs(w).astype(w.real.dtype))
    assert (np.abs(w.real - g.real) <= 4 * ulp).all() and (np.abs(w.imag - g.imag) <= 4 * ulp
                                                            ).all()
    assert g[0, 0].imag == 0 and g[0, 1].imag == 0  # a real argument stays real


def _cast_sources(t: str, rng) -> np.ndarray:
    """Values every target takes without undefined behaviour (in i8's range after truncation),
    with fractions, ties of the narrow types and signed zeros; integers of every magnitude
    when no float target would truncate."""
    if t in ("i8", "i16", "i32", "i64", "index"):
        info = np.iinfo(DTYPES[t])
        v = rng.integers(info.min, info.max, N, dtype=DTYPES[t], endpoint=True)
        v[:4] = [info.min, info.max, 0, -1]
        if info.bits > 8:  # ties in f16/bf16 (and f32)
            v[4:8] = [2049, -2051, 257, 16777217 if info.bits > 16 else 4097]
        return v
    if t in ("c32", "c64"):
        return (rng.uniform(-127, 127, N) + 1j * rng.uniform(-1e5, 1e5, N)).astype(DTYPES[t])
    v = rng.uniform(-127, 127, N)
    v[:6] = [0.0, -0.0, 100.5, -2.75, 1 / 3, 126.999]
    return v.astype(np.float32).astype(DTYPES[t]) if t in ("f16", "bf16") else \
        v.astype(DTYPES[t])


@pytest.mark.parametrize("src_t", NUMBERS)
def test_casts(device, src_t):
    """`cast` from src_t to every type v0.4 allows, bit for bit (correctly rounded; f64 and
    i64 to f16/bf16 rounded once)."""
    rng = np.random.default_rng(NUMBERS.index(src_t))
    targets = ("c32", "c64") if src_t.startswith("c") else NUMBERS
    body = [f"%a = load %A[%i] : {src_t}"]
    for d in targets:
        body += [f"%y_{d} = cast %a : {d}", f"store %y_{d}, %O_{d}[%i]"]
    x = _cast_sources(src_t, rng)
    params = {"A": src_t, **{f"O_{d}": d for d in targets}}
    src = _kernel(params, body)
    args = {"A": _pattern(src_t, x) if src_t == "bf16" else x}
    args |= {f"O_{d}": np.zeros(N, np.uint16 if d == "bf16" else DTYPES[d]) for d in targets}
    want, got = _both(src, args, device)
    for d in targets:
        assert np.array_equal(_bits(want[f"O_{d}"]), _bits(got[f"O_{d}"])), (src_t, d)


def test_special_constants_bit_for_bit(device):
    """inf, -inf, nan and -0.0 constants of every float and complex type, and their use in
    arithmetic, as the interpreter's bits."""
    types = ("f16", "bf16", "f32", "f64")
    body = []
    for t in types:
        for k, v in enumerate(("inf", "-inf", "nan", "-0.0", "0.1")):
            body += [f"%k_{t}_{k} = constant {v} : {t}", f"%ix_{t}_{k} = constant {k} : index",
                     f"store %k_{t}_{k}, %O_{t}[%ix_{t}_{k}]"]
    for t in ("c32", "c64"):
        for k, v in enumerate(("[inf, -0.0]", "[-0.0, nan]", "[0.1, -inf]")):
            body += [f"%k_{t}_{k} = constant {v} : {t}", f"%ix_{t}_{k} = constant {k} : index",
                     f"store %k_{t}_{k}, %O_{t}[%ix_{t}_{k}]"]
    sig = ", ".join(f"%O_{t}: memref<{t} x 5>" for t in types + ("c32", "c64"))
    src = f"func @k({sig}) {{\n" + "".join(f"    {x}\n" for x in body) + "}\n"
    args = {f"O_{t}": np.zeros(5, np.uint16 if t == "bf16" else DTYPES[t])
            for t in types + ("c32", "c64")}
    want, got = _both(src, args, device)
    for t in types + ("c32", "c64"):
        assert np.array_equal(_bits(want[f"O_{t}"]), _bits(got[f"O_{t}"])), t


def test_scalar_arguments(device):
    """f16, bf16, c32 and c64 scalar arguments reach the kernel as their bytes."""
    src = ("func @k(%h: f16, %b: bf16, %z: c32, %w: c64, %H: memref<f16 x 1>, "
           "%B: memref<bf16 x 1>, %Z: memref<c32 x 1>, %W: memref<c64 x 1>) {\n"
           "    %c0 = constant 0 : index\n"
           "    %h2 = mul %h, %h : f16\n    store %h2, %H[%c0]\n"
           "    %b2 = add %b, %b : bf16\n    store %b2, %B[%c0]\n"
           "    %z2 = mul %z, %z : c32\n    store %z2, %Z[%c0]\n"
           "    %w2 = div %w, %w : c64\n    store %w2, %W[%c0]\n}\n")
    args = {"h": np.float16(1.5), "b": np.array(0x3fc1, np.uint16).view(DTYPES["bf16"])[()],
            "z": np.complex64(1 - 2j), "w": np.complex128(3 + 0.5j),
            "H": np.zeros(1, np.float16), "B": np.zeros(1, np.uint16),
            "Z": np.zeros(1, np.complex64), "W": np.zeros(1, np.complex128)}
    want, got = _both(src, args, device)
    for k in "HBZW":
        assert np.array_equal(_bits(want[k]), _bits(got[k])), k
    assert got["H"][0] == np.float16(2.25) and got["Z"][0] == np.complex64(-3 - 4j)
