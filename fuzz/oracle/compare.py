"""Compare two backends' outputs of one run: `compare_outputs(...) -> list[Mismatch]`.

Contract (an empty list means the outputs agree):

- Every key of `expected` must be in `actual` with the same shape and dtype; keys only in
  `actual` are ignored (the .npz convention lets a tool write extra entries).
- Integer data, `.strides`/`.offset` entries, and float outputs of functions without float
  collectives are compared exactly: equal values, equal sign of zero, NaN where NaN (any
  payload); complex data part by part, so. Scalar float code is exact in the language (no
  contraction, each op rounded in its type), so any difference is a bug.
- Float outputs of functions with float collectives are compared element-wise against an
  error bound computed from the operands' magnitudes and the reduction lengths (see
  `fuzz.oracle.magnitude`): `|e - a| <= 2 gamma_N M + N tiny`, M from the magnitude run of the same
  function on the same arguments. Where M is not finite (NaN/Inf inputs, overflow) the
  element has no bound and is not compared; where M is finite, a NaN or infinity on either
  side is a mismatch (the exact result is finite and far from overflow).
- A function whose float values reach comparisons, divisions, remainders or integer casts
  while it also has float collectives cannot be bounded: its float outputs are not compared
  and `explain()` says why (the fuzz generator never produces such functions).

No false alarms is the requirement: every bound above holds for any correct implementation
that may reassociate collective sums. The bound costs one interpreter run (check=False).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np

from fuzz.oracle.magnitude import Plan, gamma, magnitude_args, magnitude_function, plan
from tlinterp.io.args import Groups
from tlinterp.lang import ir
from tlinterp.lang.types import ScalarType

MAX_PER_KEY = 8  # mismatches listed per output; the rest are summarised in one entry

__all__ = ["Mismatch", "compare_outputs", "explain"]


@dataclass
class Mismatch:
    key: str
    index: Optional[tuple]  # element index, None for whole-array problems
    expected: Any
    actual: Any
    bound: Optional[float]  # allowed |difference|, None when compared exactly
    reason: str

    def __str__(self) -> str:
        where = self.key + ("" if self.index is None else str(list(self.index)))
        text = f"{where}: expected {self.expected}, got {self.actual}"
        if self.bound is not None:
            try:
                diff = abs(float(self.expected) - float(self.actual))
                text += f" (|difference| {diff:.3g} > bound {self.bound:.3g})"
            except (TypeError, ValueError):
                pass
        return f"{text}: {self.reason}"


def _program(program: Union[str, ir.Program]) -> ir.Program:
    if isinstance(program, str):
        import tlinterp

        return tlinterp.check(tlinterp.parse(program))
    return program


def _groups(function: ir.Function, args: Mapping, groups: Optional[Groups]) -> int:
    from tlinterp.io.args import count_groups, groups_count

    return count_groups(function, args, groups_count(groups))


def explain(program, func: Optional[str], args: Mapping, groups: Optional[Groups] = None
            ) -> Plan:
    """How `compare_outputs` will compare this function's outputs."""
    f = _program(program).function(func)
    return plan(f, dict(args), _groups(f, args, groups))


def compare_outputs(program, func: Optional[str], args: Mapping, expected: Mapping,
                    actual: Mapping, groups: Optional[Groups] = None) -> list[Mismatch]:
    """Mismatches between two runs of `func` on `args` (see the module docstring). `groups`
    is the work-group count or grid of the runs (default: the .npz convention's)."""
    program = _program(program)
    function = program.function(func)
    out: list[Mismatch] = []
    # bf16 results are uint16 bit patterns in files but ml_dtypes.bfloat16 from an in-process
    # run (and `V2` from np.savez): compare every spelling as its bit patterns
    expected = {k: _bits_if_bf16(v) for k, v in expected.items()}
    actual = {k: _bits_if_bf16(v) for k, v in actual.items()}
    # keys only the actual side has are ignored, as the .npz convention promises (a tool may
    # echo `.strides`/`.offset` entries or add its own): only the expected outputs count
    for key in sorted(expected):
        if key not in actual:
            out.append(Mismatch(key, None, "present", "absent", None,
                                "output missing from the actual results"))
            continue
        e, a = np.asarray(expected[key]), np.asarray(actual[key])
        if e.shape != a.shape or e.dtype != a.dtype:
            out.append(Mismatch(key, None, f"{e.dtype}{list(e.shape)}",
                                f"{a.dtype}{list(a.shape)}", None, "shape or dtype differs"))
    if out:
        return out
    g = _groups(function, args, groups)
    p: Optional[Plan] = None
    magnitudes: Optional[dict] = None
    bf16 = _bf16_arguments(function)
    for key in sorted(expected):
        e, a = np.asarray(expected[key]), np.asarray(actual[key])
        if key in bf16 and e.dtype == np.uint16:  # bit patterns: NaN where NaN, any payload
            same = (e == a) | (_bf16_nan(e) & _bf16_nan(a))
            out.extend(_report(key, ~same, e, a, None, "exact comparison"))
            continue
        if e.dtype.kind != "f" or key.endswith((".strides", ".offset")):
            out.extend(_exact(key, e, a))
            continue
        if p is None:
            p = plan(function, dict(args), g)
        if not p.float_collectives:
            out.extend(_exact(key, e, a))
        elif p.nonlinear is None:
            if magnitudes is None:
                # the grid itself: group ids along y and z pick what is computed
                magnitudes = _magnitudes(program, function, args,
                                         groups if isinstance(groups, tuple) else g)
            out.extend(_bounded(key, e, a, np.abs(np.asarray(magnitudes[key], np.float64)), p))
    return out


def _bf16_arguments(function: ir.Function) -> set[str]:
    """The memref and group arguments of element type bf16 (compared as bit patterns)."""
    from tlinterp.lang.types import GroupType, MemrefType

    out = set()
    for arg in function.args:
        t = arg.type.memref if isinstance(arg.type, GroupType) else arg.type
        if isinstance(t, MemrefType) and t.element is ScalarType.bf16:
            out.add(arg.value.name)
    return out


def _bf16_nan(bits: np.ndarray) -> np.ndarray:
    """Which bf16 bit patterns are NaNs (all exponent bits set, a mantissa bit set)."""
    return ((bits & 0x7F80) == 0x7F80) & ((bits & 0x007F) != 0)


def _bits_if_bf16(v) -> np.ndarray:
    a = np.asarray(v)
    if a.dtype.itemsize == 2 and a.dtype.kind == "V":  # ml_dtypes.bfloat16 or np.savez's V2
        return a.view(np.uint16)
    return a


def _magnitudes(program: ir.Program, function: ir.Function, args: Mapping, groups: Groups):
    from tlinterp.interp import run

    mag = magnitude_function(function)
    # the same language version: a v0.4 kernel's magnitude twin is checked as v0.4
    prog = ir.Program((mag,), program.filename, lang=program.lang)
    with np.errstate(all="ignore"):
        return run(prog, magnitude_args(dict(args)), func=mag.name, groups=groups, check=False)


def _report(key: str, bad: np.ndarray, e, a, bound, reason: str) -> list[Mismatch]:
    idx = np.argwhere(bad)
    out = []
    for ix in idx[:MAX_PER_KEY]:
        t = tuple(int(i) for i in ix)
        b = None if bound is None else float(bound[t])
        out.append(Mismatch(key, t, e[t].item(), a[t].item(), b, reason))
    if len(idx) > MAX_PER_KEY:
        out.append(Mismatch(key, None, "...", "...", None,
                            f"{len(idx) - MAX_PER_KEY} more elements differ"))
    return out


def _same_floats(e: np.ndarray, a: np.ndarray) -> np.ndarray:
    en, an = np.isnan(e), np.isnan(a)
    return (en & an) | (~en & ~an & (e == a) & (np.signbit(e) == np.signbit(a)))


def _exact(key: str, e: np.ndarray, a: np.ndarray) -> list[Mismatch]:
    if e.dtype.kind == "f":
        same = _same_floats(e, a)
    elif e.dtype.kind == "c":  # each part as a float (a NaN part never equals itself)
        same = _same_floats(e.real, a.real) & _same_floats(e.imag, a.imag)
    else:
        same = e == a
    return _report(key, ~same, e, a, None, "exact comparison")


def _bounded(key: str, e: np.ndarray, a: np.ndarray, m: np.ndarray, p: Plan
             ) -> list[Mismatch]:
    with np.errstate(all="ignore"):
        bound = 2 * gamma(p.steps, p.unit_roundoff) * m + p.steps * p.tiny
        has_bound = np.isfinite(bound)
        e64, a64 = e.astype(np.float64), a.astype(np.float64)
        finite = np.isfinite(e64) & np.isfinite(a64)
        diff = np.abs(e64 - a64)
        bad = has_bound & (~finite | (diff > bound))
    return _report(key, bad, e, a, bound,
                   f"outside the collective rounding bound (N={p.steps} rounding steps)")
