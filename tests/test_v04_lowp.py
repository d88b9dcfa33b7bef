"""v0.4 low-precision types (tlinterp/interp/lowp.py) against independent references: the
promotion order derived from the types' value sets, casts and f16/bf16 arithmetic against
exact rounding computed over every finite value of the narrow type."""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tlinterp.interp import lowp

# (significand bits p, largest exponent emax) of the floating types; integers: value bits
_FLOAT = {"bf16": (8, 127), "f16": (11, 15), "f32": (24, 127), "f64": (53, 1023)}
_INT_BITS = {"i8": 7, "i16": 15, "i32": 31, "i64": 63}


def _exactly_in(a: str, b: str) -> bool:
    """Every value of a is a value of b, derived from the value sets (independent of the
    table in lowp)."""
    ca, cb = a in lowp.COMPLEX, b in lowp.COMPLEX
    if ca and not cb:
        return False
    pa = {"c32": "f32", "c64": "f64"}.get(a, a)
    pb = {"c32": "f32", "c64": "f64"}.get(b, b)
    if pa in _INT_BITS:
        if pb in _INT_BITS:
            return _INT_BITS[pa] <= _INT_BITS[pb]
        return _INT_BITS[pa] <= _FLOAT[pb][0]  # every integer below 2^bits needs bits digits
    if pb in _INT_BITS:
        return False
    (p1, e1), (p2, e2) = _FLOAT[pa], _FLOAT[pb]
    return p1 <= p2 and e1 <= e2


TYPES = ("i8", "i16", "i32", "i64", "bf16", "f16", "f32", "f64", "c32", "c64")


def test_promotion_order_is_exact_representability():
    for a in TYPES:
        for b in TYPES:
            assert lowp.promotable(a, b) == _exactly_in(a, b), (a, b)


def test_promote_hand_cases():
    assert lowp.promote("i8", "bf16") == "bf16"
    assert lowp.promote("f32", "i16") == "f32"
    assert lowp.promote("f16", "bf16") is None  # neither holds the other
    assert lowp.promote("i16", "f16") is None
    assert lowp.promote("i32", "f32") is None
    assert lowp.promote("f64", "c32") is None
    assert lowp.promote("index", "i64") == "i64"


def test_cast_table():
    for a in TYPES:
        for b in TYPES:
            forbidden = a in lowp.COMPLEX and b not in lowp.COMPLEX
            assert (lowp.cast_rule(a, b) is not None) == forbidden, (a, b)
    assert "bool" in lowp.cast_rule("bool", "i32")
    assert "bool" in lowp.cast_rule("f32", "bool")
    with pytest.raises(ValueError, match="complex"):
        lowp.cast(np.zeros(2), "c32", "f32")


def _all_finite(t) -> np.ndarray:
    """Every finite value of a 16-bit float type, as exact f64, sorted, with its bit pattern."""
    bits = np.arange(1 << 16, dtype=np.uint16)
    with np.errstate(invalid="ignore"):  # the NaN patterns
        vals = bits.view(t).astype(np.float64)
    keep = np.isfinite(vals) & ~((vals == 0) & (bits != 0))  # one zero
    order = np.argsort(vals[keep], kind="stable")
    return vals[keep][order], bits[keep][order]


_TABLES = {"bf16": _all_finite(ml_dtypes.bfloat16), "f16": _all_finite(np.float16)}


def _round_exact(x: Fraction, ty: str) -> float:
    """x rounded to nearest, ties to even, over the enumerated values; beyond the largest value
    by half an ulp and more: inf (IEEE overflow)."""
    vals, bits = _TABLES[ty]
    top = vals[-1]
    ulp_top = top - vals[-2]
    if abs(x) >= Fraction(top) + Fraction(ulp_top) / 2:
        return float("inf") if x > 0 else float("-inf")
    k = int(np.searchsorted(vals, float(x)))
    best = None
    for c in range(max(0, k - 2), min(len(vals), k + 2)):
        d = abs(Fraction(vals[c]) - x)
        key = (d, int(bits[c]) & 1)  # ties: the even pattern
        if best is None or key < best[0]:
            best = (key, vals[c])
    return float(best[1])


def test_double_rounding_avoided_hand_case():
    x = 1 + 2.0 ** -8 + 2.0 ** -30  # above the bf16 midpoint; naive f64->f32->bf16 gives 1.0
    assert float(np.float32(x).astype(ml_dtypes.bfloat16)) == 1.0
    assert float(lowp.cast(np.array([x]), "f64", "bf16")[0][0]) == 1.0078125


@given(st.floats(allow_nan=False, allow_infinity=False, width=64, min_value=-1e6,
                 max_value=1e6) | st.floats(allow_nan=False, allow_infinity=False,
                                            min_value=-1e-4, max_value=1e-4),
       st.sampled_from(["bf16", "f16"]))
def test_f64_to_narrow_is_correctly_rounded(x, ty):
    got = float(lowp.cast(np.array([x]), "f64", ty)[0][0])
    assert got == _round_exact(Fraction(x), ty)


@given(st.integers(-(2 ** 63), 2 ** 63 - 1), st.sampled_from(["bf16", "f16"]))
def test_i64_to_narrow_is_correctly_rounded(n, ty):
    got = float(lowp.cast(np.array([n], np.int64), "i64", ty)[0][0])
    assert got == _round_exact(Fraction(n), ty)


@given(st.integers(0, (1 << 16) - 1), st.integers(0, (1 << 16) - 1),
       st.sampled_from(["add", "sub", "mul", "div"]), st.sampled_from(["bf16", "f16"]))
def test_narrow_arith_is_correctly_rounded(ba, bb, op, ty):
    t = lowp.dtype(ty)
    a = np.array([ba], np.uint16).view(t)
    b = np.array([bb], np.uint16).view(t)
    fa, fb = float(a[0]), float(b[0])
    if not (np.isfinite(fa) and np.isfinite(fb)) or (op == "div" and fb == 0):
        return
    exact = {"add": Fraction(fa) + Fraction(fb), "sub": Fraction(fa) - Fraction(fb),
             "mul": Fraction(fa) * Fraction(fb),
             "div": Fraction(fa) / Fraction(fb) if fb else None}[op]
    got = float(lowp.arith(op, a, b, ty)[0])
    want = _round_exact(exact, ty)
    assert got == want or (got == 0 == want)  # signed zeros compare equal


def test_float_to_int_invalid_cases():
    x = np.array([np.nan, np.inf, -np.inf, 2.0 ** 31, -2.0 ** 31, -2.0 ** 31 - 1,
                  2147483647.9, -2.5])
    r, bad = lowp.cast(x, "f64", "i32")
    assert bad.tolist() == [True, True, True, True, False, True, False, False]
    assert r[~bad].tolist() == [-2 ** 31, 2147483647, -2]
    r, bad = lowp.cast(np.array([2.0 ** 63, -2.0 ** 63]), "f64", "i64")
    assert bad.tolist() == [True, False]


def test_complex_and_int_casts():
    r, _ = lowp.cast(np.array([1.5, -2.0]), "f32", "c64")
    assert r.dtype == np.complex128 and r.tolist() == [1.5 + 0j, -2 + 0j]
    r, _ = lowp.cast(np.array([300, -129]), "i32", "i8")  # wraps
    assert r.tolist() == [44, 127]
    r, _ = lowp.cast(np.array([16777217], np.int64), "i64", "f32")  # one rounding, to even
    assert r.tolist() == [16777216.0]


def test_identities():
    assert lowp.identity("add", "f16") == 0
    assert lowp.identity("max", "i8") == -128 and lowp.identity("min", "i16") == 32767
    assert lowp.identity("max", "bf16") == -np.inf and lowp.identity("min", "f64") == np.inf
    with pytest.raises(ValueError):
        lowp.identity("max", "c32")
