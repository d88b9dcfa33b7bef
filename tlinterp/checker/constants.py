"""The range rule of literal constants, which both versions state: a literal must be a finite
number of its float type, and an integer literal must fit its integer type (v0.4's `constant`
the same, as tinytc rejects it)."""

from __future__ import annotations

from functools import cache
from typing import Optional

import numpy as np

from tlinterp.lang.ir import Const
from tlinterp.lang.types import ScalarType


@cache
def _int_range(t: ScalarType) -> tuple[int, int]:
    if t.is_bool:
        return 0, 1
    if t.is_signed:
        return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
    return 0, (1 << t.bits) - 1


def constant_problem(c: Const, t: ScalarType, integral_float_ok: bool = False) -> Optional[str]:
    """Why the literal `c` cannot have type `t`, or None. `integral_float_ok` admits a float
    literal with an integral value for an integer type (alpha/beta of collectives)."""
    if t.is_float:
        v = float(c.value)
        if not np.isfinite(v):
            return f"constant {_const_text(c)} is not a finite number"
        with np.errstate(over="ignore"):
            if not np.isfinite(t.dtype.type(v)):
                return f"constant {_const_text(c)} is out of range for {t}"
        return None
    if c.is_float:
        v = float(c.value)
        if not (integral_float_ok and np.isfinite(v) and v.is_integer()):
            return f"float constant {_const_text(c)} cannot have integer type {t}"
        value = int(v)
    else:
        value = int(c.value)
    lo, hi = _int_range(t)
    if value < 0 and not t.is_signed and not t.is_bool:
        return f"negative constant {_const_text(c)} for unsigned type {t}"
    if not lo <= value <= hi:
        return f"constant {_const_text(c)} does not fit type {t} (range {lo}..{hi})"
    return None


def _const_text(c: Const) -> str:
    return repr(float(c.value)) if c.is_float else str(int(c.value))


__all__ = ["constant_problem"]
