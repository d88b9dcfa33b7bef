"""v0.4 scalar types in NumPy: the dtype map, promotion, the cast table and correctly rounded
casts and arithmetic for f16, bf16, c32 and c64.

Rounding points (docs/semantics.md, "v0.4 types and rounding"): every instruction's result is
rounded once to its own type. f16 and bf16 arithmetic is computed in f32 and rounded to the
type: for + - * / and sqrt f32 has at least 2p+2 bits (p = 11 and 8), so the double rounding
is innocuous and the result is the correctly rounded one. Narrowing casts from f64 or i64
round once (through round-to-odd f32), never twice.
"""

from __future__ import annotations

from typing import Optional

import ml_dtypes
import numpy as np

# v0.4 type name -> NumPy dtype ("index" is 64-bit in the reference, as in v0.3)
DTYPES: dict[str, np.dtype] = {
    "bool": np.dtype(np.bool_),
    "i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64), "index": np.dtype(np.int64),
    "bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
    "c32": np.dtype(np.complex64), "c64": np.dtype(np.complex128),
}

INTEGER = ("i8", "i16", "i32", "i64", "index")
FLOATING = ("bf16", "f16", "f32", "f64")
COMPLEX = ("c32", "c64")
NUMBER = INTEGER + FLOATING + COMPLEX

# size(α) in bytes, as the v0.4 text tabulates it (index: 8 in the reference)
SIZE = {"i8": 1, "i16": 2, "i32": 4, "i64": 8, "index": 8, "bf16": 2, "f16": 2, "f32": 4,
        "f64": 8, "c32": 8, "c64": 16}

# unit roundoff u = 2^-p of each floating type (complex: of its parts); used by the bounds
UNIT_ROUNDOFF = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11, "f32": 2.0 ** -24, "f64": 2.0 ** -53,
                 "c32": 2.0 ** -24, "c64": 2.0 ** -53}

# α ⪯ β: every value of α is exactly a value of β (the v0.4 relation matrix, row by row;
# `index` is treated as i64)
_PROMOTES_TO = {
    "i8": ("i8", "i16", "i32", "i64", "bf16", "f16", "f32", "f64", "c32", "c64"),
    "i16": ("i16", "i32", "i64", "f32", "f64", "c32", "c64"),
    "i32": ("i32", "i64", "f64", "c64"),
    "i64": ("i64",),
    "bf16": ("bf16", "f32", "f64", "c32", "c64"),
    "f16": ("f16", "f32", "f64", "c32", "c64"),
    "f32": ("f32", "f64", "c32", "c64"),
    "f64": ("f64", "c64"),
    "c32": ("c32", "c64"),
    "c64": ("c64",),
}


def _canon(t: str) -> str:
    return "i64" if t == "index" else t


def dtype(t: str) -> np.dtype:
    """The NumPy dtype of a v0.4 type name (KeyError names an unknown type)."""
    return DTYPES[t]


def promotable(a: str, b: str) -> bool:
    """α ⪯ β of the v0.4 text."""
    return _canon(b) in _PROMOTES_TO[_canon(a)]


def promote(a: str, b: str) -> Optional[str]:
    """promote(α, β): β if α ⪯ β, α if β ⪯ α, None where v0.4 says "fail"."""
    if promotable(a, b):
        return b
    if promotable(b, a):
        return a
    return None


def cast_rule(src: str, dst: str) -> Optional[str]:
    """None when `cast` from src to dst is allowed, else why not (the v0.4 cast table: the
    operand and the result are number types; complex -> integer or floating is forbidden)."""
    if src == "bool" or dst == "bool":
        return "cast operands and results are number types; bool is not one"
    if src not in NUMBER or dst not in NUMBER:
        return f"unknown number type {src if src not in NUMBER else dst}"
    if src in COMPLEX and dst not in COMPLEX:
        return f"casting complex {src} to non-complex {dst} is forbidden"
    return None


def _odd_f32(x: np.ndarray) -> np.ndarray:
    """x (f64 or long double) rounded to f32 by round-to-odd: truncate, then set the last bit
    when inexact. A second rounding to a type of at most 22 bits is then correct."""
    f = x.astype(np.float32)
    wide = f.astype(x.dtype)
    over = np.abs(wide) > np.abs(x)  # rounded away from zero: step back toward zero
    f = np.where(over, np.nextafter(f, np.float32(0)), f)
    inexact = f.astype(x.dtype) != x
    bits = f.view(np.int32)
    bits = np.where(inexact & ~np.isnan(x), bits | 1, bits)
    return bits.view(np.float32)


def _to_narrow_float(x: np.ndarray, dst: np.dtype) -> np.ndarray:
    """Once-rounded conversion of an f64/long-double array to f16 or bf16."""
    return _odd_f32(x).astype(dst)


def cast(x, src: str, dst: str) -> tuple[np.ndarray, np.ndarray]:
    """`cast x : dst` of an array of type src: (result, invalid) where `invalid` marks the
    elements whose cast is undefined (float -> integer of NaN, ±inf or a truncation out of
    range), whose result entries are 0. Raises ValueError for a forbidden cast."""
    why = cast_rule(src, dst)
    if why:
        raise ValueError(why)
    with np.errstate(all="ignore"):  # overflow to inf is the defined IEEE result here
        return _cast(np.asarray(x, dtype=DTYPES[src]), src, dst)


def _cast(a: np.ndarray, src: str, dst: str) -> tuple[np.ndarray, np.ndarray]:
    out_t = DTYPES[dst]
    invalid = np.zeros(a.shape, bool)
    if src in INTEGER and dst in INTEGER:
        return a.astype(out_t), invalid  # OpSConvert: sign-extends or wraps
    if src in INTEGER:  # -> floating or complex (real part)
        target = dst if dst in FLOATING else ("f32" if dst == "c32" else "f64")
        r = _int_to_float(a, target)
        return (r if dst in FLOATING else r.astype(out_t)), invalid
    if src in FLOATING and dst in INTEGER:  # OpConvertFToS: truncation toward zero
        w = a.astype(np.float64)
        info = np.iinfo(out_t)
        t = np.trunc(w)
        # float64 holds every integer bound exactly except 2^63 - 1, which rounds up to 2^63:
        # compare against the exact powers of two instead
        invalid = ~np.isfinite(w) | (t < float(info.min)) | (t >= -float(info.min))
        r = np.where(invalid, 0, t).astype(out_t)
        return r, invalid
    if src in FLOATING and dst in FLOATING:
        return _float_to_float(a, src, dst), invalid
    if src in FLOATING:  # -> complex: real part converted, imaginary part zero
        part = "f32" if dst == "c32" else "f64"
        return _float_to_float(a, src, part).astype(out_t), invalid
    # complex -> complex: each part converted (c64 -> c32 rounds each part once)
    return a.astype(out_t), invalid


def _int_to_float(a: np.ndarray, dst: str) -> np.ndarray:
    t = DTYPES[dst]
    if dst in ("f32", "f64"):
        return a.astype(t)  # a C conversion: one rounding to nearest even
    # f16 / bf16: from an exact wide value through round-to-odd f32, so rounded once
    wide = a.astype(np.float64) if a.dtype.itemsize <= 4 else _exact_wide(a)
    return _to_narrow_float(wide, t)


def _exact_wide(a: np.ndarray) -> np.ndarray:
    """i64 values exactly, as long double where it has 64 bits of mantissa (x86), else f64
    (then i64 values beyond 2^53 are rounded twice; documented)."""
    if np.finfo(np.longdouble).nmant >= 63:
        return a.astype(np.longdouble)
    return a.astype(np.float64)


def _float_to_float(a: np.ndarray, src: str, dst: str) -> np.ndarray:
    t = DTYPES[dst]
    if dst in ("f16", "bf16") and src == "f64":
        return _to_narrow_float(a, t)
    if dst in ("f16", "bf16"):
        return a.astype(np.float32).astype(t)  # f32, f16, bf16 all exact in f32: one rounding
    return a.astype(t)  # widening is exact; f64 -> f32 rounds once


def arith(op: str, a, b, ty: str) -> np.ndarray:
    """A binary float instruction of type ty with the reference's rounding point: f16/bf16
    computed in f32 and rounded once (correctly rounded for add, sub, mul, div); f32, f64 and
    complex in their own NumPy type."""
    t = DTYPES[ty]
    fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op]
    x, y = np.asarray(a, t), np.asarray(b, t)
    with np.errstate(all="ignore"):
        if ty in ("f16", "bf16"):
            return fn(x.astype(np.float32), y.astype(np.float32)).astype(t)
        if op == "mul" and ty in COMPLEX:
            return complex_mul(x, y)
        return fn(x, y).astype(t)


def complex_mul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(ac - bd) + (ad + bc)i with each product and sum rounded in the part's type. Written
    out: NumPy's own complex multiplication fuses a product into the sum (an FMA) where the
    CPU has one (AVX2 loops), so its results depend on the machine."""
    a, b, c, d = x.real, x.imag, y.real, y.imag
    out = np.empty(np.broadcast(x, y).shape, x.dtype)
    out.real = a * c - b * d
    out.imag = a * d + b * c
    return out


def identity(op: str, ty: str):
    """The identity of a reduction or scan: 0 for add; for max the smallest integer or -inf,
    for min the largest integer or +inf. Complex max/min are forbidden (ValueError)."""
    t = DTYPES[ty]
    if op == "add":
        return t.type(0)
    if ty in COMPLEX or ty == "bool":
        raise ValueError(f"{op} is not defined on {ty}")
    if ty in INTEGER:
        info = np.iinfo(t)
        return t.type(info.min if op == "max" else info.max)
    return t.type(-np.inf if op == "max" else np.inf)
