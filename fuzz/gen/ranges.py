"""Value ranges the generator tracks so that its programs are free of undefined behaviour.

Integer values carry an exact interval `IRange(lo, hi)`; an instruction is only generated when
its result interval provably fits the type (no signed overflow, no division by zero, shift
amounts in range). Float values carry an `FRange` whose bounds are finite, or `None` when the
value may be anything (NaN and infinities included); float→int casts need finite bounds.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Optional

from tlinterp.lang import ops
from tlinterp.lang.ops import BOOL
from tlinterp.lang.types import ScalarType


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
    if t.is_bool:  # any operation defined on i1 gives 0 or 1
        return IRange(0, 1) if BOOL in ops.find(ops.BINARY, op).accepts else None
    model = INT_BINARY[op]
    if model is NO_MODEL:
        return None
    return model(a, b, t, nonzero)


def _ring(f):
    """add/sub/mul: the interval of f; signed overflow is undefined, unsigned wraps."""
    def run(a: IRange, b: IRange, t: ScalarType, nonzero: bool) -> Optional[IRange]:
        c = [f(a.lo, b.lo), f(a.lo, b.hi), f(a.hi, b.lo), f(a.hi, b.hi)]
        r = IRange(min(c), max(c))
        return _fits(r, t) if t.is_signed else _wrap(r, t)
    return run


def _divrem(op: str):
    def run(a: IRange, b: IRange, t: ScalarType, nonzero: bool) -> Optional[IRange]:
        signed = t.is_signed
        if b.lo <= 0 <= b.hi and not nonzero:
            return None  # possible division by zero
        if signed and a.lo == type_range(t).lo and b.lo <= -1 <= b.hi:
            return None  # MIN / -1
        if op == "div":
            return IRange(-a.mag, a.mag) if signed else IRange(0, a.hi)
        m = min(a.mag, max(abs(b.lo), abs(b.hi)) - 1)
        if not signed:
            return IRange(0, m)
        return IRange(-m if a.lo < 0 else 0, m if a.hi > 0 else 0)
    return run


def _shift(op: str):
    def run(a: IRange, b: IRange, t: ScalarType, nonzero: bool) -> Optional[IRange]:
        if b.lo < 0 or b.hi >= t.bits:
            return None
        if op == "shr":
            return IRange(min(a.lo, 0), max(a.hi, 0))
        if not t.is_signed:
            return _wrap(IRange(a.lo << b.lo, a.hi << b.hi), t)
        if a.lo < 0:
            return None  # left shift of a negative value is undefined in C
        return _fits(IRange(a.lo << b.lo, a.hi << b.hi), t)
    return run


def _bits(op: str):
    def run(a: IRange, b: IRange, t: ScalarType, nonzero: bool) -> Optional[IRange]:
        if a.lo >= 0 and b.lo >= 0:
            if op == "and":
                return IRange(0, min(a.hi, b.hi))
            return IRange(0, _bits_envelope(max(a.hi, b.hi)))
        if op == "and" and (a.lo >= 0 or b.lo >= 0):
            return IRange(0, a.hi if a.lo >= 0 else b.hi)
        return type_range(t)
    return run


def _select(f):
    """min/max: one of the operands, so f of the bounds (integer and float ranges)."""
    def run(a, b, *_):
        if isinstance(a, FRange) and not (a.known and b.known):
            return UNKNOWN_F  # a NaN operand gives the other one, which may be infinite
        return type(a)(f(a.lo, b.lo), f(a.hi, b.hi))
    return run


def int_unary(op: str, a: IRange, t: ScalarType) -> Optional[IRange]:
    if t.is_bool:
        return IRange(0, 1) if BOOL in ops.find(ops.UNARY, op).accepts else None
    model = INT_UNARY[op]
    return None if model is NO_MODEL else model(a, t)


def _int_not(a: IRange, t: ScalarType) -> IRange:
    if t.is_signed:
        return IRange(-a.hi - 1, -a.lo - 1)
    m = type_range(t).hi
    return IRange(m - a.hi, m - a.lo)


def _int_neg(a: IRange, t: ScalarType) -> Optional[IRange]:
    if t.is_signed:
        return None if a.lo == type_range(t).lo else IRange(-a.hi, -a.lo)
    return IRange(0, 0) if a.hi == 0 else type_range(t)  # unsigned negation wraps


def float_binary(op: str, a: FRange, b: FRange) -> Optional[FRange]:
    """Result range of a float operation (UNKNOWN_F: NaN or infinite possible), or None when
    the operation has no range model (the generator leaves it out)."""
    model = FLOAT_BINARY[op]
    return None if model is NO_MODEL else model(a, b)


def _float_ring(f):
    def run(a: FRange, b: FRange) -> FRange:
        if not (a.known and b.known):
            return UNKNOWN_F
        c = [f(a.lo, b.lo), f(a.lo, b.hi), f(a.hi, b.lo), f(a.hi, b.hi)]
        return _widen(FRange(min(c), max(c)))
    return run


def _float_div(a: FRange, b: FRange) -> FRange:
    return UNKNOWN_F  # a divisor near 0 gives anything


def _float_rem(a: FRange, b: FRange) -> FRange:
    """fmod: |r| <= |a| when b cannot be 0."""
    if not (a.known and b.known) or b.lo <= 0 <= b.hi:
        return UNKNOWN_F
    return _widen(FRange(min(a.lo, 0.0), max(a.hi, 0.0)))


def float_unary(op: str, a: FRange) -> Optional[FRange]:
    model = FLOAT_UNARY[op]
    return None if model is NO_MODEL else model(a)


def _float_neg(a: FRange) -> FRange:
    return FRange(-a.hi, -a.lo) if a.known else UNKNOWN_F


# "this operation has no range model on this type class": the generator never emits it there
NO_MODEL = object()

# The value-range tables: operation (tlinterp/lang/ops.py) -> model, per type class (i1 results
# are always [0, 1]; comparisons give i1).
INT_BINARY = {
    "add": _ring(operator.add), "sub": _ring(operator.sub), "mul": _ring(operator.mul),
    "div": _divrem("div"), "rem": _divrem("rem"), "shl": _shift("shl"), "shr": _shift("shr"),
    "and": _bits("and"), "or": _bits("or"), "xor": _bits("xor"),
    "min": _select(min), "max": _select(max),
}
FLOAT_BINARY = {
    "add": _float_ring(operator.add), "sub": _float_ring(operator.sub),
    "mul": _float_ring(operator.mul), "div": _float_div, "rem": _float_rem,
    "min": _select(min), "max": _select(max),
}
INT_UNARY = {"neg": _int_neg, "not": _int_not}
FLOAT_UNARY = {"neg": _float_neg}


def has_model(family: str, name: str, t: ScalarType) -> bool:
    """Whether the generator may emit the operation on `t` (i1 and comparisons always)."""
    if t.is_bool or family == ops.COMPARE:
        return True
    return _TABLES[family, t.is_float].get(name, NO_MODEL) is not NO_MODEL


_TABLES = {(ops.BINARY, False): INT_BINARY, (ops.BINARY, True): FLOAT_BINARY,
           (ops.UNARY, False): INT_UNARY, (ops.UNARY, True): FLOAT_UNARY}


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
