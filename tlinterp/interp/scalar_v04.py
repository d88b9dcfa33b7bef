"""Scalar semantics of what v0.4 adds: the types f16, bf16, c32, c64 and the operations abs,
conj, re, im and the math functions (on every type). `scalar.py` sends these here, so its
functions stay the one entry point; the signatures and the `(result, faults)` convention are
scalar.py's.

Rounding points (docs/semantics.md "v0.4 types and rounding"): f16 and bf16 arithmetic is
computed in f32 and rounded once to the type (lowp.arith), the math functions on f16/bf16 are
computed in f32 and rounded once; f32/f64/complex compute in their own NumPy type. Casts are
lowp.cast (the v0.4 cast table, rounded once).
"""

from __future__ import annotations

import numpy as np

from tlinterp.interp import lowp
from tlinterp.lang.types import ScalarType

Fault = tuple[str, np.ndarray, str]

_LOWP = (ScalarType.f16, ScalarType.bf16)
_COMPONENT = {ScalarType.c32: ScalarType.f32, ScalarType.c64: ScalarType.f64}


def _name(t: ScalarType) -> str:
    return "bool" if t.is_bool else t.value


def _wide(t: ScalarType, a) -> np.ndarray:
    """The operand in the type it is computed in: f32 for f16/bf16, else its own."""
    a = np.asarray(a, t.dtype)
    return a.astype(np.float32) if t in _LOWP else a


def _round(t: ScalarType, r) -> np.ndarray:
    """One rounding of a computed result to the instruction's type."""
    r = np.asarray(r)
    if t in _LOWP:
        return r.astype(np.float32).astype(t.dtype)  # exact f32 -> f16/bf16: one rounding
    return r.astype(t.dtype)


def const(value, t: ScalarType) -> np.ndarray:
    """A literal of a v0.4 type: read as f64 (complex: two f64), then rounded once."""
    if t.is_complex:
        return np.array(complex(value), t.dtype)
    return lowp.cast(np.array(float(value), np.float64), "f64", t.value)[0].reshape(())


def _fmin(a, b):  # OpenCL C fmin/fmax (scalar.py's, on the widened values)
    return np.where(np.isnan(a) | (b < a), b, a)


def _fmax(a, b):
    return np.where(np.isnan(a) | (b > a), b, a)


_FLOAT_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                 "rem": np.fmod, "min": _fmin, "max": _fmax}


def binary(op: str, t: ScalarType, a, b) -> tuple[np.ndarray, list[Fault]]:
    """`op a, b : t` for t in f16, bf16, c32, c64 (the checker allows only add sub mul div
    on complex; rem min max on the floats)."""
    with np.errstate(all="ignore"):
        if (t in _LOWP and op in ("add", "sub", "mul", "div")) or (t.is_complex and op == "mul"):
            return lowp.arith(op, a, b, t.value), []
        # rem/min/max are exact in f32 (fmod's result is representable; min/max select):
        # the rounding back to f16/bf16 is exact too. Complex: NumPy's complex64/128.
        return _round(t, _FLOAT_BINARY[op](_wide(t, a), _wide(t, b))), []


def _math(op: str, t: ScalarType, x: np.ndarray) -> np.ndarray:
    base = op.removeprefix("native_")  # native_*: the exact function too (docs: the bound)
    if base == "exp2" and t.is_complex:
        ln2 = np.asarray(complex(np.log(2.0).astype(x.real.dtype)), x.dtype)
        return np.exp(lowp.complex_mul(x, ln2))
    return {"cos": np.cos, "sin": np.sin, "exp": np.exp, "exp2": np.exp2, "log": np.log,
            "log2": np.log2}[base](x)


def unary(op: str, t: ScalarType, a) -> tuple[np.ndarray, list[Fault]]:
    """`op a : t` for the v0.4 types, and abs and the math functions on every number type.
    abs/re/im of a complex value have the component type."""
    with np.errstate(all="ignore"):
        if t.is_complex:
            x = np.asarray(a, t.dtype)
            c = _COMPONENT[t]
            if op == "abs":
                # hypot in f64, then rounded: NumPy's complex64 abs is off by an ulp at
                # times (|-5+12i| gives 12.999999); f64 neither overflows nor loses it
                return np.abs(x.astype(np.complex128)).astype(c.dtype), []
            if op in ("re", "im"):
                return np.array(x.real if op == "re" else x.imag, c.dtype), []
            if op == "conj":
                return np.conj(x), []
            if op == "neg":
                return np.negative(x), []
            return _math(op, t, x).astype(t.dtype), []
        if t.is_int:  # abs only (neg/not stay in scalar.py)
            x = np.asarray(a, t.dtype)
            lo = np.iinfo(t.dtype).min
            return np.abs(x).astype(t.dtype), [
                ("signed-overflow", x == lo, f"abs of the minimum {t}")]
        x = _wide(t, a)
        if op == "neg":
            return _round(t, np.negative(x)), []
        if op == "abs":
            return _round(t, np.abs(x)), []
        return _round(t, _math(op, t, x)), []


def compare(cond: str, t: ScalarType, a, b) -> np.ndarray:
    """A comparison of two v0.4-typed values (complex: equal / not_equal only)."""
    x, y = _wide(t, a), _wide(t, b)
    return np.asarray({"eq": np.equal, "ne": np.not_equal, "gt": np.greater,
                       "ge": np.greater_equal, "lt": np.less,
                       "le": np.less_equal}[cond](x, y), bool)


def cast(src: ScalarType, dst: ScalarType, a) -> tuple[np.ndarray, list[Fault]]:
    """`cast a : dst` under v0.4's table (lowp.cast); a float -> integer cast of NaN, an
    infinity or a value out of range is undefined ("invalid-cast")."""
    r, invalid = lowp.cast(np.asarray(a, src.dtype), _name(src), _name(dst))
    return r, [("invalid-cast", invalid, f"{src} value out of the range of {dst} (or NaN)")]
