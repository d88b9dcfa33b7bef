"""Runnable v0.4 kernels for min and max with NaN operands: the reference's rule
(docs/semantics.md, minNum/maxNum as OpenCL C's fmin/fmax): `min(a, b)` is `b` if `b < a`, else
`a`; a NaN operand gives the other operand, two NaN operands give NaN. On f32 (the v0.3 scalar
table) and f16 (v0.4's low-precision one). Each expected value is computed here with plain
Python `math`, never with the interpreter or NumPy's array arithmetic."""

from __future__ import annotations

import math

import numpy as np

from corpus.cases.model import ValidCase
from corpus.cases.v04.core import _foreach_kernel, _lines, _v, _vectors


def _min(a: float, b: float) -> float:
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return b if b < a else a


def _max(a: float, b: float) -> float:
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return b if b > a else a


def cases() -> list[ValidCase]:
    out = []
    a = [math.nan, 1.5, math.nan, -2.25, math.inf, 0.5]
    b = [2.0, math.nan, math.nan, 3.0, math.nan, -math.inf]
    for t, dt in (("f32", np.float32), ("f16", np.float16)):
        lines = [f"%a = load %A[%i] : {t}", f"%b = load %B[%i] : {t}",
                 f"%lo = min %a, %b : {t}", f"%hi = max %a, %b : {t}",
                 "store %lo, %MIN[%i]", "store %hi, %MAX[%i]"]
        src = _foreach_kernel(_vectors(6, A=t, B=t, MIN=t, MAX=t), 6, _lines(*lines))
        args = {"A": np.array(a, dt), "B": np.array(b, dt), "MIN": np.zeros(6, dt),
                "MAX": np.zeros(6, dt)}
        exp = {"MIN": [_min(x, y) for x, y in zip(a, b)],
               "MAX": [_max(x, y) for x, y in zip(a, b)]}
        out.append(_v(f"minmax_nan_{t}", src, args, exp, ["min", "max", "load", "store",
                                                            "foreach"], [t]))
    return out
