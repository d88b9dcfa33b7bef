"""Single-lane scalar loops on Python scalars.

The executor runs every instruction as NumPy operations over lane arrays, which costs tens of
microseconds per instruction: fine for many lanes, slow for a scalar loop in one work-group.
When a `for` runs on exactly one lane, no other lane exists that could race with it (one
work-group, outside any foreach), so its body can run on plain Python ints and floats.

The fast path only ever computes results that are exact and defined: whenever an instruction
might be undefined or is not handled here (an overflow, a division by zero, a non-finite float
result, an access outside the view or to uninitialised or dead memory, a subview, ...), that
one instruction is run by the executor's own handler instead, which reports the undefined
behaviour exactly as everywhere else, or computes the result. The scalar semantics therefore
stay defined in one place (`scalar.py`); this module only skips work where they are trivial.
"""

from __future__ import annotations

import math
import operator
import struct
from functools import cache, partial
from typing import Any, Optional

import numpy as np

from tlinterp.interp import memory as mem
from tlinterp.interp import scalar
from tlinterp.lang import ir
from tlinterp.lang.ops import BOOL, FLOAT, INT, type_class
from tlinterp.lang.types import INDEX, V04_ONLY_SCALARS, ScalarType

_F32 = struct.Struct("f")
_BAIL = object()  # "let the executor run this instruction"

# Instructions that would need real lanes (new lanes, allocations that die with a region,
# collectives over memory): a loop containing one runs on the general path.
_INELIGIBLE = (ir.Foreach, ir.Alloca, *ir.BLAS)


def _v04(inst: ir.For) -> bool:
    """v0.4 constructs (loop-carried values, its instructions, types and operations) run on
    the general path: the Python-scalar tables here cover v0.3's only."""
    if inst.inits:
        return True
    for i in ir.walk(inst.body):
        if isinstance(i, ir.V04_INSTRUCTIONS) or getattr(i, "inits", ()):
            return True
        if getattr(i, "op", "") in scalar._V04_UNARY or getattr(i, "op", "") in ("min", "max"):
            return True
        for f in ("type", "from_type", "to_type"):
            t = getattr(i, f, None)
            t = getattr(t, "element", t)
            if t in V04_ONLY_SCALARS:
                return True
    return False


def eligible(inst: ir.For, cache: dict) -> bool:
    """The loop's body (at any depth) has nothing that needs the general path."""
    key = id(inst)
    ok = cache.get(key)
    if ok is None:
        ok = cache[key] = not inst.type.is_bool and not any(
            isinstance(i, _INELIGIBLE) for i in ir.walk(inst.body)) and not _v04(inst)
    return ok


def _f32(x: float) -> Any:
    try:
        return _F32.unpack(_F32.pack(x))[0]  # round to nearest f32
    except OverflowError:  # rounds to infinity: not UB, but left to the general path
        return _BAIL


@cache
def _range(t: ScalarType) -> tuple[int, int]:
    bits = t.bits
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if t.is_signed else (0, (1 << bits) - 1)


def _wrap(x: int, t: ScalarType) -> int:
    bits = t.bits
    x &= (1 << bits) - 1
    return x - (1 << bits) if t.is_signed and x >> (bits - 1) else x


def binary(op: str, t: ScalarType, a, b):
    """`scalar.binary` where it is defined and cheap, else _BAIL."""
    return BINARY[type_class(t)][op](t, a, b)


def unary(op: str, t: ScalarType, a):
    return UNARY[type_class(t)][op](t, a)


def _general(t, *operands):
    """Not done here: the executor runs it."""
    return _BAIL


# --- integers: exact in Python ints; signed overflow goes to the general path -----------------


def _int_ring(f):
    def run(t, a, b):
        r = f(a, b)
        lo, hi = _range(t)
        if lo <= r <= hi:
            return r
        return _BAIL if t.is_signed else r & hi  # unsigned wraps
    return run


def _int_divrem(op: str):
    def run(t, a, b):
        if b == 0 or (t.is_signed and a == _range(t)[0] and b == -1):
            return _BAIL
        q = abs(a) // abs(b)
        if (a < 0) != (b < 0):
            q = -q  # C: truncate toward zero
        return q if op == "div" else a - q * b
    return run


def _shr(t, a, b):
    if b < 0 or b >= t.bits:
        return _BAIL
    return a >> b  # arithmetic for signed values, logical for unsigned (non-negative)


_shifted = _int_ring(operator.lshift)


def _shl(t, a, b):
    return _BAIL if b < 0 or b >= t.bits else _shifted(t, a, b)


def _int_neg(t, a):
    lo, hi = _range(t)
    if lo <= -a <= hi:
        return -a
    return _BAIL if t.is_signed else -a & hi


# --- floats: computed in f64, rounded once to f32; non-finite results go to the general path --


def _float(f):
    def run(t, a, b):
        r = f(a, b)
        if r is _BAIL:
            return r
        if t is ScalarType.f32:  # exact: f64 holds an f32 operation's result before rounding
            r = _f32(r)
            if r is _BAIL:
                return r
        return r if math.isfinite(r) else _BAIL
    return run


def _finite_divisor(f):
    return lambda a, b: _BAIL if b == 0 or not math.isfinite(a) or not math.isfinite(b) \
        else f(a, b)


def _fmin(a, b):
    """OpenCL C fmin: b if b < a, else a; a NaN operand gives the other one."""
    return b if a != a or b < a else a


def _fmax(a, b):
    return b if a != a or b > a else a


def _exact(f):
    return lambda t, *operands: f(*operands)


# The fast path's tables: type class -> operation (tlinterp/lang/ops.py) -> (t, operands) -> a
# Python scalar or _BAIL.
BINARY = {
    INT: {"add": _int_ring(operator.add), "sub": _int_ring(operator.sub),
          "mul": _int_ring(operator.mul), "div": _int_divrem("div"), "rem": _int_divrem("rem"),
          "shl": _shl, "shr": _shr, "and": _exact(operator.and_), "or": _exact(operator.or_),
          "xor": _exact(operator.xor), "min": _exact(min), "max": _exact(max)},
    FLOAT: {"add": _float(operator.add), "sub": _float(operator.sub),
            "mul": _float(operator.mul), "div": _float(_finite_divisor(operator.truediv)),
            "rem": _float(_finite_divisor(math.fmod)), "min": _float(_fmin),
            "max": _float(_fmax)},
    BOOL: {"add": _exact(operator.xor), "sub": _exact(operator.xor), "xor": _exact(operator.xor),
           "mul": _exact(operator.and_), "and": _exact(operator.and_),
           "or": _exact(operator.or_), "div": _general, "rem": _general, "shl": _general,
           "shr": _general},
}
UNARY = {
    INT: {"neg": _int_neg, "not": lambda t, a: _wrap(~a, t)},
    FLOAT: {"neg": _exact(operator.neg)},
    BOOL: {"neg": lambda t, a: a, "not": _exact(operator.not_)},
}
COMPARE = {"eq": operator.eq, "ne": operator.ne, "gt": operator.gt, "ge": operator.ge,
           "lt": operator.lt, "le": operator.le}


def cast(src: ScalarType, dst: ScalarType, a):
    if dst.is_bool:
        return a != 0
    if src.is_int:
        if dst.is_int:
            return _wrap(int(a), dst)
        if abs(a) <= (1 << (24 if dst is ScalarType.f32 else 53)):  # exact in the target
            return float(a)
        return _BAIL
    if not math.isfinite(a):
        return _BAIL
    if dst.is_float:
        return a if dst is ScalarType.f64 or src is ScalarType.f32 else _f32(a)
    t = math.trunc(a)
    lo, hi = _range(dst)
    return t if lo <= t <= hi else _BAIL


_INF = math.inf


@cache
def binary_fn(op: str, t: ScalarType):
    """`binary` specialised for one operation and type (the common ones written out)."""
    if op in ("add", "sub", "mul") and not t.is_bool:
        f = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}[op]
        if t is ScalarType.f64:
            def run(a, b):
                r = f(a, b)
                return r if -_INF < r < _INF else _BAIL  # NaN fails both comparisons
            return run
        if t.is_int:
            lo, hi = _range(t)
            if t.is_signed:
                def run(a, b):
                    r = f(a, b)
                    return r if lo <= r <= hi else _BAIL
                return run
            return lambda a, b: f(a, b) & hi
    return partial(BINARY[type_class(t)][op], t)


def _int1(x) -> int:
    return x if isinstance(x, int) else int(np.asarray(x).reshape(-1)[0])


class FastRunner:
    """Runs regions of one lane on Python scalars, handing single instructions back to the
    executor where needed. Each instruction is turned once into a closure that returns False
    to hand it back. `vals` maps SSA names to Python scalars (or views); `dtypes` records the
    NumPy dtype of each scalar so that the executor gets its own representation back."""

    def __init__(self, ex, env, lanes):
        self.ex, self.env, self.lanes = ex, env, lanes
        self.check = ex.check
        self.vals: dict[str, Any] = {}
        self.dtypes: dict[str, np.dtype] = {}
        self.code: dict[int, list] = {}  # region id -> [(instruction, closure)]
        self.compilers = {
            ir.Arith: self._arith, ir.ArithUnary: self._unary, ir.Cast: self._cast,
            ir.Compare: self._compare, ir.Load: self._load, ir.Store: self._store,
            ir.If: self._if, ir.For: self._for, ir.GroupId: self._group_id,
            ir.GroupSize: self._group_size, ir.Barrier: lambda inst: lambda: True,
        }

    # --- values ---------------------------------------------------------------------------

    def getter(self, op: ir.Operand, t: ScalarType):
        """A function returning the operand's current value."""
        if isinstance(op, ir.Const):
            c = scalar.const(op, t).item()
            return lambda: c
        return self._view_getter(op.name)

    def _outer(self, name: str):
        """A value defined before the loop, converted once (SSA: it cannot change)."""
        v = self.env.get(name)
        if isinstance(v, (np.ndarray, np.generic)) and v.size == 1:
            self.dtypes[name] = v.dtype
            v = v.reshape(-1)[0].item() if isinstance(v, np.ndarray) else v.item()
        self.vals[name] = v
        return v

    def set(self, name: str, v, dtype: np.dtype) -> None:
        self.vals[name] = v
        self.dtypes[name] = dtype

    # --- the general path for one instruction ------------------------------------------------

    def general(self, inst) -> None:
        """Run `inst` with the executor's handler on the current values (reports undefined
        behaviour exactly as the general path does), then take its results back."""
        tmp = type(self.env)(self.env)  # a child scope of the loop's environment
        for name, v in self.vals.items():
            dt = self.dtypes.get(name)
            tmp.set(name, np.array(v, dt) if dt is not None else v)
        with self.ex.collector().checks() as col:
            if isinstance(inst, ir.For):  # not back into the fast path
                self.ex.for_general(inst, tmp, self.lanes)
            else:
                self.ex.dispatch(inst, tmp, self.lanes, col)
        for r in ir.results_of(inst):
            v = tmp.vars[r.name]
            if isinstance(v, (np.ndarray, np.generic)) and v.size == 1:
                self.set(r.name, v.reshape(-1)[0].item(), v.dtype)
            else:
                self.vals[r.name] = v
                self.dtypes.pop(r.name, None)

    # --- regions --------------------------------------------------------------------------

    def _compiled(self, region: ir.Region) -> list:
        code = self.code.get(id(region))
        if code is None:
            code = []
            for inst in region.instructions:
                if isinstance(inst, ir.Yield):
                    gets = [self.getter(v, t) for v, t in zip(inst.values, inst.types)]
                    code.append((inst, gets))
                    break
                make = self.compilers.get(type(inst))
                code.append((inst, make(inst) if make else lambda: False))
            self.code[id(region)] = code
        return code

    def region(self, region: ir.Region) -> Optional[list]:
        code = self._compiled(region)
        ex = self.ex
        n = len(code) - (1 if code and isinstance(code[-1][0], ir.Yield) else 0)
        per_step = ex.max_steps is not None and ex.steps + n > ex.max_steps
        if not per_step:
            ex.steps += n  # the whole region fits in the budget: count it at once
        for inst, run in code:
            if type(inst) is ir.Yield:
                return [g() for g in run]
            if per_step:
                ex.steps += 1
                if ex.steps > ex.max_steps:
                    ex.step_budget_exceeded(inst)
            if not run():
                self.general(inst)
        return None

    def run_for(self, inst: ir.For) -> None:
        t = inst.type
        dt = t.dtype
        i = self.getter(inst.start, t)()
        stop = self.getter(inst.stop, t)()
        step = 1 if inst.step is None else self.getter(inst.step, t)()
        if i < stop and step <= 0:
            self.general(inst)  # the executor reports the endless loop
            return
        lo, hi = _range(t)
        var = inst.var.name
        vals = self.vals
        self.dtypes[var] = dt
        body = inst.body
        while i < stop:
            vals[var] = i
            self.region(body)
            nxt = i + step
            if not lo <= nxt <= hi:  # the increment wraps: the executor's rule and report
                r, faults = scalar.binary("add", t, np.array(i, dt), np.array(step, dt))
                if self.check:
                    with self.ex.collector().checks() as c:
                        self.ex.faults([(k, m, "the loop variable's increment: " + w)
                                        for k, m, w in faults], self.lanes, c, inst.span)
                nxt = r.item()
            i = nxt

    # --- compilers: instruction -> closure (True when done, False: the executor runs it) ---

    def _arith(self, inst: ir.Arith):
        t = inst.type
        f, ga, gb = binary_fn(inst.op, t), self.getter(inst.lhs, t), self.getter(inst.rhs, t)
        vals, dtypes, name, dt = self.vals, self.dtypes, inst.result.name, t.dtype

        def run():
            r = f(ga(), gb())
            if r is _BAIL:
                return False
            vals[name] = r
            dtypes[name] = dt
            return True
        return run

    def _simple(self, name: str, dt, compute):
        vals, dtypes = self.vals, self.dtypes

        def run():
            r = compute()
            if r is _BAIL:
                return False
            vals[name] = r
            dtypes[name] = dt
            return True
        return run

    def _unary(self, inst: ir.ArithUnary):
        t, op, g = inst.type, inst.op, self.getter(inst.operand, inst.type)
        return self._simple(inst.result.name, t.dtype, lambda: unary(op, t, g()))

    def _cast(self, inst: ir.Cast):
        src, dst, g = inst.from_type, inst.to_type, self.getter(inst.operand, inst.from_type)
        return self._simple(inst.result.name, dst.dtype, lambda: cast(src, dst, g()))

    def _compare(self, inst: ir.Compare):
        f, t = COMPARE[inst.cond], inst.type
        ga, gb = self.getter(inst.lhs, t), self.getter(inst.rhs, t)
        return self._simple(inst.result.name, np.dtype(bool), lambda: bool(f(ga(), gb())))

    def _group_id(self, inst):
        g = int(self.lanes.gid[0])
        return self._simple(inst.result.name, INDEX.dtype, lambda: g)

    def _group_size(self, inst):
        n = self.ex.n_groups
        return self._simple(inst.result.name, INDEX.dtype, lambda: n)

    def _address(self, view, gets) -> Optional[int]:
        """The element's address when the access is certainly defined, else None."""
        if not isinstance(view, mem.View) or not view.inside:
            return None  # a group, or a view that may leave its root: the general checks
        layout = getattr(view, "_fast_layout", None)
        if layout is None:
            layout = view._fast_layout = (_int1(view.off), tuple(_int1(s) for s in view.shape),
                                          tuple(_int1(s) for s in view.strides))
        addr, shape, strides = layout
        for g, n, st in zip(gets, shape, strides):
            i = g()
            if not 0 <= i < n:
                return None
            addr += i * st
        buf = view.buf
        if not 0 <= addr < len(buf.data):
            return None
        if self.check and isinstance(buf, mem.AllocaBuffer):
            if not buf.alive[_int1(view.root[0]) // buf.extent]:
                return None
        return addr

    def _load(self, inst: ir.Load):
        view = self._view_getter(inst.operand.name)
        gets = [self.getter(i, INDEX) for i in inst.indices]
        vals, dtypes, name, check = self.vals, self.dtypes, inst.result.name, self.check

        def run():
            src = view()
            addr = self._address(src, gets)
            if addr is None:
                return False
            buf = src.buf
            if check and isinstance(buf, mem.AllocaBuffer) and not buf.init[addr]:
                return False  # the executor reports the uninitialised read
            vals[name] = buf.data[addr].item()
            dtypes[name] = buf.data.dtype
            return True
        return run

    def _store(self, inst: ir.Store):
        view = self._view_getter(inst.operand.name)
        gets = [self.getter(i, INDEX) for i in inst.indices]
        value, check = self.getter(inst.value, inst.type.element), self.check

        def run():
            dst = view()
            addr = self._address(dst, gets)
            if addr is None:
                return False
            buf = dst.buf
            buf.data[addr] = value()
            if check and isinstance(buf, mem.AllocaBuffer):
                buf.init[addr] = True
            return True
        return run

    def _view_getter(self, name: str):
        """A function returning the named value: the loop's own, else one from before it."""
        vals, outer = self.vals, self._outer

        def get():
            try:
                return vals[name]
            except KeyError:
                return outer(name)
        return get

    def _if(self, inst: ir.If):
        cond = self.getter(inst.cond, ScalarType.i1)
        then, otherwise = inst.then, inst.otherwise
        results = [(r.name, t.dtype) for r, t in zip(inst.results, inst.result_types)]

        def run():
            region = then if cond() else otherwise
            if region is not None:
                out = self.region(region)
                for (name, dt), v in zip(results, out or []):
                    self.set(name, v, dt)
            return True
        return run

    def _for(self, inst: ir.For):
        if not eligible(inst, self.ex._fast_cache):
            return lambda: False

        def run():
            self.run_for(inst)
            return True
        return run
