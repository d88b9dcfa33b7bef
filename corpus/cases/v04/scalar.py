"""Runnable v0.4 scalar kernels beyond corpus/cases/v04/core.py: every integer operation on i8, i16,
i64 and index (C semantics: truncating division, remainder with the dividend's sign,
arithmetic right shift), bool logic, float and complex operations on each type class, the math
functions on f16/bf16/complex and the native ones, casts from every number type to every other,
comparisons on each type class. Each expected value is computed here with plain Python
integers, `math`, `complex`, `struct` (f16, f32 rounding) and ml_dtypes (bf16 rounding), never
with the interpreter or NumPy's array arithmetic."""

from __future__ import annotations

import math
import struct

import numpy as np

from corpus.cases.model import ValidCase
from corpus.cases.util import rng_for
from corpus.cases.v04.core import _foreach_kernel, _lines, _v, _vectors, bf16_bits, bf16_val, f16

BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "index": 64}
NP = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "index": np.int64,
      "f16": np.float16, "bf16": np.uint16, "f32": np.float32, "f64": np.float64,
      "c32": np.complex64, "c64": np.complex128}


def wrap(v: int, t: str) -> int:
    """v in t's two's complement range."""
    n = BITS[t]
    return (v + (1 << (n - 1))) % (1 << n) - (1 << (n - 1))


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


INT_BINARY = {
    "add": lambda a, b, s: a + b, "sub": lambda a, b, s: a - b, "mul": lambda a, b, s: a * b,
    "div": lambda a, b, s: c_div(a, b), "rem": lambda a, b, s: a - b * c_div(a, b),
    "shl": lambda a, b, s: a << s, "shr": lambda a, b, s: a >> s,  # Python's >> is arithmetic
    "and": lambda a, b, s: a & b, "or": lambda a, b, s: a | b, "xor": lambda a, b, s: a ^ b,
    "min": lambda a, b, s: min(a, b), "max": lambda a, b, s: max(a, b)}
INT_UNARY = {"not": lambda a: ~a, "neg": lambda a: -a, "abs": abs}


def integers() -> list[ValidCase]:
    """Every binary and unary integer operation on one type per kernel (no overflow: |a| <= 12,
    shifts by 0..3, divisors nonzero)."""
    out = []
    for t in ("i8", "i16", "i64", "index"):
        rng = rng_for(f"v04_int_{t}")
        a = [int(v) for v in rng.integers(-12, 13, 8)]
        b = [int(v) or 1 for v in rng.integers(-5, 6, 8)]
        s = [int(v) for v in rng.integers(0, 4, 8)]
        ops = list(INT_BINARY) + list(INT_UNARY)
        lines = [f"%a = load %A[%i] : {t}", f"%b = load %B[%i] : {t}", f"%s = load %S[%i] : {t}"]
        for o in ops:
            if o in INT_UNARY:
                lines.append(f"%r_{o} = {o} %a : {t}")
            else:
                rhs = "%s" if o in ("shl", "shr") else "%b"
                lines.append(f"%r_{o} = {o} %a, {rhs} : {t}")
            lines.append(f"store %r_{o}, %{o.upper()}[%i]")
        params = _vectors(8, A=t, B=t, S=t, **{o.upper(): t for o in ops})
        args = {"A": np.array(a, NP[t]), "B": np.array(b, NP[t]), "S": np.array(s, NP[t])}
        args |= {o.upper(): np.zeros(8, NP[t]) for o in ops}
        exp = {}
        for o in ops:
            if o in INT_UNARY:
                exp[o.upper()] = [wrap(INT_UNARY[o](x), t) for x in a]
            else:
                exp[o.upper()] = [wrap(INT_BINARY[o](x, y, z), t) for x, y, z in zip(a, b, s)]
        out.append(_v(f"int_ops_{t}", _foreach_kernel(params, 8, _lines(*lines)), args, exp,
                      ops + ["load", "store", "foreach"], [t]))
    return out


def bool_logic() -> list[ValidCase]:
    """and/or/xor/not on bool: the conditions come from comparisons, the results leave as 0/1
    through `if` (bool has no memref storage and no casts)."""
    ops = ["and", "or", "xor"]
    lines = ["%a = load %A[%i] : i32", "%b = load %B[%i] : i32", "%p = equal %a, %one : bool",
             "%q = equal %b, %one : bool"]
    for j, o in enumerate(ops + ["not"]):
        expr = "not %p : bool" if o == "not" else f"{o} %p, %q : bool"
        lines += [f"%r{j} = {expr}", f"%v{j} = if %r{j} -> (i32) {{", "    yield (%one)",
                  "} else {", "    yield (%zero)", "}", f"%col{j} = constant {j} : index",
                  f"store %v{j}, %R[%i, %col{j}]"]
    src = _foreach_kernel("%A: memref<i32 x 4>, %B: memref<i32 x 4>, %R: memref<i32 x 4 x 4>", 4,
                          _lines(*lines),
                          "    %one = constant 1 : i32\n    %zero = constant 0 : i32\n")
    a, b = [0, 0, 1, 1], [0, 1, 0, 1]
    ref = {"and": lambda p, q: p and q, "or": lambda p, q: p or q, "xor": lambda p, q: p != q}
    r = [[int(ref[o](x == 1, y == 1)) for o in ops] + [int(x != 1)] for x, y in zip(a, b)]
    args = {"A": np.array(a, np.int32), "B": np.array(b, np.int32),
            "R": np.zeros((4, 4), np.int32)}
    return [_v("bool_logic", src, args, {"R": r}, ops + ["not", "equal", "if", "yield", "load",
                                                          "store", "foreach", "constant"],
               ["bool", "i32"])]


def complex_unary() -> list[ValidCase]:
    """conj, re, im, abs and neg on c64 (c32: corpus/cases/v04/core.py unary_complex): abs of
    Pythagorean pairs is exact."""
    src = _foreach_kernel(
        _vectors(4, Z="c64", C="c64", N="c64", R="f64", I="f64", M="f64"), 4, _lines(
            "%z = load %Z[%i] : c64", "%c = conj %z : c64", "%g = neg %z : c64",
            "%r = re %z : f64", "%m = im %z : f64", "%a = abs %z : f64", "store %c, %C[%i]",
            "store %g, %N[%i]", "store %r, %R[%i]", "store %m, %I[%i]", "store %a, %M[%i]"))
    z = [complex(-8, 15), complex(7, 24), complex(0.375, -0.5), complex(-20, -21)]
    args = {"Z": np.array(z, np.complex128), "C": np.zeros(4, np.complex128),
            "N": np.zeros(4, np.complex128)} | {k: np.zeros(4) for k in "RIM"}
    exp = {"C": [v.conjugate() for v in z], "N": [-v for v in z], "R": [v.real for v in z],
           "I": [v.imag for v in z], "M": [math.hypot(v.real, v.imag) for v in z]}
    return [_v("unary_c64", src, args, exp, ["conj", "neg", "re", "im", "abs"], ["c64", "f64"])]


def f32r(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def floats() -> list[ValidCase]:
    """rem/min/max/abs/neg on f64, f32, f16 and bf16 (eighths: every result is exact, fmod
    included)."""
    out = []
    ops = ["rem", "min", "max"]
    py = {"rem": math.fmod, "min": min, "max": max}
    for t in ("f64", "f32", "f16", "bf16"):
        a = _eighths_nonzero(f"v04_float_{t}_a", 6)
        b = _eighths_nonzero(f"v04_float_{t}_b", 6)
        lines = [f"%a = load %A[%i] : {t}", f"%b = load %B[%i] : {t}"]
        for o in ops:
            lines += [f"%r_{o} = {o} %a, %b : {t}", f"store %r_{o}, %{o.upper()}[%i]"]
        lines += [f"%r_abs = abs %a : {t}", "store %r_abs, %ABS[%i]", f"%r_neg = neg %b : {t}",
                  "store %r_neg, %NEG[%i]"]
        names = [o.upper() for o in ops] + ["ABS", "NEG"]
        params = _vectors(6, A=t, B=t, **{n: t for n in names})
        enc = (lambda v: bf16_bits(v)) if t == "bf16" else (lambda v: v)
        args = {"A": np.array([enc(v) for v in a], NP[t]),
                "B": np.array([enc(v) for v in b], NP[t])}
        args |= {n: np.zeros(6, NP[t]) for n in names}
        exp = {o.upper(): [enc(py[o](x, y)) for x, y in zip(a, b)] for o in ops}
        exp |= {"ABS": [enc(abs(x)) for x in a], "NEG": [enc(-y) for y in b]}
        out.append(_v(f"float_ops_{t}", _foreach_kernel(params, 6, _lines(*lines)), args, exp,
                      ops + ["abs", "neg", "load", "store", "foreach"], [t]))
    return out


def _eighths_nonzero(name: str, n: int) -> list[float]:
    rng = rng_for(name)
    return [(int(v) or 3) / 8 for v in rng.integers(-24, 25, n)]


# math functions at points where the result is exact in every precision
_MATH_POINTS = {"exp": (0.0, 1.0), "exp2": (2.0, 4.0), "log": (1.0, 0.0), "log2": (8.0, 3.0),
                "sin": (0.0, 0.0), "cos": (0.0, 1.0), "native_exp": (0.0, 1.0),
                "native_exp2": (1.0, 2.0), "native_log": (1.0, 0.0), "native_log2": (0.5, -1.0),
                "native_sin": (0.0, 0.0), "native_cos": (0.0, 1.0)}
# complex arguments (v0.4 defines only the exponentials on them): at 0, exact whatever the formula
_COMPLEX_POINTS = {"exp": (0.0, 1.0), "exp2": (0.0, 1.0), "native_exp": (0.0, 1.0),
                   "native_exp2": (0.0, 1.0)}


def math_types() -> list[ValidCase]:
    out = []
    for t in ("f16", "bf16", "f32", "c32", "c64"):
        points = _COMPLEX_POINTS if t.startswith("c") else _MATH_POINTS
        names = list(points)
        lines = [f"%c{i} = constant {i} : index\n%x{i} = load %X[%c{i}] : {t}\n"
                 f"%y{i} = {f} %x{i} : {t}\nstore %y{i}, %Y[%c{i}]" for i, f in enumerate(names)]
        body = "".join(f"    {x}\n" for line in lines for x in line.split("\n"))
        src = (f"func @k(%X: memref<{t} x {len(names)}>, %Y: memref<{t} x {len(names)}>) {{\n"
               f"{body}}}\n")
        enc = (lambda v: bf16_bits(v)) if t == "bf16" else (lambda v: v)
        args = {"X": np.array([enc(points[f][0]) for f in names], NP[t]),
                "Y": np.zeros(len(names), NP[t])}
        exp = {"Y": [enc(points[f][1]) for f in names]}
        out.append(_v(f"math_points_{t}", src, args, exp,
                      names + ["load", "store", "constant"], [t]))
    return out


# --- casts -----------------------------------------------------------------------------------

INT_TYPES = ("i8", "i16", "i32", "i64", "index")
REAL_TYPES = ("f16", "bf16", "f32", "f64")
CAST_TARGETS = INT_TYPES + REAL_TYPES + ("c32", "c64")


def _round(v: float, t: str):
    """v (a Python float or int) converted to t as v0.4 casts do: truncation to integers,
    round to nearest even for floats."""
    if t in INT_TYPES:
        return wrap(math.trunc(v), t)
    if t == "f16":
        return f16(float(v))
    if t == "bf16":
        return bf16_bits(float(v))
    if t == "f32":
        return f32r(float(v))
    if t == "c32":
        return complex(f32r(v.real), f32r(v.imag)) if isinstance(v, complex) else \
            complex(f32r(float(v)), 0.0)
    if t == "c64":
        return complex(v)
    return float(v)


def casts() -> list[ValidCase]:
    """One kernel per source type, casting each element to every number type (values exact in
    all of them, and one (1/3) that every narrower float rounds)."""
    out = []
    for src_t in INT_TYPES + REAL_TYPES + ("c32", "c64"):
        if src_t in INT_TYPES:
            vals: list = [-3, -1, 0, 2, 100]
        elif src_t.startswith("c"):
            vals = [complex(-3.0, 1.5), complex(0.25, -2.75), complex(100.5, 0.0)]
        else:
            vals = [-3.0, -1.5, 0.25, 2.75, 100.5, 1 / 3]
        vals = [_round(v, src_t) if src_t not in ("bf16",) else bf16_val(bf16_bits(v))
                for v in vals]
        targets = ("c32", "c64") if src_t.startswith("c") else CAST_TARGETS
        n = len(vals)
        lines = [f"%x = load %X[%i] : {src_t}"]
        for t in targets:
            name = t.upper()
            lines += [f"%y_{t} = cast %x : {t}", f"store %y_{t}, %{name}[%i]"]
        params = _vectors(n, X=src_t, **{t.upper(): t for t in targets})
        stored = [bf16_bits(v) for v in vals] if src_t == "bf16" else vals
        args = {"X": np.array(stored, NP[src_t])}
        args |= {t.upper(): np.zeros(n, NP[t]) for t in targets}
        exp = {t.upper(): [_round(v, t) for v in vals] for t in targets}
        out.append(_v(f"cast_from_{src_t}", _foreach_kernel(params, n, _lines(*lines)), args,
                      exp, ["cast", "load", "store", "foreach"], (src_t,) + targets))
    return out


# --- comparisons -----------------------------------------------------------------------------

_CMP = {"equal": lambda x, y: x == y, "not_equal": lambda x, y: x != y,
        "greater_than": lambda x, y: x > y, "greater_than_equal": lambda x, y: x >= y,
        "less_than": lambda x, y: x < y, "less_than_equal": lambda x, y: x <= y}


def compares() -> list[ValidCase]:
    """Each comparison on i8, i64, index, f16, bf16, f64; equal/not_equal on c32 and c64 (complex
    numbers have no order)."""
    out = []
    for t in ("i8", "i64", "index", "f16", "bf16", "f64", "c32", "c64"):
        ops = ["equal", "not_equal"] if t.startswith("c") else list(_CMP)
        if t in INT_TYPES:
            a, b = [1, 2, -3, 5, 0], [2, 2, 1, -5, 0]
        elif t.startswith("c"):
            a = [complex(1, 2), complex(1, 2), complex(0, -0.0), complex(3, 1)]
            b = [complex(1, 2), complex(1, -2), complex(-0.0, 0), complex(3, 1.5)]
        else:
            a, b = [1.0, 2.5, math.nan, -0.0, math.inf], [2.0, 2.5, 1.0, 0.0, -math.inf]
        n = len(a)
        lines = [f"%a = load %A[%i] : {t}", f"%b = load %B[%i] : {t}"]
        for j, o in enumerate(ops):
            lines += [f"%p{j} = {o} %a, %b : bool", f"%v{j} = if %p{j} -> (i32) {{",
                      "    yield (%one)", "} else {", "    yield (%zero)", "}",
                      f"%col{j} = constant {j} : index", f"store %v{j}, %R[%i, %col{j}]"]
        src = _foreach_kernel(f"%A: memref<{t} x {n}>, %B: memref<{t} x {n}>, "
                              f"%R: memref<i32 x {n} x {len(ops)}>", n, _lines(*lines),
                              "    %one = constant 1 : i32\n    %zero = constant 0 : i32\n")
        enc = (lambda v: bf16_bits(v)) if t == "bf16" else (lambda v: v)
        args = {"A": np.array([enc(v) for v in a], NP[t]),
                "B": np.array([enc(v) for v in b], NP[t]),
                "R": np.zeros((n, len(ops)), np.int32)}
        r = [[int(_CMP[o](x, y)) for o in ops] for x, y in zip(a, b)]
        out.append(_v(f"compare_{t}", src, args, {"R": r}, ops + ["if", "yield", "load", "store",
                                                                   "foreach", "constant"],
                      [t, "bool", "i32"]))
    return out


def cases() -> list[ValidCase]:
    return [*integers(), *bool_logic(), *complex_unary(), *floats(), *math_types(), *casts(),
            *compares()]
