"""f16 and bf16 in OpenCL C: 16-bit patterns (`ushort`) in memory and in registers, converted to
float for every operation and rounded back, with the interpreter's conversions bit for bit.

Why bits and software conversions rather than `half`: OpenCL C without cl_khr_fp16 (pocl,
Oclgrind) has no half arithmetic, and `vstore_half`'s NaN results are the device's; the
interpreter's (tlinterp/interp/lowp.py) are NumPy's for f16 (the payload's top bits kept, never
quieted) and ml_dtypes' for bf16 (a NaN becomes the sign with 0x7fc0). These helpers give
exactly those on every device, and they need no extension.

Rounding points (docs/semantics.md "v0.4 types and rounding"): an f16/bf16 operation is
computed in f32 (exact operands, one f32 rounding; FP_CONTRACT OFF and a correctly rounded
division) and rounded once to the type, as the interpreter does. f64 and 64-bit integers reach
the narrow types through round-to-odd f32 (`tl_odd_f32`, `tl_odd_f32_l`), so they are
rounded once.
"""

from __future__ import annotations

from collections.abc import Callable

from tlinterp.lang.types import ScalarType

LOWP = (ScalarType.f16, ScalarType.bf16)

# type -> (bits to float, float to bits)
TO_F32 = {ScalarType.f16: "tl_f16_f32", ScalarType.bf16: "tl_bf16_f32"}
FROM_F32 = {ScalarType.f16: "tl_f32_f16", ScalarType.bf16: "tl_f32_bf16"}

# name -> (C code, helpers it calls)
HELPERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "tl_f16_f32": ("""\
/* f16 bits -> float, exact; NaN payloads kept unquieted (NumPy's conversion) */
static float tl_f16_f32(ushort h) {
    uint s = ((uint)h & 0x8000u) << 16, e = ((uint)h >> 10) & 0x1fu, m = (uint)h & 0x3ffu;
    if (e == 0x1fu) return as_float(s | 0x7f800000u | (m << 13));
    if (e == 0u) return as_float(s | as_uint((float)m * 0x1p-24f)); /* exact: m < 2^10 */
    return as_float(s | ((e + 112u) << 23) | (m << 13));
}
""", ()),
    "tl_f32_f16": ("""\
/* float -> f16 bits, rounded to nearest even; a NaN keeps its payload's top 10 bits (a zero
   payload becomes 1), as NumPy's conversion does */
static ushort tl_f32_f16(float x) {
    uint f = as_uint(x), s = (f >> 16) & 0x8000u, a = f & 0x7fffffffu;
    if (a > 0x7f800000u) {
        uint r = 0x7c00u | ((a & 0x7fffffu) >> 13);
        return (ushort)(s | (r == 0x7c00u ? 0x7c01u : r));
    }
    if (a >= 0x47800000u) return (ushort)(s | 0x7c00u); /* >= 2^16 (and inf): inf */
    if (a < 0x38800000u) /* below 2^-14: subnormal or zero; the scaling is exact */
        return (ushort)(s | (uint)rint(as_float(a) * 0x1p24f));
    uint h = ((a >> 23) - 112u) << 10 | ((a >> 13) & 0x3ffu), rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h += 1u; /* may carry into inf */
    return (ushort)(s | h);
}
""", ()),
    "tl_bf16_f32": ("""\
static float tl_bf16_f32(ushort h) { return as_float((uint)h << 16); }
""", ()),
    "tl_f32_bf16": ("""\
/* float -> bf16 bits, rounded to nearest even; a NaN becomes its sign with 0x7fc0
   (ml_dtypes' conversion) */
static ushort tl_f32_bf16(float x) {
    uint f = as_uint(x);
    if ((f & 0x7fffffffu) > 0x7f800000u) return (ushort)(((f >> 16) & 0x8000u) | 0x7fc0u);
    return (ushort)((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}
""", ()),
    "tl_odd_f32": ("""\
/* double -> float by round-to-odd: a second rounding to f16/bf16 is then correct */
static float tl_odd_f32(double x) {
    float f = (float)x;
    if (isnan(x)) return f;
    if (fabs((double)f) > fabs(x)) f = nextafter(f, 0.0f);
    if ((double)f != x) f = as_float(as_uint(f) | 1u);
    return f;
}
""", ()),
    "tl_odd_f32_l": ("""\
/* long -> float by round-to-odd (truncated to 24 bits, the last one set when inexact) */
static float tl_odd_f32_l(long v) {
    ulong u = v < 0L ? 0UL - (ulong)v : (ulong)v;
    float f;
    if (u < 0x1000000UL) {
        f = (float)u;
    } else {
        int sh = 40 - (int)clz(u);
        ulong k = (u >> sh) | ((u & ((1UL << sh) - 1UL)) != 0UL ? 1UL : 0UL);
        f = ldexp((float)k, sh);
    }
    return v < 0L ? -f : f;
}
""", ()),
    "tl_fmod_nan": ("""\
/* fmod with the interpreter's NaNs (NumPy's on x86): a NaN operand, the first one, quieted
   with its payload; an invalid operation (inf % y, x % 0) the default NaN 0xffc00000. Device
   libraries differ in these, and a bf16 result keeps a NaN's sign */
static float tl_fmod_nan(float a, float b) {
    if (isnan(a)) return as_float(as_uint(a) | 0x400000u);
    if (isnan(b)) return as_float(as_uint(b) | 0x400000u);
    if (isinf(a) || b == 0.0f) return as_float(0xffc00000u);
    return fmod(a, b);
}
""", ()),
}


def to_f32(a: str, t: ScalarType) -> str:
    """The exact float value of an f16/bf16 pattern."""
    return f"{TO_F32[t]}({a})"


def from_f32(x: str, t: ScalarType) -> str:
    """A float expression rounded once to f16/bf16."""
    return f"{FROM_F32[t]}({x})"


def binary(c_float: Callable) -> Callable:
    """An f32 expression builder (a, b) -> C lifted to f16/bf16 patterns."""
    return lambda a, b, t: from_f32(c_float(to_f32(a, t), to_f32(b, t), ScalarType.f32), t)


def unary(c_float: Callable) -> Callable:
    return lambda a, t: from_f32(c_float(to_f32(a, t), ScalarType.f32), t)


def compare(c_op: str, a: str, b: str, t: ScalarType) -> str:
    return f"({to_f32(a, t)} {c_op} {to_f32(b, t)})"


def cast(a: str, src: ScalarType, dst: ScalarType, ctype) -> str:
    """`cast a : dst` where src or dst is f16/bf16 and neither is complex (interpreter:
    lowp.cast): integers and f64 through round-to-odd f32; to an integer by truncation."""
    if src is dst:
        return a
    if src in LOWP:
        x = to_f32(a, src)
        if dst in LOWP:
            return from_f32(x, dst)
        return x if dst is ScalarType.f32 else f"(({ctype(dst)}){x})"
    if src is ScalarType.f32:
        return from_f32(a, dst)
    if src is ScalarType.f64:
        return from_f32(f"tl_odd_f32({a})", dst)
    return from_f32(f"tl_odd_f32_l((long){a})", dst)  # integers
