"""The v0.4 kernel builder behind `fuzz.strategies.kernels(lang="v0.4")`.

The v0.3 builder (`fuzz.gen.function`) makes the program; `tlinterp.front.migrate.to_v04` gives its
v0.4 form (literals become `constant`, slices `offset:size`, allocas `local`, a cast of a bool
an `if` that yields), so everything the v0.3 generator covers is covered in v0.4 too, under
v0.4's rules (no casts to bool, mixed-precision promotion, `.atomic` only with beta 0 or 1).
`V04Generator` then draws, beyond it, what only v0.4 spells (`v04_weights`), with the same
by-construction rules (value ranges, own slices per work-group, sinks nobody reads):

- a 3-D grid: the work-group's index is group_id.x + num_groups.x * (group_id.y +
  num_groups.y * group_id.z), and the case's `groups` is the (x, y, z) tuple;
- f16, bf16, c32 and c64 values ("lowp"): casts from the v0.3 types and between the new ones,
  constants, loads from inputs of their own, add/sub/mul/div (complex: by a constant with
  both parts nonzero)/neg, min/max, abs, conj/re/im, each
  observed exactly (witness outputs of the type itself; only in functions whose float outputs
  are compared exactly, i.e. without float collectives, see fuzz.oracle.compare);
- special f16/bf16 values (NaN, ±inf, ±0, subnormals, full significands) from an input of
  their own, one operation each (min/max meeting NaN, subnormal or inexact results: one
  correctly rounded IEEE operation, compared exactly), `lowp_special_percent` of the
  functions ending with some;
- math functions (cos ... native_log2) and complex abs, whose results an implementation may
  round differently (docs/semantics.md): observed only through a comparison with a constant
  outside the result's range plus a wide margin, so every correct implementation agrees;
- integer abs; `wrapping_cast_percent` of the functions end with a narrowing integer cast of
  a value just below or above the narrower type's maximum (wrapping);
- `for ... init(...) -> (...)` loops whose carried values stay in a range fixed up front
  (integers clamped into it before the yield), bools carried too;
- `foreach (%i, %j) = (..), (..)` writing one element of a matrix view per point;
- `cumsum` on integer data (exact in any order of summation) into the work-group's slice;
- `atomic_add|max|min` on an integer counter argument only atomics touch, one operation per
  counter (so the order of the updates cannot change the result; their returned old values
  are not used),
  `atomic_store` of a foreach iteration's own element, `atomic_load` of inputs;
- attributes that are true of the arguments passed: `alignment` (the element size),
  `shape_gcd`, `stride_gcd`; `unroll` on for loops; the function's `subgroup_size`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

import ml_dtypes
import numpy as np

from fuzz.gen.core import exact_dim
from fuzz.gen.function import FunctionGenerator
from fuzz.gen.model import Scal, Unavailable
from fuzz.gen.params import GenParams
from fuzz.gen.ranges import UNKNOWN_F, FRange, IRange, type_range
from fuzz.profiles import BF16_CONVERSIONS, NARROW_ATOMIC_TYPES, NARROW_ATOMIC_UPDATE_TYPES
from fuzz.profiles.check import exact_in
from tlinterp.checker.v04 import promotable, promote
from tlinterp.lang import ir
from tlinterp.lang.ir import Const, Value
from tlinterp.lang.types import INDEX, MemrefType, ScalarType

_UNSIGNED = frozenset({ScalarType.u8, ScalarType.u16, ScalarType.u32, ScalarType.u64})
# v0.4 has no unsigned types; the new types come on top of the v0.3 ones
V04_MEMREF_TYPES = tuple(t for t in GenParams().memref_types if t not in _UNSIGNED)
V04_SCALAR_TYPES = tuple(t for t in GenParams().scalar_types if t not in _UNSIGNED)
LOWP = (ScalarType.f16, ScalarType.bf16, ScalarType.c32, ScalarType.c64)
_REAL = (ScalarType.f32, ScalarType.f64)
MATH = ("cos", "sin", "exp", "exp2", "log", "log2", "native_cos", "native_sin", "native_exp",
        "native_exp2", "native_log", "native_log2")
# largest magnitude of a lowp value before it is treated as possibly infinite (f16's max is
# 65504) and the relative rounding error of one operation (bf16: 8 significant bits)
_LOWP_LIMIT = {ScalarType.f16: 6e4, ScalarType.bf16: 1e30, ScalarType.c32: 1e30,
               ScalarType.c64: 1e30}
_LOWP_EPS = {ScalarType.f16: 2.0 ** -10, ScalarType.bf16: 2.0 ** -7,
             ScalarType.c32: 2.0 ** -22, ScalarType.c64: 2.0 ** -51}
# margin between a math result's range and the constant it is compared with: relative, and
# absolute (native_* may be off by 2^-11, relative or absolute, docs/semantics.md)
_MATH_MARGIN = 0.05
ATOMIC_OPS = ("add", "max", "min")


def v04_params() -> GenParams:
    """The defaults of a v0.4 generator: no unsigned types, no `lifetime_stop` (v0.4 frees
    an alloca at the end of its region), the v0.4 statements."""
    base = GenParams()
    return dataclasses.replace(base, memref_types=V04_MEMREF_TYPES,
                               scalar_types=V04_SCALAR_TYPES, lifetime_stop_percent=0,
                               statement_weights={**base.statement_weights, "v04": 5})


def exact_literal(c: Const, t: ScalarType) -> Const:
    """The float literal `c` of type `t` spelt as the value of `t` it stands for (its nearest),
    so that a compiler that folds the literal itself into a cast gets that value too (the
    profile feature inexact-constant-casts); other literals as they are."""
    if not (t.is_float or t.is_complex) or isinstance(c.value, bool) or exact_in(c.value, t):
        return c
    with np.errstate(over="ignore"):
        v = np.asarray(c.value).astype(t.dtype)
    value = complex(v) if t.is_complex else float(v)
    if not np.isfinite(value):  # past the type's range: no nearer spelling
        return c
    return dataclasses.replace(c, value=value, is_float=True)


def _nonzero(r) -> bool:
    """Whether a value of range r cannot be zero (an unknown range may be)."""
    return r.known and (r.lo > 0 or r.hi < 0)


def _widen(r: FRange, eps: float, limit: float) -> FRange:
    if not r.known or r.mag * (1 + eps) > limit:
        return UNKNOWN_F
    slack = eps * r.mag + 1e-30
    return FRange(r.lo - slack, r.hi + slack)


class V04Generator(FunctionGenerator):
    """The v0.3 builder with v0.4's rules and constructs (see the module text)."""

    SPMD_STATEMENTS = FunctionGenerator.SPMD_STATEMENTS + ("v04",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.grid: Optional[tuple[int, int, int]] = None
        self.lowp_inputs: dict[ScalarType, Scal] = {}  # type -> a view of its input
        # type -> its special-values input and the index range of each part
        self.special_inputs: dict[ScalarType, tuple[Scal, dict]] = {}
        self.counter: Optional[tuple[Value, MemrefType, int]] = None  # atomics' own argument
        self.counter_op = "add"  # the one atomic operation on the counter (atomic_counter)
        self.loops: list[ir.For] = []

    # --- grid -----------------------------------------------------------------------------

    def gen_output(self, elem: Optional[ScalarType] = None, readable: Optional[bool] = None
                   ) -> None:
        """An output slice; the first one of a function is sometimes a readable one of the
        type of an integer input, which `cumsum` needs (integers: exact in any order of
        summation, A and B of one type) and a function would otherwise seldom have (floats
        are the main type half of the time, integer outputs are readable 60 % of the
        time)."""
        ints = [b.elem for b in self.bufs if b.kind == "input" and b.elem.is_int]
        if elem is None and ints and self.p.v04_weights.get("cumsum") \
                and not any(b.kind == "own" for b in self.bufs) and self.flip(50):
            elem, readable = self.pick(ints), True  # an input of its type for cumsum's A
        super().gen_output(elem, readable)

    def gen_grid(self) -> None:
        if not self.flip(self.p.grid_percent):
            return super().gen_grid()
        x = self.int(1, max(1, self.p.max_groups // 2))
        y, z = self.int(1, 2), self.int(1, 2)
        self.grid = (x, y, z)
        self.groups = x * y * z
        self.stats["grid"] += 1

    def gen_group_index(self) -> None:
        if self.grid is None:
            return super().gen_group_index()
        x, y, z = self.grid
        ids = []
        for comp, n in zip("xyz", self.grid):
            r = self.fresh("g" + comp)
            self.emit(ir.GroupId(r) if comp == "x" else ir.Builtin(r, "group_id", comp, INDEX))
            ids.append(Scal(r, INDEX, IRange(0, n - 1)))
        counts = []
        for comp, n in zip("xy", self.grid):
            r = self.fresh("n" + comp)
            self.emit(ir.GroupSize(r) if comp == "x"
                      else ir.Builtin(r, "num_groups", comp, INDEX))
            counts.append(Scal(r, INDEX, IRange(n, n)))
        inner = self.binary("add", ids[1], self.binary("mul", counts[1], ids[2]))
        lin = self.binary("add", ids[0], self.binary("mul", counts[0], inner))
        self.gid = Scal(lin.op, INDEX, IRange(0, self.groups - 1))
        self.after_gid = len(self.scopes[0].insts)

    def group_count(self) -> Scal:
        if self.grid is None:
            return super().group_count()
        total = None
        for comp, n in zip("xyz", self.grid):
            r = self.fresh()
            self.emit(ir.GroupSize(r) if comp == "x"
                      else ir.Builtin(r, "num_groups", comp, INDEX))
            s = Scal(r, INDEX, IRange(n, n))
            total = s if total is None else self.binary("mul", total, s)
        return Scal(total.op, INDEX, IRange(self.groups, self.groups))

    def finish(self, fn: ir.Function):
        fn = self.attributes(fn)
        return fn, self.npz, self.grid if self.grid is not None else self.groups

    # --- v0.4's rules on what the v0.3 builder makes -------------------------------------------

    def cast(self, a: Scal, to: ScalarType) -> Scal:
        if to.is_bool and not a.type.is_bool:
            raise Unavailable("v0.4's bool is no cast result")  # compares make bools
        a = self.exact_operand(a)
        if a.type in LOWP or to in LOWP:
            return self.lowp_cast(a, to)
        if {a.type, to} == {INDEX, ScalarType.i64} and self.excludes("index-i64-casts"):
            # through i32 (the same value where it fits: index and i64 witnesses, loop
            # bounds and sizes are small), else not at all
            if not a.rng.within(type_range(ScalarType.i32)):
                raise Unavailable("an index/i64 cast the profile leaves out")
            return super().cast(super().cast(a, ScalarType.i32), to)
        return super().cast(a, to)

    def exact_operand(self, a: Scal) -> Scal:
        """`a` to be cast: a literal spelt as its exact value where the profile leaves out
        casts of inexact constants (exact_literal)."""
        if isinstance(a.op, Const) and self.excludes("inexact-constant-casts"):
            return dataclasses.replace(a, op=exact_literal(a.op, a.type))
        return a

    def emit(self, inst) -> None:
        if self.excludes("bf16-constants"):
            inst = self.without_bf16_literals(inst)
        super().emit(inst)

    def without_bf16_literals(self, inst):
        """The instruction with each literal operand of type bf16 (a `constant` in v0.4)
        replaced by an f32 literal cast to bf16 just before: the same value (the literals
        drawn are exact in f32), for targets that take no bf16 constant."""
        def value(op: ir.Operand, t) -> ir.Operand:
            if not (isinstance(op, Const) and t is ScalarType.bf16):
                return op
            r, f32 = self.fresh(), Const(float(op.value), True)
            if self.excludes("inexact-constant-casts"):
                f32 = exact_literal(f32, ScalarType.f32)
            super(V04Generator, self).emit(ir.Cast(r, f32, ScalarType.f32, t))
            return r

        rep = dataclasses.replace
        if isinstance(inst, (ir.Arith, ir.Compare)):
            return rep(inst, lhs=value(inst.lhs, inst.type), rhs=value(inst.rhs, inst.type))
        if isinstance(inst, ir.ArithUnary):
            return rep(inst, operand=value(inst.operand, inst.type))
        if isinstance(inst, ir.Cast):
            return rep(inst, operand=value(inst.operand, inst.from_type))
        if isinstance(inst, ir.Store) and isinstance(inst.type, MemrefType):
            return rep(inst, value=value(inst.value, inst.type.element))
        if isinstance(inst, ir.Yield):
            return rep(inst, values=tuple(value(x, t) for x, t in zip(inst.values, inst.types)))
        if isinstance(inst, ir.For):
            return rep(inst, inits=tuple((c, value(i, t)) for (c, i), t in
                                         zip(inst.inits, inst.result_types)))
        return inst

    def collective_inst(self, kind, atomic, ta, tb, alpha, a, b, beta, c):
        """v0.4's mixed precision (alpha <= promote(A, B) <= C, beta <= C): a literal alpha
        or beta takes the type it must have, other mixes are drawn again; `.atomic` only
        with a literal beta of 0 or 1 (else the update is plain: the slice is the work-group's
        own)."""
        ins = [a.type.element] + ([] if b is None else [b.type.element])
        comp = ins[0] if len(ins) == 1 else promote(ins[0], ins[1])
        out = c.type.element
        if comp is None or not promotable(comp, out):
            raise Unavailable("operands that do not promote to the output")
        if not promotable(alpha.type, comp):
            if not isinstance(alpha.op, Const):
                raise Unavailable("alpha does not promote")
            alpha = dataclasses.replace(alpha, type=comp)
        if not promotable(beta.type, out):
            if not isinstance(beta.op, Const):
                raise Unavailable("beta does not promote")
            beta = dataclasses.replace(beta, type=out)
        beta_one = isinstance(beta.op, Const) and beta.op.value == 1
        beta_bad = not (isinstance(beta.op, Const) and beta.op.value in (0, 1)) or (
            kind == "gemm" and beta_one and self.excludes("gemm-atomic-beta-one"))
        if atomic and c.buf.kind != "atomic" and beta_bad and not out.is_complex \
                and not self.narrow_atomic(out, update=True):
            # the work-group's own slice: beta 0 keeps the update atomic (else gemm.atomic,
            # whose beta 1 a target may refuse, is rarely drawn); the output's value bound
            # only shrinks (integer outputs were accounted with this beta or a larger one)
            beta = self.const(out, 0)
            beta_bad = False
        if atomic and (beta_bad or self.narrow_atomic(out, update=True)):
            if c.buf.kind == "atomic":
                raise Unavailable("a shared sink needs beta 1 and an atomic type")
            atomic = False
        return super().collective_inst(kind, atomic, ta, tb, alpha, a, b, beta, c)

    def binary(self, op: str, a: Scal, b: Scal) -> Scal:
        if op == "rem" and a.type.is_float and self.excludes("nan-constants") and not (
                b.rng.known and (b.rng.lo > 0 or b.rng.hi < 0)):
            # the target folds a constant rem by zero into a NaN constant, which it cannot
            # take: only divisors that cannot be zero
            raise Unavailable("a float rem by what may be zero")
        if op == "div" and a.type.is_float and self.excludes("nan-constants") and not (
                _nonzero(a.rng) or _nonzero(b.rng)):
            # 0 / 0 of values that fold to constants is a NaN constant too (x / 0 is inf)
            raise Unavailable("a float div of what may both be zero")
        return super().binary(op, a, b)

    def narrow_atomic(self, t: ScalarType, update: bool = False) -> bool:
        """Whether the target takes no atomic (update) on elements of type t."""
        if not self.excludes("atomic-narrow-types"):
            return False
        return t in (NARROW_ATOMIC_UPDATE_TYPES if update else NARROW_ATOMIC_TYPES)

    # --- witnesses of the new types --------------------------------------------------------

    def witness_kind(self, t: ScalarType) -> str:
        return t.value if t in LOWP else super().witness_kind(t)

    def witness_type(self, kind: str) -> ScalarType:
        return ScalarType(kind) if kind in {t.value for t in LOWP} else super().witness_type(kind)

    def witness(self, v: Scal) -> None:
        if v.type in LOWP and (self.float_collectives or self.float_forbidden):
            return  # compared exactly only without float collectives
        super().witness(v)

    # --- statements -----------------------------------------------------------------------

    def statements(self) -> dict:
        return {**super().statements(), "v04": self.gen_v04}

    def gen_v04(self, depth: int) -> None:
        w = dict(self.p.v04_weights)
        if self.spmd:
            w = {k: x for k, x in w.items() if k in ("lowp", "math", "abs", "atomic")}
        else:
            w.pop("atomic", None)  # in a foreach: outside, every work-item would apply it
        if depth >= self.p.max_depth:
            w.pop("foreach_nd", None)
        kind = self.weighted(w)
        {"lowp": self.gen_lowp_statement, "math": self.gen_math, "abs": self.gen_abs,
         "foreach_nd": self.gen_foreach_nd, "cumsum": self.gen_cumsum,
         "atomic": self.gen_atomic}[kind](depth)
        self.stats["v04-" + kind] += 1

    # --- f16, bf16, c32, c64 --------------------------------------------------------------

    def exact_floats(self) -> bool:
        return not (self.float_collectives or self.float_forbidden)

    def gen_lowp_statement(self, depth: int) -> None:
        if not self.exact_floats():
            raise Unavailable("lowp values are compared exactly: no float collectives")
        if self.flip(40) and self.gen_lowp_specials():
            return
        t = self.pick([x for x in LOWP if x in self.p.lowp_types])
        v = self.gen_lowp(t, 2)
        self.witness(v)
        if t.is_complex and self.flip(50):  # its parts as real values, also into f64
            part = self.pick(["re", "im"])
            r = self.fresh()
            ct = ScalarType.f32 if t is ScalarType.c32 else ScalarType.f64
            self.emit(ir.ArithUnary(r, part, v.op, t))
            self.witness(self.add_scalar(Scal(r, ct, v.rng)))

    def gen_lowp(self, t: ScalarType, depth: int) -> Scal:
        """A value of a new type: a cast, constant or load, or an operation on such."""
        kinds = {"cast": 4, "const": 2, "load": 2, "value": 2}
        if depth > 0:
            kinds.update(binary=5, unary=2)
        k = self.weighted(kinds)
        if k == "value":
            vals = self.visible_scalars(t)
            if vals:
                return self.pick(vals)
            k = "const"
        if k == "const":
            if t.is_complex:
                re, im = self.pick([1.0, 0.5, -2.0, 0.0, -0.0]), self.pick([1.0, -0.25, 0.0, 3.0])
                return Scal(Const(complex(re, im), True), t, FRange(-2.0, 3.0))
            return self.const(t, self.pick([1.0, 0.5, -2.0, 0.0, 3.25, -0.125, -0.0, 1.75]))
        if k == "load":
            return self.lowp_load(t)
        if k == "cast":
            srcs = [x for x in (*_REAL, ScalarType.i32, ScalarType.i8, *LOWP)
                    if x is not t and x in (*self.p.scalar_types, *self.p.lowp_types)
                    and not (x.is_complex and not t.is_complex)]
            src = self.pick(srcs)
            a = self.gen_lowp(src, depth - 1) if src in LOWP else self.gen_scalar(src, 1)
            return self.lowp_cast(a, t)
        if k == "unary":
            a = self.gen_lowp(t, depth - 1)
            op = self.pick(["neg", "conj"] if t.is_complex else ["neg", "abs"])
            r = self.fresh()
            self.emit(ir.ArithUnary(r, op, a.op, t))
            rng = a.rng if not a.rng.known else FRange(-a.rng.mag, a.rng.mag)
            return self.add_scalar(Scal(r, t, rng))
        op = self.pick(["add", "sub", "mul", "div"] + ([] if t.is_complex else ["min", "max"]))
        a = self.gen_lowp(t, depth - 1)
        # a complex divisor: a constant with both parts nonzero (no 0 / 0 in any formula, and
        # both of Smith's branches are taken); the quotient is rounded the interpreter's way
        b = self.complex_divisor(t) if op == "div" and t.is_complex else \
            self.gen_lowp(t, depth - 1)
        if op == "div" and not t.is_complex and self.excludes("nan-constants") and not (
                _nonzero(a.rng) or _nonzero(b.rng)):
            op = "sub"  # 0 / 0 may fold into a NaN constant (see binary)
        r = self.fresh()
        self.emit(ir.Arith(r, op, a.op, b.op, t))
        if op == "div" or not (a.rng.known and b.rng.known):
            rng = UNKNOWN_F
        elif op in ("min", "max"):
            rng = FRange(min(a.rng.lo, b.rng.lo), max(a.rng.hi, b.rng.hi))
        else:
            m = a.rng.mag * b.rng.mag * (2 if t.is_complex else 1) if op == "mul" \
                else a.rng.mag + b.rng.mag
            rng = FRange(-m, m)
        self.stats["lowp-" + op] += 1
        return self.add_scalar(Scal(r, t, _widen(rng, _LOWP_EPS[t], _LOWP_LIMIT[t])))

    def complex_divisor(self, t: ScalarType) -> Scal:
        re, im = self.pick([(0.5, 3.0), (3.0, -0.25), (-2.0, 0.75), (1.5, 1.0), (-0.25, -7.0)])
        return Scal(Const(complex(re, im), True), t, FRange(-7.0, 3.0))

    def gen_block(self, depth: int, at_least: int = 0) -> None:
        super().gen_block(depth, at_least)
        if depth == 0 and not self.spmd and self.flip(self.p.wrapping_cast_percent):
            try:
                self.gen_wrapping_cast()
            except Unavailable:
                pass
        if depth == 0 and not self.spmd and self.exact_floats() and \
                self.flip(self.p.lowp_special_percent):
            # the function's body ends with special-value operations (also in small kernels,
            # which draw few statements: the first ones a campaign tries)
            try:
                self.gen_lowp_specials()
                self.gen_complex_product()
            except Unavailable:
                pass

    def gen_wrapping_cast(self) -> None:
        """A witnessed cast of an integer to a narrower integer type of a value near the
        narrower type's largest one, on either side of it: above it the cast wraps modulo
        2^bits, the language's rule (elsewhere the small data never leaves the narrower
        range, so a saturating or otherwise wrong narrowing shows nothing)."""
        ints = [t for t in self.scalar_types() if t.is_int and not t.is_bool and t is not INDEX]
        pairs = [(a, b) for a in ints for b in ints if b.bits < a.bits]
        if not pairs:
            return
        src, dst = self.pick(pairs)
        top = (1 << (dst.bits - 1)) - 1
        x = self.binary("add", self.gen_scalar(src, 1), self.const(src, top + self.int(-2, 3)))
        self.witness(self.cast(x, dst))
        self.stats["wrapping-cast"] += 1

    def gen_complex_product(self) -> None:
        """A witnessed complex mul or div of loaded values (both parts nonzero most of the
        time, so every cross term counts; a divisor: `complex_divisor`), where the complex
        types are generated: elsewhere complex values are mostly casts of real ones."""
        types = [x for x in LOWP if x in self.p.lowp_types and x.is_complex]
        if not types:
            return
        t = self.pick(types)
        op = self.pick(["mul", "div"])
        a = self.lowp_load(t)
        if len(types) > 1 and self.flip(40):  # a value of the other precision, cast
            a = self.lowp_cast(self.lowp_load(self.pick([x for x in types if x is not t])), t)
        b = self.lowp_load(t) if op == "mul" else self.complex_divisor(t)
        if op == "mul" and self.flip(40):  # a times conj(b): the inner product's term
            c = self.fresh()
            self.emit(ir.ArithUnary(c, "conj", b.op, t))
            b = Scal(c, t, b.rng)
        r = self.fresh()
        self.emit(ir.Arith(r, op, a.op, b.op, t))
        self.stats["lowp-complex-" + op] += 1
        self.witness(Scal(r, t, UNKNOWN_F))  # not visible: later statements want known ranges

    def gen_lowp_specials(self) -> bool:
        """1 or 2 witnessed `gen_lowp_special` operations of each of f16 and bf16 (False:
        neither type is generated)."""
        real = [x for x in LOWP if x in self.p.lowp_types and not x.is_complex]
        for t in real:
            for _ in range(self.int(1, 2)):
                self.witness(self.gen_lowp_special(t))
        return bool(real)

    def gen_lowp_special(self, t: ScalarType) -> Scal:
        """One operation of f16 or bf16 on the special-values input (`lowp_special_data`):
        min/max with NaN, ±inf or ±0 as an operand; add/sub/mul of two tiny f16 values
        (a subnormal result) or of two full significands (a result not representable,
        rounded once). IEEE operations are correctly rounded, so every correct
        implementation gives the same bits and the result is still compared exactly. The
        value model knows nothing of it (UNKNOWN_F): nothing later needs a finite range."""
        op = self.pick(["mul", "min", "add", "max", "sub"])  # Hypothesis favours the first
        if op in ("min", "max"):
            a = self.lowp_special_load(t, "special")
            b = self.lowp_special_load(t, None) if self.flip(50) else self.gen_lowp(t, 1)
        else:
            part = "tiny" if t is ScalarType.f16 and self.flip(50) else "full"
            a, b = self.lowp_special_load(t, part), self.lowp_special_load(t, part)
        if self.flip(50):
            a, b = b, a
        r = self.fresh()
        self.emit(ir.Arith(r, op, a.op, b.op, t))
        self.stats["lowp-special-" + op] += 1
        # not made visible to later statements: they draw values with known ranges
        return Scal(r, t, UNKNOWN_F)

    def lowp_special_load(self, t: ScalarType, part: Optional[str]) -> Scal:
        """A load from the special-values input of type t (`%s<t>`, made on first use): of
        an element of `part` ("special", "tiny", "full"; a constant index), or of any element
        (None; 25 % of the time also for a part)."""
        if t not in self.special_inputs:
            name = f"s{t.value}"
            data, parts = self.lowp_special_data(t)
            n = len(data)
            mt = MemrefType.make(t, (None if self.flip(30) else n,))
            self.arguments.append(ir.Argument(Value(name), mt))
            self.npz[name] = data
            self.special_inputs[t] = (Scal(Value(name), mt, IRange(n, n)), parts)
        arg, parts = self.special_inputs[t]
        if part is None or self.flip(25):
            idx = self.index_in(arg.rng.lo)
        else:
            idx = self.index_const(self.int(*parts[part]))
        r = self.fresh()
        self.emit(ir.Load(r, arg.op, (idx.op,), arg.type))
        return Scal(r, t, UNKNOWN_F)

    def lowp_special_data(self, t: ScalarType) -> tuple[np.ndarray, dict]:
        """The special-values input and the index range of each part: NaN, ±inf, ±0
        ("special"); for f16 subnormals and small powers of two whose sums and products are
        subnormal ("tiny"); random full significands (8 bits in bf16, 11 in f16), whose sums
        and products are rarely representable ("full")."""
        r = self.data_rng
        dt = ml_dtypes.bfloat16 if t is ScalarType.bf16 else np.float16
        special = [np.nan, np.nan, np.inf, -np.inf, -0.0, 0.0]
        # sums of the subnormals and products of the small ones are subnormal and not zero
        tiny = [2.0 ** -20, -3 * 2.0 ** -22, 2.0 ** -16, 3 * 2.0 ** -9, -2.0 ** -7,
                5 * 2.0 ** -10] if t is ScalarType.f16 else []
        n = self.int(4, 8)
        full = r.uniform(0.5, 4.0, n) * r.choice([-1.0, 1.0], n)
        parts = {"special": (0, len(special) - 1), "full": (len(special) + len(tiny),
                                                           len(special) + len(tiny) + n - 1)}
        if tiny:
            parts["tiny"] = (len(special), len(special) + len(tiny) - 1)
        out = np.concatenate([np.array(special + tiny), full])
        return out.astype(np.float32).astype(dt), parts

    def lowp_cast(self, a: Scal, to: ScalarType) -> Scal:
        """A cast from or to a new type (never complex to real: v0.4 has none). Ranges: the
        source's, widened by the target's rounding; to integers only with margins that hold
        after the source's own rounding."""
        a = self.exact_operand(a)
        if (a.type, to) in BF16_CONVERSIONS and self.excludes("bf16-conversions"):
            raise Unavailable("a bf16 conversion the profile leaves out")
        if a.type.is_complex and not to.is_complex:
            raise Unavailable("no cast from complex to real")
        if a.type is to:
            return a
        r = a.rng
        if to.is_int:
            if not (isinstance(r, FRange) and r.known):
                raise Unavailable("a cast to an integer needs a finite range")
            eps = _LOWP_EPS.get(a.type, 0.0)
            lo, hi = math.trunc(r.lo - eps * r.mag) - 1, math.trunc(r.hi + eps * r.mag) + 1
            full = type_range(to)
            if lo <= full.lo or hi >= full.hi:
                raise Unavailable("cast out of range")
            rng = IRange(lo, hi)
        else:
            if isinstance(r, IRange):
                r = FRange(float(r.lo), float(r.hi))
            eps = _LOWP_EPS.get(to, 2.0 ** -22)
            rng = _widen(r, eps, _LOWP_LIMIT.get(to, 1e30))
        v = self.fresh()
        self.emit(ir.Cast(v, a.op, a.type, to))
        self.stats["lowp-cast"] += 1
        return self.add_scalar(Scal(v, to, rng))

    def lowp_load(self, t: ScalarType) -> Scal:
        """A load from the input of type t (an argument of its own, made on first use)."""
        if t not in self.lowp_inputs:
            n = self.int(1, self.p.max_size)
            mt = MemrefType.make(t, (None if self.flip(30) else n,))
            v = Value(f"l{t.value}")
            self.arguments.append(ir.Argument(v, mt))
            self.npz[v.name] = self.lowp_data(t, n)
            self.lowp_inputs[t] = Scal(v, mt, IRange(n, n))
        arg = self.lowp_inputs[t]
        idx = self.index_in(arg.rng.lo)
        r = self.fresh()
        if self.flip(20) and not self.narrow_atomic(t):
            self.emit(ir.AtomicLoad(r, arg.op, (idx.op,), t))
            self.stats["atomic_load"] += 1
        else:
            self.emit(ir.Load(r, arg.op, (idx.op,), arg.type))
        m = self.p.float_data_max
        return self.add_scalar(Scal(r, t, FRange(-m, m)))

    def lowp_data(self, t: ScalarType, n: int) -> np.ndarray:
        r = self.data_rng
        m = self.p.float_data_max
        parts = [np.round(r.uniform(-m, m, n) * 8) / 8 for _ in range(2 if t.is_complex else 1)]
        if t.is_complex:
            return (parts[0] + 1j * parts[1]).astype(t.dtype)
        return parts[0].astype(ml_dtypes.bfloat16 if t is ScalarType.bf16 else t.dtype)

    # --- math, abs ------------------------------------------------------------------------

    def gen_math(self, depth: int) -> None:
        """A math function of a real value with a known finite range, observed through a
        comparison with a constant outside the result's range (see the module text)."""
        types = [t for t in (*_REAL, ScalarType.f16, ScalarType.bf16)
                 if t in (*self.p.scalar_types, *self.p.lowp_types)]
        if self.linear_float() or not types:
            raise Unavailable("float values meet only linear operations here")
        t = self.pick(types)
        x = self.gen_lowp(t, 1) if t in LOWP else self.gen_scalar(t, 1)
        if not (isinstance(x.rng, FRange) and x.rng.known) or x.rng.mag > 1e4:
            raise Unavailable("math needs a known finite argument")
        op = self.pick(MATH)
        base = op.removeprefix("native_")
        lo, hi = x.rng.lo, x.rng.hi
        if base in ("cos", "sin"):
            out = (-1.0, 1.0)
        elif base in ("exp", "exp2"):
            f = math.exp if base == "exp" else (lambda y: 2.0 ** y)
            if hi > 10:
                raise Unavailable("exp of a large argument")
            out = (0.0, f(hi))
        else:
            if lo <= 1e-3:  # log(max(x, c)), as programs keep a log's argument positive
                c = self.const(t, self.pick([0.5, 1.0, 2.0]))
                m = self.fresh()
                self.emit(ir.Arith(m, "max", x.op, c.op, t))
                lo, hi = max(lo, c.rng.lo), max(hi, c.rng.lo)
                x = Scal(m, t, FRange(lo, hi))
            f = math.log if base == "log" else math.log2
            out = (f(lo), f(hi))
        r = self.fresh()
        self.emit(ir.ArithUnary(r, op, x.op, t))
        self.stats["math-" + op] += 1
        self.observe_far(Scal(r, t, FRange(*out)))

    def observe_far(self, v: Scal) -> None:
        """A bool that is the same for every correct implementation: v compared with a
        constant beyond its range by a wide margin, witnessed."""
        lo, hi = v.rng.lo, v.rng.hi
        margin = _MATH_MARGIN * max(1.0, abs(lo), abs(hi))
        above = self.flip(50)
        bound = hi + margin if above else lo - margin
        bound = float(np.float16(bound)) if abs(bound) < 6e4 else bound  # exact in every type
        cond = self.pick(["lt", "le", "ne"] if above else ["gt", "ge", "ne"])
        r = self.fresh()
        self.emit(ir.Compare(r, cond, v.op, Const(bound, True), v.type))
        self.witness(self.add_scalar(Scal(r, ScalarType.i1, IRange(0, 1))))

    def gen_abs(self, depth: int) -> None:
        """abs of an integer (never of the type's minimum), of a real value, or of a
        complex one (hypot: observed like a math function)."""
        k = self.pick(["int", "real", "complex"])
        if k == "int":
            t = self.pick([x for x in self.scalar_types() if x.is_int and not x.is_bool])
            a = self.gen_scalar(t, 1)
            if a.rng.lo == type_range(t).lo:
                a = self.guard_not_min(a)
            r = self.fresh()
            self.emit(ir.ArithUnary(r, "abs", a.op, t))
            self.witness(self.add_scalar(Scal(r, t, IRange(0, a.rng.mag))))
        elif k == "real":
            if not self.exact_floats():
                raise Unavailable("float results compared exactly only without collectives")
            t = self.pick([x for x in self.scalar_types() if x.is_float])
            a = self.gen_scalar(t, 1)
            r = self.fresh()
            self.emit(ir.ArithUnary(r, "abs", a.op, t))
            rng = FRange(0.0, a.rng.mag) if a.rng.known else UNKNOWN_F
            self.witness(self.add_scalar(Scal(r, t, rng)))
        else:
            if not self.exact_floats():
                raise Unavailable("no lowp values with float collectives")
            t = self.pick([x for x in LOWP if x.is_complex and x in self.p.lowp_types])
            a = self.gen_lowp(t, 1)
            if not a.rng.known:
                raise Unavailable("abs of an unbounded complex value")
            r = self.fresh()
            ct = ScalarType.f32 if t is ScalarType.c32 else ScalarType.f64
            self.emit(ir.ArithUnary(r, "abs", a.op, t))
            self.observe_far(Scal(r, ct, FRange(0.0, a.rng.mag * 1.5)))
        self.stats["abs-" + k] += 1

    # --- loops that yield -----------------------------------------------------------------

    def loop_carried(self) -> list:
        if not self.flip(self.p.loop_carried_percent):
            return []
        out = []
        for _ in range(self.int(1, 2)):
            ts = [t for t in self.scalar_types() if not (t.is_float and self.linear_float())]
            t = self.pick(ts)
            init = self.gen_scalar(t, 1)
            if t.is_bool:
                rng = IRange(0, 1)
            elif t.is_float:
                rng = UNKNOWN_F  # no UB in float arithmetic; casts to integers avoid it
            else:
                cap = max(init.rng.mag, 100)
                if cap >= type_range(t).hi // 4:
                    continue  # room for the body's arithmetic: drawn only when it has some
                rng = IRange(-cap, cap)
            out.append((self.fresh(), self.fresh("c"), init, rng))
        if out:
            self.stats["loop-carried"] += 1
        return out

    def yield_carried(self, carried: list) -> None:
        if not carried:
            return
        vals = []
        for _, c, init, rng in carried:
            t = init.type
            cur = Scal(c, t, rng)
            if t.is_bool:
                v = self.gen_scalar(t, 1)
                v = self.binary(self.pick(["xor", "and", "or"]), cur, v)
            elif t.is_float:
                v = self.binary(self.pick(["add", "sub", "mul"]), cur, self.gen_scalar(t, 1))
            else:
                try:
                    v = self.binary(self.pick(["add", "sub", "xor"]), cur, self.gen_scalar(t, 1))
                except Unavailable:
                    v = cur
                v = self.clamp(v, rng.hi)
            vals.append(v.op)
        self.emit(ir.Yield(tuple(vals), tuple(i.type for _, _, i, _ in carried)))

    def for_inst(self, var, start, stop, step, t, body, carried: list) -> ir.For:
        attrs = {}
        if self.flip(self.p.unroll_percent):
            attrs["unroll"] = self.pick([True, False, 2, 4])
            self.stats["unroll"] += 1
        return ir.For(var, start, stop, step, t, body,
                      results=tuple(r for r, _, _, _ in carried),
                      inits=tuple((c, i.op) for _, c, i, _ in carried),
                      result_types=tuple(i.type for _, _, i, _ in carried), attributes=attrs)

    def after_loop(self, carried: list) -> None:
        for r, _, init, rng in carried:
            both = rng.union(init.rng)  # the inits, for a loop that runs no iteration
            s = self.add_scalar(Scal(r, init.type, both))
            self.witness(s)

    # --- foreach (%i, %j), cumsum, atomics --------------------------------------------------

    def gen_foreach_nd(self, depth: int) -> None:
        """Every point (i, j) of a box writes element (i, j) of a matrix view, once."""
        w = self.pick([v for v in self.writable_views() if v.type.order >= 2
                       and all(lo >= 1 for lo, _ in v.dims)])
        w = self.derive_view(w, 2)
        starts, stops = [], []
        for lo, _ in w.dims:
            starts.append(self.int(0, lo - 1))
            stops.append(lo)
        var_i, var_j = self.fresh("i"), self.fresh("j")
        saved = (self.spmd, self.foreach_buf, self.foreach_target)
        self.push()
        try:
            self.spmd, self.foreach_buf, self.foreach_target = True, w.buf, None
            i = self.add_scalar(Scal(var_i, INDEX, IRange(starts[0], stops[0] - 1)))
            j = self.add_scalar(Scal(var_j, INDEX, IRange(starts[1], stops[1] - 1)))
            self.gen_block(depth + 1)
            val = self.store_value(w.buf)
            self.emit(ir.Store(val.op, w.value, (i.op, j.op), w.type))
        finally:
            body = self.pop()
            self.spmd, self.foreach_buf, self.foreach_target = saved
        self.emit(ir.ForeachNd((var_i, var_j), tuple(Const(s) for s in starts),
                               tuple(Const(s) for s in stops), INDEX, body))
        self.last_parallel = w

    def gen_cumsum(self, depth: int) -> None:
        """B := alpha * cumsum(A, mode) + beta * B on integers into the work-group's own
        slice: exact whatever the order of summation."""
        roots = [v for v in self.output_roots() if v.buf.kind == "own"
                 and v.type.element.is_int and v.buf.readable]
        # A is an input of B's element type: outputs of such a type first
        inputs = {b.elem for b in self.bufs if b.kind == "input"}
        roots = [v for v in roots if v.type.element in inputs] or roots
        c = self.derive_view(self.pick(roots), self.int(1, 2))
        if any(lo < 1 for lo, _ in c.dims):
            raise Unavailable("empty output")
        dims = [exact_dim(self, c, m) for m in range(c.type.order)]
        elem = c.type.element
        a = self.input_view(elem, dims, c.buf)
        if a.type.shape != c.type.shape:  # v0.4 wants the written shapes equal
            raise Unavailable("A and B of different written shapes")
        mode = self.int(0, c.type.order - 1)
        k = max(hi for _, hi in [c.dims[mode]])
        alpha = self.const(elem, self.pick([1, -1, 2]))
        beta = self.const(elem, 0)
        if alpha.rng.mag * k * a.buf.cap > c.buf.cap:
            raise Unavailable("the prefix sums could exceed the output's cap")
        self.emit(ir.Cumsum(False, alpha.op, a.value, mode, beta.op, c.value))
        self.last_parallel = c

    def gen_atomic(self, depth: int) -> None:
        """In a foreach: an atomic update of the counter, or an atomic_store of the
        iteration's own element."""
        if self.foreach_target is not None and self.flip(30) and \
                not self.narrow_atomic(self.foreach_target[0].type.element):
            w, d, ivar = self.foreach_target
            idx = [self.index_in(lo).op if m != d else ivar.op for m, (lo, _) in enumerate(w.dims)]
            val = self.store_value(w.buf)
            self.emit(ir.AtomicStore(val.op, w.value, tuple(idx)))
            self.stats["atomic_store"] += 1
            return
        v, mt, n = self.atomic_counter()
        # one operation per counter: add and max (or min) do not commute, so updates of
        # both kinds would make the result depend on the order the work-items apply them
        # in, which the interpreter fixes and a device need not (a first tlfuzz finding of
        # the lowering: max 5 applied after some adds restored the counter)
        op = self.counter_op
        t = mt.element
        val = self.gen_scalar(t, 1)
        if op == "add":
            val = self.clamp(val, 3)
            # every work-group and iteration of every enclosing loop may add it
            self.counter_bound += 3 * self.mult * self.groups * 64
            if self.counter_bound > type_range(t).hi // 2:
                raise Unavailable("the counter could overflow")
        r = self.fresh()
        self.emit(ir.AtomicUpdate(r, op, val.op, v, (self.index_in(n).op,), t,
                                  self.pick([None, "work_group", "device"]),
                                  self.pick([None, "relaxed", "acquire_release"])))
        self.stats["atomic_" + op] += 1

    def atomic_counter(self) -> tuple[Value, MemrefType, int]:
        if self.counter is None:
            t = self.pick([ScalarType.i32, ScalarType.i64])
            n = self.int(1, 3)
            mt = MemrefType.make(t, (n,))
            v = Value("cnt")
            self.arguments.append(ir.Argument(v, mt))
            self.npz[v.name] = self.data_rng.integers(-3, 4, n).astype(t.dtype)
            self.counter = (v, mt, n)
            self.counter_op = self.pick(ATOMIC_OPS)
            self.counter_bound = 3
        return self.counter

    # --- attributes -----------------------------------------------------------------------

    def attributes(self, fn: ir.Function) -> ir.Function:
        """Attributes true of the arguments passed (alignment of the element size: every
        buffer is at least that aligned; gcds of the actual sizes and strides), and a
        sub-group size that divides the work-group's first mode."""
        args = []
        for a in fn.args:
            t, data = a.type, self.npz.get(a.value.name)
            attrs = {}
            if isinstance(t, MemrefType) and data is not None and t.order and \
                    self.flip(self.p.attribute_percent):
                arr = np.asarray(data)
                attrs["alignment"] = max(1, t.element.bits // 8)
                shape = arr.shape
                if self.flip(60):
                    attrs["shape_gcd"] = tuple(self.pick(
                        [d for d in range(1, s + 1) if s % d == 0] or [1])
                        for s in shape[:self.int(1, len(shape))])
                strides = self.npz.get(f"{a.value.name}.strides")
                if strides is None:
                    strides = [int(np.prod(shape[:k])) for k in range(len(shape))]
                if self.flip(40):
                    attrs["stride_gcd"] = tuple(self.pick(
                        [d for d in range(1, int(s) + 1) if int(s) % d == 0] or [1])
                        for s in list(strides)[:self.int(1, len(shape))])
                self.stats["argument-attributes"] += 1
            args.append(dataclasses.replace(a, attributes=attrs) if attrs else a)
        sg = None
        if self.flip(self.p.subgroup_size_percent):
            wg = fn.work_group_size
            sizes = [s for s in self.p.subgroup_sizes if wg is None or wg[0] % s == 0]
            if sizes:
                sg = self.pick(sizes)
                self.stats["subgroup_size"] += 1
        return dataclasses.replace(fn, args=tuple(args), subgroup_size=sg)


__all__ = ["V04Generator", "v04_params", "V04_MEMREF_TYPES", "V04_SCALAR_TYPES", "LOWP", "MATH"]
