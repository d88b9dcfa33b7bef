"""Error bounds for float collectives: the magnitude program and the rounding-step count.

Collective instructions may reassociate their sums (docs/semantics.md "Collectives"), so two
correct implementations differ by rounding. For a function whose float values flow only through
loads, stores, add/sub/mul/neg, float casts, if-yields and collectives ("linear" float code),
the difference of any float output element is bounded by

    |expected - actual| <= 2 * gamma_N * M + N * tiny,    gamma_N = N u / (1 - N u)

where M is the element's value in the *magnitude run* — the same function run with every float
input, constant, alpha and beta replaced by its absolute value, `sub` by `add` and `neg` by
the identity (so M = |alpha| |A| |B| + |beta| |C| ..., composed through the whole function) —
N bounds the rounding steps along any dependency chain (reduction length + 3 per
collective, 1 per scalar op, times loop trip counts and, for atomics, the group count),
u is the unit roundoff of the narrowest float type in the function and `tiny` its smallest
normal number (covers underflow and flush-to-zero). The factor 2 covers the magnitude run's
own rounding. Integer control flow is unchanged by the transformation because linear
functions never turn floats into integers or conditions.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from tlinterp.lang import ir, ops
from tlinterp.lang.ir import Const, Value
from tlinterp.lang.types import GroupType, MemrefType, ScalarType


def _out_type(inst: ir.Blas) -> MemrefType:
    return inst.memref_type(inst.output())


def _in_types(inst: ir.Blas) -> list[MemrefType]:
    return [inst.memref_type(f) for f in inst.inputs()]


@dataclass
class Plan:
    """How float outputs of one function are compared."""

    float_collectives: bool  # False: every output is compared exactly
    nonlinear: Optional[str]  # why no bound can be given (then float outputs are not compared)
    steps: int  # N
    unit_roundoff: float  # u
    tiny: float


def plan(function: ir.Function, args: dict, groups: int) -> Plan:
    """Analyse `function` (see the module docstring) for the given arguments."""
    insts = list(ir.walk(function.body))
    colls = [i for i in insts if isinstance(i, ir.BLAS) and _out_type(i).element.is_float]
    f32 = any(_mentions_f32(i) for i in insts) or any(
        _is_f32(a.type) for a in function.args)
    u, tiny = (2.0**-24, float(np.finfo(np.float32).tiny)) if f32 else (
        2.0**-53, float(np.finfo(np.float64).tiny))
    if not colls:
        return Plan(False, None, 0, u, tiny)
    why = _nonlinear(insts)
    kmax = _largest_extent(function, args)
    steps = _steps(function.body, kmax, groups, _trip_guess(args, kmax))
    return Plan(True, why, steps, u, tiny)


def _is_f32(t) -> bool:
    if isinstance(t, GroupType):
        t = t.memref
    if isinstance(t, MemrefType):
        t = t.element
    return t is ScalarType.f32


def _mentions_f32(inst) -> bool:
    for name in ("type", "from_type", "to_type", "alpha_type", "beta_type", "a_type",
                 "b_type", "c_type"):
        if _is_f32(getattr(inst, name, None)):
            return True
    return any(t is ScalarType.f32 for t in getattr(inst, "result_types", ()))


def _nonlinear(insts) -> Optional[str]:
    for i in insts:
        # the operations declared linear (tlinterp/lang/ops.py) are those bounded here
        if isinstance(i, ir.Compare) and i.type.is_float and not ops.linear(ops.COMPARE, i.cond):
            return "a float comparison"
        if isinstance(i, (ir.Arith, ir.ArithUnary)) and i.type.is_float and not ops.linear(
                ops.BINARY if isinstance(i, ir.Arith) else ops.UNARY, i.op):
            return f"float arith.{i.op}"
        if isinstance(i, ir.Cast) and not ops.linear_cast(i.from_type, i.to_type):
            return "a float to integer cast"
        if isinstance(i, ir.BLAS) and _out_type(i).element.is_float:
            if any(t.element.is_int for t in _in_types(i)):
                return f"{i.MNEMONIC} with integer operands and a float result"
    return None


def _largest_extent(function: ir.Function, args: dict) -> int:
    """No reduction is longer than the element count of any argument or alloca."""
    n = 1
    for k, v in args.items():  # element counts: fused modes can span a whole argument
        if not k.endswith((".strides", ".offset")):
            n = max(n, np.asarray(v).size)
    for i in ir.walk(function.body):
        if isinstance(i, ir.Alloca):
            n = max(n, int(np.prod([s or 1 for s in i.type.shape])))
    return n


def _trip_guess(args: dict, kmax: int) -> int:
    """Trip-count bound for loops with run-time bounds: the largest integer argument value or
    array mode. Loop bounds computed by arithmetic can exceed it; the generator never does."""
    t = kmax
    for v in args.values():
        a = np.asarray(v)
        if a.ndim == 0 and a.dtype.kind in "iu":
            t = max(t, abs(int(a)))
    return t


def _trips(inst, guess: int) -> int:
    start, stop = inst.start, inst.stop
    step = inst.step if isinstance(inst, ir.For) else Const(1)
    if all(isinstance(x, Const) for x in (start, stop)) and (
            step is None or isinstance(step, Const)):
        st = 1 if step is None else max(int(step.value), 1)
        return max(0, -(-(int(stop.value) - int(start.value)) // st))
    return guess


def _steps(region: ir.Region, kmax: int, groups: int, guess: int) -> int:
    n = 0
    for i in region.instructions:
        if isinstance(i, ir.BLAS) and _out_type(i).element.is_float:
            n += (_reduction(i, kmax) + 3) * (groups if i.atomic else 1)
        elif isinstance(i, (ir.Arith, ir.ArithUnary)) and i.type.is_float:
            n += 1
        elif isinstance(i, ir.Cast) and i.to_type.is_float:
            n += 1
        elif isinstance(i, ir.If):
            n += max(_steps(r, kmax, groups, guess) for r in ir.regions_of(i))
        elif isinstance(i, ir.For):
            n += max(_trips(i, guess), 1) * _steps(i.body, kmax, groups, guess)
        elif isinstance(i, ir.Foreach):
            n += _steps(i.body, kmax, groups, guess)  # iterations write distinct elements
    return n


def _reduction(inst, kmax: int) -> int:
    """Reduction length of a collective: static from its types, else `kmax`."""
    if inst.REDUCED is None:
        return 1  # axpby, ger, hadamard: no sums
    k = inst.reduction_length()
    return kmax if k is None else k


def gamma(steps: int, u: float) -> float:
    nu = steps * u
    return math.inf if nu >= 0.5 else nu / (1 - nu)


# --- the magnitude program ------------------------------------------------------------------


class _Abs:
    """Rewrites a function into its magnitude version (see the module docstring)."""

    def __init__(self, function: ir.Function):
        self.names = {a.value.name for a in function.args}
        for i in ir.walk(function.body):
            self.names.update(v.name for v in ir.results_of(i))
        self.n = 0

    def fresh(self) -> Value:
        while True:
            self.n += 1
            name = f"mag{self.n}abs"
            if name not in self.names:
                self.names.add(name)
                return Value(name)

    def abs_of(self, x: ir.Operand, t: ScalarType, out: list, result: Optional[Value] = None
               ) -> ir.Operand:
        """|x| as an operand; instructions go to `out`."""
        if isinstance(x, Const):
            return Const(abs(x.value), x.is_float)
        c, n = self.fresh(), self.fresh()
        r = result or self.fresh()
        zero = Const(0.0, True) if t.is_float else Const(0)
        out.append(ir.Compare(c, "lt", x, zero, t))
        out.append(ir.ArithUnary(n, "neg", x, t))
        out.append(ir.If((r,), c, (t,), ir.Region([ir.Yield((n,), (t,))]),
                         ir.Region([ir.Yield((x,), (t,))])))
        return r

    def region(self, region: ir.Region) -> ir.Region:
        out: list = []
        for i in region.instructions:
            self.inst(i, out)
        return ir.Region(out)

    def inst(self, i, out: list) -> None:
        fa = lambda x: Const(abs(x.value), True) if isinstance(x, Const) else x  # noqa: E731
        if isinstance(i, ir.BLAS):
            if _out_type(i).element.is_float:
                i.alpha = self.abs_of(i.alpha, i.alpha_type, out)
                # v0.4 .atomic: beta is a `constant` 0 or 1 (the checker insists), already
                # its own magnitude; an |x| computed by `if` would not be a constant
                if not getattr(i, "atomic", False):
                    i.beta = self.abs_of(i.beta, i.beta_type, out)
        elif isinstance(i, ir.Constant) and isinstance(i.type, ScalarType) and i.type.is_float:
            i.value = Const(abs(i.value.value), True)  # v0.4's named literals
        elif isinstance(i, ir.Arith) and i.type.is_float:
            i.lhs, i.rhs = fa(i.lhs), fa(i.rhs)
            if i.op == "sub":
                i.op = "add"
        elif isinstance(i, ir.ArithUnary) and i.type.is_float:
            out.append(ir.Arith(i.result, "add", fa(i.operand), Const(-0.0, True), i.type))
            return
        elif isinstance(i, ir.Cast) and i.to_type.is_float and not i.from_type.is_float:
            tmp = self.fresh()
            out.append(ir.Cast(tmp, i.operand, i.from_type, i.to_type))
            self.abs_of(tmp, i.to_type, out, result=i.result)
            return
        elif isinstance(i, ir.Cast) and i.from_type.is_float:
            i.operand = fa(i.operand)
        elif isinstance(i, ir.Store) and i.type.element.is_float:
            i.value = fa(i.value)
        elif isinstance(i, ir.Yield):
            i.values = tuple(fa(v) if t.is_float else v for v, t in zip(i.values, i.types))
        elif isinstance(i, ir.For) and i.inits:  # v0.4 loop-carried values start at |init|
            i.inits = tuple((c, fa(x) if t.is_float else x)
                            for (c, x), t in zip(i.inits, i.result_types))
        for attr in ("then", "otherwise", "body"):
            r = getattr(i, attr, None)
            if isinstance(r, ir.Region):
                setattr(i, attr, self.region(r))
        out.append(i)


def magnitude_function(function: ir.Function) -> ir.Function:
    f = copy.deepcopy(function)
    f.body = _Abs(f).region(f.body)
    return f


def magnitude_args(args: dict) -> dict:
    return {k: (np.abs(v) if np.asarray(v).dtype.kind == "f" else v) for k, v in args.items()}
