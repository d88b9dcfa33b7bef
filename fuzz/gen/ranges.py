"""Value ranges the generator tracks so that its programs are free of undefined behaviour.

Integer values carry an exact interval `IRange(lo, hi)`; an instruction is only generated when
its result interval provably fits the type (no signed overflow, no division by zero, shift
amounts in range). Float values carry an `FRange` whose bounds are finite, or `None` when the
value may be anything (NaN and infinities included); float→int casts need finite bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from tlinterp.types import ScalarType


@dataclass(frozen=True)
class IRange:
    lo: int
    hi: int

    def within(self, other: IRange) -> bool:
        return other.lo <= self.lo and self.hi <= other.hi

    def union(self, other: IRange) -> IRange:
        return IRange(min(self.lo, other.lo), max(self.hi, other.hi))

    @property
    def mag(self) -> int:
        return max(abs(self.lo), abs(self.hi))


@dataclass(frozen=True)
class FRange:
    """Finite bounds, or `known=False` for a value that may be NaN or infinite."""

    lo: float = 0.0
    hi: float = 0.0
    known: bool = True

    def union(self, other: FRange) -> FRange:
        if not (self.known and other.known):
            return UNKNOWN_F
        return FRange(min(self.lo, other.lo), max(self.hi, other.hi))

    @property
    def mag(self) -> float:
        return max(abs(self.lo), abs(self.hi)) if self.known else math.inf


UNKNOWN_F = FRange(known=False)
Range = object  # IRange | FRange

# Float results beyond this are treated as possibly infinite (f32 max is 3.4e38).
_F_LIMIT = 1e30


def type_range(t: ScalarType) -> IRange:
    if t.is_bool:
        return IRange(0, 1)
    if t.is_signed:
        return IRange(-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1)
    return IRange(0, (1 << t.bits) - 1)


def _fits(r: IRange, t: ScalarType) -> Optional[IRange]:
    return r if r.within(type_range(t)) else None


def _wrap(r: IRange, t: ScalarType) -> IRange:
    """Unsigned arithmetic wraps: exact when no wrap happens, else the whole type."""
    return r if r.within(type_range(t)) else type_range(t)


def _bits_envelope(hi: int) -> int:
    return (1 << max(hi, 0).bit_length()) - 1


def int_edges(t: ScalarType) -> list[int]:
    """The edge values of an integer type: 0, +-1, MIN, MAX, MIN+1, MAX-1, +-(2^k +- 1);
    unsigned types take the bit patterns of the negative ones instead (2^n - (2^k +- 1)), so
    that their values with the top bit set are as frequent as the signed types' negatives
    (where a signed/unsigned mix-up shows)."""
    r = type_range(t)
    # extremes first: Hypothesis favours the first entries of a list it picks from
    named = [r.lo, r.hi, r.hi - 1, r.lo + 1, 0, -1, 1]
    powers = set()
    for k in range(1, t.bits):
        for v in ((1 << k) - 1, 1 << k, (1 << k) + 1):
            powers |= {v, -v if t.is_signed else (1 << t.bits) - v}
    out = list(dict.fromkeys(v for v in named if r.lo <= v <= r.hi))
    return out + sorted(v for v in powers if r.lo <= v <= r.hi and v not in out)


def int_binary(op: str, a: IRange, b: IRange, t: ScalarType,
               nonzero: bool = False) -> Optional[IRange]:
    """Result range of `arith.op a, b : t`, or None when it could be undefined or is not
    defined on `t` (the generator then picks something else). `nonzero`: b is known to be
    non-zero although its interval contains 0 (a guarded divisor)."""
    full = type_range(t)
    signed = t.is_signed
    if t.is_bool:
        return IRange(0, 1) if op in ("and", "or", "xor") else None
    if op in ("add", "sub", "mul"):
        if op == "add":
            r = IRange(a.lo + b.lo, a.hi + b.hi)
        elif op == "sub":
            r = IRange(a.lo - b.hi, a.hi - b.lo)
        else:
            c = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
            r = IRange(min(c), max(c))
        return _fits(r, t) if signed else _wrap(r, t)
    if op in ("div", "rem"):
        if b.lo <= 0 <= b.hi and not nonzero:
            return None  # possible division by zero
        if signed and a.lo == full.lo and b.lo <= -1 <= b.hi:
            return None  # MIN / -1
        if op == "div":
            return IRange(-a.mag, a.mag) if signed else IRange(0, a.hi)
        m = min(a.mag, max(abs(b.lo), abs(b.hi)) - 1)
        if not signed:
            return IRange(0, m)
        return IRange(-m if a.lo < 0 else 0, m if a.hi > 0 else 0)
    if op in ("shl", "shr"):
        if b.lo < 0 or b.hi >= t.bits:
            return None
        if op == "shr":
            return IRange(min(a.lo, 0), max(a.hi, 0))
        if not signed:
            return _wrap(IRange(a.lo << b.lo, a.hi << b.hi), t)
        if a.lo < 0:
            return None  # left shift of a negative value is undefined in C
        return _fits(IRange(a.lo << b.lo, a.hi << b.hi), t)
    if op in ("and", "or", "xor"):
        if a.lo >= 0 and b.lo >= 0:
            if op == "and":
                return IRange(0, min(a.hi, b.hi))
            return IRange(0, _bits_envelope(max(a.hi, b.hi)))
        if op == "and" and (a.lo >= 0 or b.lo >= 0):
            return IRange(0, a.hi if a.lo >= 0 else b.hi)
        return full
    raise ValueError(op)


def int_unary(op: str, a: IRange, t: ScalarType) -> Optional[IRange]:
    if op == "not":
        if t.is_bool:
            return IRange(0, 1)
        if t.is_signed:
            return IRange(-a.hi - 1, -a.lo - 1)
        m = type_range(t).hi
        return IRange(m - a.hi, m - a.lo)
    if t.is_bool:
        return None
    if t.is_signed:
        return None if a.lo == type_range(t).lo else IRange(-a.hi, -a.lo)
    return IRange(0, 0) if a.hi == 0 else type_range(t)  # unsigned negation wraps


def float_binary(op: str, a: FRange, b: FRange) -> FRange:
    if not (a.known and b.known) or op in ("div",):
        return UNKNOWN_F
    if op == "add":
        r = FRange(a.lo + b.lo, a.hi + b.hi)
    elif op == "sub":
        r = FRange(a.lo - b.hi, a.hi - b.lo)
    elif op == "mul":
        c = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
        r = FRange(min(c), max(c))
    elif op == "rem":  # fmod: |r| <= |a| when b cannot be 0
        if b.lo <= 0 <= b.hi:
            return UNKNOWN_F
        r = FRange(min(a.lo, 0.0), max(a.hi, 0.0))
    else:
        raise ValueError(op)
    return _widen(r)


def _widen(r: FRange) -> FRange:
    """Allow for rounding, give up beyond the overflow guard."""
    if r.mag > _F_LIMIT:
        return UNKNOWN_F
    slack = 1e-6 * r.mag + 1e-30
    return FRange(r.lo - slack, r.hi + slack)


def cast_range(r, src: ScalarType, dst: ScalarType):
    """Range after `cast : src -> dst`, or None when the cast could be undefined."""
    if dst.is_float:
        if src.is_float:
            if not r.known:
                return UNKNOWN_F
            if dst is ScalarType.f32 and r.mag > 3e38:
                return UNKNOWN_F
            return _widen(r)
        return _widen(FRange(float(r.lo), float(r.hi)))
    if src.is_float:
        if not r.known:
            return None  # NaN or out of range: undefined
        if dst.is_bool:
            return IRange(0, 1)
        lo, hi = math.trunc(r.lo), math.trunc(r.hi)
        full = type_range(dst)
        # strict margins: the bounds are approximate
        if lo - 1 <= full.lo or hi + 1 >= full.hi:
            return None
        return IRange(lo, hi)
    if dst.is_bool:
        return IRange(0, 1)
    if src.is_bool:
        return IRange(0, 1)
    return r if r.within(type_range(dst)) else type_range(dst)


def const_range(value, t: ScalarType):
    return FRange(float(value), float(value)) if t.is_float else IRange(int(value), int(value))
