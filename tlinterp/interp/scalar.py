"""THE scalar-semantics table: (op, ScalarType) -> vectorised NumPy implementation + UB checks.

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

from ..ir import Const
from ..types import ScalarType

Fault = tuple[str, np.ndarray, str]


def const(c: Const, t: ScalarType) -> np.ndarray:
    """A literal as a 0-d array of type `t` (floats rounded once, integers wrapped)."""
    v = c.value
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
    with np.errstate(all="ignore"):
        if t.is_bool:
            return _bool_binary(op, a, b)
        if t.is_float:
            return _arr(_FLOAT[op](a, b), t), []
        return _int_binary(op, t, a, b)


_FLOAT = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "rem": np.fmod,
}


def _bool_binary(op, a, b):
    a, b = np.asarray(a, bool), np.asarray(b, bool)
    faults: list[Fault] = []
    if op in ("add", "sub", "xor"):
        r = a ^ b
    elif op in ("mul", "and"):
        r = a & b
    elif op == "or":
        r = a | b
    elif op in ("div", "rem"):
        faults.append(("division-by-zero", ~b, "division by zero"))
        r = a & b if op == "div" else np.zeros(np.broadcast(a, b).shape, bool)
    else:  # shl/shr: only an amount of 0 is in range for a 1-bit type
        faults.append(("shift-out-of-range", b.copy(), "shift amount 1 outside [0, 1)"))
        r = np.broadcast_to(a, np.broadcast(a, b).shape).copy()
    return np.asarray(r, bool), faults


def _int_binary(op, t, a, b):
    dt = t.dtype
    a, b = _arr(a, t), _arr(b, t)
    faults: list[Fault] = []
    signed = t.is_signed
    if op == "add":
        r = _arr(a + b, t)
        if signed:
            faults.append(("signed-overflow", ((a ^ r) & (b ^ r)) < 0, "signed overflow in add"))
    elif op == "sub":
        r = _arr(a - b, t)
        if signed:
            faults.append(("signed-overflow", ((a ^ b) & (a ^ r)) < 0, "signed overflow in sub"))
    elif op == "mul":
        r = _arr(a * b, t)
        if signed:
            if t.bits <= 32:
                wide = a.astype(np.int64) * b.astype(np.int64)
                bad = wide != r
            else:
                safe_a = np.where(a == 0, 1, a)
                q = r // safe_a
                bad = (a != 0) & ((q != b) | ((a == -1) & (b == _min(t))))
            faults.append(("signed-overflow", bad, "signed overflow in mul"))
    elif op in ("div", "rem"):
        zero = b == 0
        faults.append(("division-by-zero", zero, f"{'division' if op == 'div' else 'remainder'} "
                                                 "by zero"))
        bad_b = zero
        if signed:
            ovf = (a == _min(t)) & (b == -1)
            faults.append(("division-overflow", ovf, f"{op} of the minimum {t} by -1"))
            bad_b = bad_b | ovf
        safe_b = np.where(bad_b, np.ones((), dt), b)
        if op == "rem":
            r = _arr(np.fmod(a, safe_b), t)  # C remainder: the dividend's sign
        else:
            q = a // safe_b
            fix = (q * safe_b != a) & ((a < 0) != (safe_b < 0)) if signed else False
            r = _arr(q + fix, t)  # truncate toward zero
    elif op in ("shl", "shr"):
        bits = t.bits
        out = (b < 0) | (b >= bits) if signed else (b >= bits)
        faults.append(("shift-out-of-range", out, f"shift amount outside [0, {bits})"))
        sb = np.where(out, np.zeros((), dt), b)
        if op == "shl":
            r = _arr(np.left_shift(a, sb), t)
            if signed:
                faults.append(("signed-overflow", (np.right_shift(r, sb) != a) & ~out,
                               "signed overflow in shl"))
        else:
            r = _arr(np.right_shift(a, sb), t)  # arithmetic for signed dtypes, logical unsigned
    elif op == "and":
        r = _arr(a & b, t)
    elif op == "or":
        r = _arr(a | b, t)
    elif op == "xor":
        r = _arr(a ^ b, t)
    else:  # pragma: no cover - the IR only has the ops above
        raise ValueError(op)
    return r, faults


def unary(op: str, t: ScalarType, a: np.ndarray):
    """`arith.neg` / `arith.not`."""
    with np.errstate(all="ignore"):
        if t.is_bool:
            a = np.asarray(a, bool)
            return (a.copy() if op == "neg" else ~a), []
        a = _arr(a, t)
        if op == "not":
            return _arr(~a, t), []
        r = _arr(-a, t)
        if t.is_signed and t.is_int:
            return r, [("signed-overflow", a == _min(t), f"negation of the minimum {t}")]
        return r, []


def compare(cond: str, t: ScalarType, a: np.ndarray, b: np.ndarray):
    a, b = _arr(a, t), _arr(b, t)
    return np.asarray(_CMP[cond](a, b), bool), []


_CMP = {"eq": np.equal, "ne": np.not_equal, "gt": np.greater, "ge": np.greater_equal,
        "lt": np.less, "le": np.less_equal}


def cast(src: ScalarType, dst: ScalarType, a: np.ndarray):
    """C conversions (docs/semantics.md "Scalars"): anything->i1 is x != 0; float->int
    truncates (UB out of range or NaN); int->int wraps/extends by the source's signedness;
    rounding to nearest even."""
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
    """C's usual arithmetic conversions (integer promotion to at least 32 bits)."""
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
