"""Scalar types as OpenCL C types, and constants printed so that they round-trip exactly."""

from __future__ import annotations

import math

import numpy as np

from tlinterp.lang.types import CoopMatrixType, ScalarType

C_TYPES = {
    ScalarType.i1: "bool",
    ScalarType.i8: "char",
    ScalarType.i16: "short",
    ScalarType.i32: "int",
    ScalarType.i64: "long",
    ScalarType.index: "long",
    ScalarType.u8: "uchar",
    ScalarType.u16: "ushort",
    ScalarType.u32: "uint",
    ScalarType.u64: "ulong",
    ScalarType.f32: "float",
    ScalarType.f64: "double",
    # v0.4: f16/bf16 as their bit patterns (lowp.py: typedefs of ushort, named apart from the
    # 16-bit integers so that a device workaround for 16-bit integer arithmetic, which looks
    # for `(ushort)` casts, does not fire on float bit patterns), complex as (re, im) vectors
    ScalarType.f16: "tl_f16",
    ScalarType.bf16: "tl_bf16",
    ScalarType.c32: "float2",
    ScalarType.c64: "double2",
}


def ctype(t: ScalarType | CoopMatrixType) -> str:
    if isinstance(t, CoopMatrixType):  # a struct of the lane's components (coopmatrix.py)
        return f"tl_cm_{C_TYPES[t.component].removeprefix('tl_')}_{t.rows}x{t.cols}_{t.use}"
    return C_TYPES[t]


def _rank(t: ScalarType) -> int:
    return 32 if t.bits < 32 else t.bits  # integer promotion: narrower than int becomes int


def common_type(*types: ScalarType) -> ScalarType:
    """C's usual arithmetic conversions over several operand types (after integer promotion);
    with a v0.4 type among them, the interpreter's compute type (scalar.usual_type: f16/bf16
    compute in f32, complex in c32 or c64)."""
    if any(t in (ScalarType.f16, ScalarType.bf16) or t.is_complex for t in types):
        from tlinterp.interp.scalar import usual_type

        return usual_type(*types)
    if ScalarType.f64 in types:
        return ScalarType.f64
    if ScalarType.f32 in types:
        return ScalarType.f32
    result = ScalarType.i32
    for t in types:
        result = _usual(result, _promote(t))
    return result


def _promote(t: ScalarType) -> ScalarType:
    return t if t.bits >= 32 else ScalarType.i32  # every type narrower than int fits in int


def _usual(a: ScalarType, b: ScalarType) -> ScalarType:
    if a.is_signed == b.is_signed:
        return a if _rank(a) >= _rank(b) else b
    s, u = (a, b) if a.is_signed else (b, a)
    if _rank(u) >= _rank(s):
        return u
    return s  # a signed type of greater rank represents every value of the narrower unsigned


def float_literal(value: float, t: ScalarType) -> str:
    """Exact C literal of `value` rounded to `t` (hex floats; infinities and NaN spelled out)."""
    v = float(np.float32(value)) if t is ScalarType.f32 else float(value)
    if math.isnan(v):  # the interpreter's NaN bit for bit
        if t is ScalarType.f32:
            return f"as_float(0x{int(np.float32(value).view(np.uint32)):08x}u)"
        return f"as_double(0x{int(np.float64(value).view(np.uint64)):016x}UL)"
    if math.isinf(v):
        base = "INFINITY" if t is ScalarType.f32 else "((double)INFINITY)"
        return base if v > 0 else f"(-{base})"
    text = v.hex() + ("f" if t is ScalarType.f32 else "")
    return f"({text})" if text.startswith("-") else text  # never `--x` after a unary minus


def int_literal(value: int, t: ScalarType) -> str:
    """C literal for an integer constant of type `t` (wrapping as a C conversion would)."""
    if t.is_bool:
        return "true" if value != 0 else "false"
    if t.is_float:
        return float_literal(float(value), t)
    if value == -(2**63):
        lit = "(-9223372036854775807L - 1L)"
    elif value < 0:
        lit = f"({value}L)"
    else:
        lit = f"{value}UL" if value >= 2**63 else f"{value}L"
    return f"(({ctype(t)}){lit})"


def v04_literal(value, t: ScalarType) -> str:
    """A constant of f16/bf16 (its bit pattern) or c32/c64 (a vector of its parts), rounded
    as the interpreter rounds literals (tlinterp/interp/scalar_v04.const)."""
    from tlinterp.interp.scalar_v04 import const

    v = const(value, t)
    if t.is_complex:
        part = ScalarType.f32 if t is ScalarType.c32 else ScalarType.f64
        re, im = (float_literal(float(x), part) for x in (v.real, v.imag))
        return f"(({C_TYPES[t]})({re}, {im}))"
    return f"(({C_TYPES[t]})0x{int(v.view(np.uint16)):04x}u)"


def literal(value, is_float: bool, t: ScalarType) -> str:
    if t.is_complex or t in (ScalarType.f16, ScalarType.bf16):
        return v04_literal(value, t)
    if t.is_float:
        return float_literal(float(value), t)
    if is_float:  # a float spelling used for an integer type: C conversion truncates
        return int_literal(int(value), t)
    return int_literal(int(value), t)
