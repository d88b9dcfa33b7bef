"""THE scalar-semantics tables: (type class, op) -> vectorised NumPy implementation + UB checks.

Values are NumPy arrays of the type's dtype, 0-d (uniform) or 1-d (one entry per lane).
Each operation returns `(result, faults)` where `faults` lists `(kind, mask, what)` for lanes
whose operation is undefined (docs/semantics.md "Scalars"); results on those lanes are
unspecified but computed without Python errors.

Decisions beyond the spec: `i1` behaves as C's `bool` (an unsigned 1-bit type: arithmetic
modulo 2, cast to a wider integer gives 0 or 1); integer `rem` with `MIN % -1` is undefined like
`MIN / -1` (C11 6.5.5); shl is signed overflow when `a * 2**b` does not fit (negative `a` is fine
as long as it fits); f64->f32 out of range rounds to +-inf (IEEE, not undefined).
"""

from __future__ import annotations

import numpy as np

from tlinterp.interp import scalar_v04
from tlinterp.lang.ir import Const
from tlinterp.lang.ops import BOOL, FLOAT, INT, type_class
from tlinterp.lang.types import V04_ONLY_SCALARS, ScalarType

# operations scalar_v04.py computes on every type (v0.3's types have no entry for them here)
_V04_UNARY = frozenset({"abs", "conj", "re", "im", "cos", "sin", "exp", "exp2", "log", "log2",
                        "native_cos", "native_sin", "native_exp", "native_exp2", "native_log",
                        "native_log2"})

Fault = tuple[str, np.ndarray, str]


def const(c: Const, t: ScalarType) -> np.ndarray:
    """A literal as a 0-d array of type `t` (floats rounded once, integers wrapped)."""
    v = c.value
    if t in V04_ONLY_SCALARS:
        return scalar_v04.const(v, t)
    if t.is_bool:
        return np.array(bool(v))
    if t.is_float:
        return np.array(float(v), dtype=t.dtype)
    iv = int(v)
    bits = t.bits
    iv &= (1 << bits) - 1
    if t.is_signed and iv >= 1 << (bits - 1):
        iv -= 1 << bits
    return np.array(iv, dtype=t.dtype)


def _arr(x, t: ScalarType) -> np.ndarray:
    return np.asarray(x, dtype=t.dtype)


def _min(t: ScalarType):
    return np.iinfo(t.dtype).min


def binary(op: str, t: ScalarType, a: np.ndarray, b: np.ndarray):
    """`arith.<op> a, b : t`."""
    if t in V04_ONLY_SCALARS:
        return scalar_v04.binary(op, t, a, b)
    with np.errstate(all="ignore"):
        if t.is_bool:
            r, faults = BINARY[BOOL][op](t, np.asarray(a, bool), np.asarray(b, bool))
            return np.asarray(r, bool), faults
        r, faults = BINARY[type_class(t)][op](t, _arr(a, t), _arr(b, t))
        return _arr(r, t), faults


def unary(op: str, t: ScalarType, a: np.ndarray):
    """`arith.neg` / `arith.not` (and v0.4's unary operations, in scalar_v04.py)."""
    if t in V04_ONLY_SCALARS or op in _V04_UNARY:
        return scalar_v04.unary(op, t, a)
    with np.errstate(all="ignore"):
        if t.is_bool:
            r, faults = UNARY[BOOL][op](t, np.asarray(a, bool))
            return np.asarray(r, bool), faults
        r, faults = UNARY[type_class(t)][op](t, _arr(a, t))
        return _arr(r, t), faults


def compare(cond: str, t: ScalarType, a: np.ndarray, b: np.ndarray):
    if t in V04_ONLY_SCALARS:
        return scalar_v04.compare(cond, t, a, b), []
    a, b = _arr(a, t), _arr(b, t)
    return np.asarray(COMPARE[cond](a, b), bool), []


def _exact(f):
    """An operation that is defined everywhere: (t, a, b) -> (f(a, b), no faults)."""
    return lambda t, *operands: (f(*operands), [])


# --- integers: two's complement, wrapping in the type; UB checks ride on the arrays ---------


def _add(t, a, b):
    r = _arr(a + b, t)
    return r, [("signed-overflow", ((a ^ r) & (b ^ r)) < 0, "signed overflow in add")] \
        if t.is_signed else []


def _sub(t, a, b):
    r = _arr(a - b, t)
    return r, [("signed-overflow", ((a ^ b) & (a ^ r)) < 0, "signed overflow in sub")] \
        if t.is_signed else []


def _mul(t, a, b):
    r = _arr(a * b, t)
    if not t.is_signed:
        return r, []
    if t.bits <= 32:
        bad = a.astype(np.int64) * b.astype(np.int64) != r
    else:
        safe_a = np.where(a == 0, 1, a)
        q = r // safe_a
        bad = (a != 0) & ((q != b) | ((a == -1) & (b == _min(t))))
    return r, [("signed-overflow", bad, "signed overflow in mul")]


def _divrem(op: str):
    def run(t, a, b):
        zero = b == 0
        faults: list[Fault] = [("division-by-zero", zero,
                                f"{'division' if op == 'div' else 'remainder'} by zero")]
        bad_b = zero
        if t.is_signed:
            ovf = (a == _min(t)) & (b == -1)
            faults.append(("division-overflow", ovf, f"{op} of the minimum {t} by -1"))
            bad_b = bad_b | ovf
        safe_b = np.where(bad_b, np.ones((), t.dtype), b)
        if op == "rem":
            return _arr(np.fmod(a, safe_b), t), faults  # C remainder: the dividend's sign
        q = a // safe_b
        fix = (q * safe_b != a) & ((a < 0) != (safe_b < 0)) if t.is_signed else False
        return _arr(q + fix, t), faults  # truncate toward zero
    return run


def _shift(op: str):
    def run(t, a, b):
        bits = t.bits
        out = (b < 0) | (b >= bits) if t.is_signed else (b >= bits)
        faults: list[Fault] = [("shift-out-of-range", out, f"shift amount outside [0, {bits})")]
        sb = np.where(out, np.zeros((), t.dtype), b)
        if op == "shr":  # arithmetic for signed dtypes, logical for unsigned ones
            return _arr(np.right_shift(a, sb), t), faults
        r = _arr(np.left_shift(a, sb), t)
        if t.is_signed:
            faults.append(("signed-overflow", (np.right_shift(r, sb) != a) & ~out,
                           "signed overflow in shl"))
        return r, faults
    return run


def _neg(t, a):
    r = _arr(-a, t)
    return r, [("signed-overflow", a == _min(t), f"negation of the minimum {t}")] \
        if t.is_signed else []


# --- floats: IEEE in the type, no faults ------------------------------------------------------


def _fmin(a, b):
    """OpenCL C fmin: b if b < a, else a; a NaN operand gives the other one."""
    return np.where(np.isnan(a) | (b < a), b, a)


def _fmax(a, b):
    return np.where(np.isnan(a) | (b > a), b, a)


# --- i1: C's bool, an unsigned 1-bit type ----------------------------------------------------


def _bool_divrem(op: str):
    def run(t, a, b):
        r = a & b if op == "div" else np.zeros(np.broadcast(a, b).shape, bool)
        return r, [("division-by-zero", ~b, "division by zero")]
    return run


def _bool_shift(t, a, b):  # only an amount of 0 is in range for a 1-bit type
    return np.broadcast_to(a, np.broadcast(a, b).shape).copy(), [
        ("shift-out-of-range", b.copy(), "shift amount 1 outside [0, 1)")]


# THE semantics tables: type class -> operation (tlinterp/lang/ops.py) -> (t, operands) ->
# (result, faults). i1 has entries beyond the checker's rule: docs/semantics.md gives every
# operation a meaning on C's bool.
BINARY = {
    INT: {"add": _add, "sub": _sub, "mul": _mul, "div": _divrem("div"), "rem": _divrem("rem"),
          "shl": _shift("shl"), "shr": _shift("shr"), "and": _exact(np.bitwise_and),
          "or": _exact(np.bitwise_or), "xor": _exact(np.bitwise_xor),
          "min": _exact(np.minimum), "max": _exact(np.maximum)},
    FLOAT: {"add": _exact(np.add), "sub": _exact(np.subtract), "mul": _exact(np.multiply),
            "div": _exact(np.divide), "rem": _exact(np.fmod), "min": _exact(_fmin),
            "max": _exact(_fmax)},
    BOOL: {"add": _exact(np.logical_xor), "sub": _exact(np.logical_xor),
           "xor": _exact(np.logical_xor), "mul": _exact(np.logical_and),
           "and": _exact(np.logical_and), "or": _exact(np.logical_or),
           "div": _bool_divrem("div"), "rem": _bool_divrem("rem"), "shl": _bool_shift,
           "shr": _bool_shift},
}
UNARY = {
    INT: {"neg": _neg, "not": _exact(np.invert)},
    FLOAT: {"neg": _exact(np.negative)},
    BOOL: {"neg": _exact(np.copy), "not": _exact(np.logical_not)},
}
COMPARE = {"eq": np.equal, "ne": np.not_equal, "gt": np.greater, "ge": np.greater_equal,
           "lt": np.less, "le": np.less_equal}


def cast(src: ScalarType, dst: ScalarType, a: np.ndarray):
    """C conversions (docs/semantics.md "Scalars"): anything->i1 is x != 0; float->int
    truncates (UB out of range or NaN); int->int wraps/extends by the source's signedness;
    rounding to nearest even."""
    if src in V04_ONLY_SCALARS or dst in V04_ONLY_SCALARS:
        return scalar_v04.cast(src, dst, a)
    a = _arr(a, src)
    with np.errstate(all="ignore"):
        if dst.is_bool:
            return np.asarray(a != 0, bool), []
        if dst.is_float or src.is_int:
            return a.astype(dst.dtype), []
        t = np.trunc(a)
        if dst.is_signed:
            lo, hi = -(2.0 ** (dst.bits - 1)), 2.0 ** (dst.bits - 1)
        else:
            lo, hi = 0.0, 2.0 ** dst.bits
        bad = ~((t >= lo) & (t < hi))  # NaN fails both comparisons
        safe = np.where(bad, np.zeros((), a.dtype), t)
        return safe.astype(dst.dtype), [
            ("invalid-cast", bad, f"{src} value out of the range of {dst} (or NaN)")]


def usual_type(*types: ScalarType) -> ScalarType:
    """C's usual arithmetic conversions (integer promotion to at least 32 bits). v0.4's
    types: complex operands compute in c64 when any operand is c64 or f64, else in c32;
    f16/bf16 compute in f32 (docs/semantics.md "v0.4 types and rounding")."""
    if any(t.is_complex for t in types):
        wide = any(t in (ScalarType.c64, ScalarType.f64, ScalarType.i64, ScalarType.index)
                   for t in types)
        return ScalarType.c64 if wide else ScalarType.c32
    if any(t in (ScalarType.f16, ScalarType.bf16) for t in types):
        return ScalarType.f64 if ScalarType.f64 in types else ScalarType.f32
    if ScalarType.f64 in types:
        return ScalarType.f64
    if ScalarType.f32 in types:
        return ScalarType.f32
    promoted = [t if t.bits >= 32 else ScalarType.i32 for t in types]  # bool, char, short -> int
    best = promoted[0]
    for t in promoted[1:]:
        best = _usual_int(best, t)
    return ScalarType.i64 if best is ScalarType.index else best


def _usual_int(x: ScalarType, y: ScalarType) -> ScalarType:
    if x.is_signed == y.is_signed:
        return x if x.bits >= y.bits else y
    s, u = (x, y) if x.is_signed else (y, x)
    if u.bits >= s.bits:
        return u
    return s  # the signed type can represent every value of the narrower unsigned one
