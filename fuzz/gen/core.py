"""The core of the random kernel builder behind `fuzz.strategies.kernels()`: drawing,
scopes, scalar expressions, loads and views (statements: `body`, functions: `function`).

A `Generator` draws every decision through a Hypothesis `draw` function (so cases shrink), or
from a `random.Random` passed in its place (fast sampling for statistics, no shrinking), and
builds `tlinterp.lang.ir` directly. It keeps enough knowledge of the run-time state to make the
program free of undefined behaviour by construction:

- scalars carry value ranges (`fuzz.gen.ranges`); an operation is only emitted when its range
  proves it defined (divisors are forced into [1, 8], shift amounts masked, ...);
- memory is a set of `Buf`s: read-only inputs, per-work-group output slices ("own"), allocas
  and one shared atomic sink. A work-group only writes its own slices, its allocas and (with
  `.atomic` and beta = 1) the sink; nobody reads the sink;
- integer buffers that are read back have a magnitude cap that every write respects, so loads
  have known ranges; integer buffers that are only written ("sinks") track an accumulated
  bound instead, multiplied by the trip counts of enclosing loops;
- a foreach writes one view, each iteration to elements indexed by its own loop variable, and
  does not read that buffer; allocas are read only after a full initialisation;
- views (subview/expand/fuse/load from a group) carry the run-time size interval of every mode
  and, where uniform, the concrete strides, so indices stay in bounds and fuses are legal.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections import Counter
from collections.abc import Callable
from typing import Optional

from hypothesis import strategies as st

from fuzz.gen.model import Buf, Scal, Scope, Unavailable, View
from fuzz.gen.params import GenParams
from fuzz.gen.ranges import (
    UNKNOWN_F,
    FRange,
    IRange,
    cast_range,
    const_range,
    float_binary,
    float_unary,
    has_model,
    int_binary,
    int_edges,
    int_unary,
    type_range,
)
from tlinterp.lang import ir, ops, typerules
from tlinterp.lang.ir import Const, Slice, Value
from tlinterp.lang.types import INDEX, MemrefType, ScalarType

# How often a closed region's names are handed out again (to its sibling or the code after it),
# as programs written for the original compiler do: names are scoped by region.
REUSE_NAMES_PERCENT = 40

_INTEGERS: dict[tuple[int, int], st.SearchStrategy] = {}
# the ordered compares first: Hypothesis favours the first entries of a list it picks from
_CONDS = ("lt", "le", "gt", "ge", "ne", "eq")
assert set(_CONDS) == set(ops.names(ops.COMPARE))


def _literal_ok(v: int) -> bool:
    """Integer literals of the language lie in [-2^63 + 1, 2^63 - 1]."""
    return -(1 << 63) < v < (1 << 63)


class CoreGenerator:
    def __init__(self, draw: Callable, params: GenParams, fname: str):
        self.draw = draw
        self.p = params
        self.fname = fname
        self.n = 0
        self.scopes: list[Scope] = [Scope()]
        self.name_marks: list[int] = []  # the name counter where each open region began
        self.spmd = False
        self.foreach_buf: Optional[Buf] = None
        self.mult = 1
        self.bufs: list[Buf] = []
        self.roots: dict[int, View] = {}  # id(buf) -> root view (for own/alloca/atomic)
        self.groups = 1
        self.used: set[str] = set()  # instruction kinds emitted (coverage)
        self.float_collectives = False
        self.float_forbidden = False
        self.gid: Optional[Scal] = None
        self.main = ScalarType.f32  # the function's main element type
        self.foreach_target = None  # (view, mode, index Scal) inside a foreach
        self.p_mixed = False  # current collective may mix f32 and f64 operands
        self.big = False  # sizes drawn from params.shape_edges (around work-group sizes)
        self.stats: Counter = Counter()  # what was generated, for distribution tests
        # witness outputs: kind ("int"/"float") -> [argument, per-group view, slots used]
        self.witnesses: dict[str, list] = {}
        self.witness_cols = 1  # columns per slot: the largest foreach extent
        # views copied whole into outputs of their own: (argument, its subview at the top)
        self.dumps: list[tuple[ir.Argument, ir.Subview]] = []
        self.rows: list[tuple[str, int]] = []  # (kind, static rows) of collective outputs
        self.f64_gemms = 0  # gemms with an f64 output
        self.last_parallel: Optional[View] = None  # the last view a collective/foreach wrote
        self.if_depth = 0  # regions of `if` instructions around the code being generated

    # --- drawing --------------------------------------------------------------------------

    def int(self, lo: int, hi: int) -> int:
        if hi <= lo:
            return lo
        if isinstance(self.draw, random.Random):  # plain sampling (statistics), no shrinking
            return self.draw.randint(lo, hi)
        strategy = _INTEGERS.get((lo, hi))
        if strategy is None:  # building a strategy costs more than drawing from it
            strategy = _INTEGERS[(lo, hi)] = st.integers(lo, hi)
        return self.draw(strategy)

    def flip(self, percent: int) -> bool:
        """True with about `percent`% probability; shrinks to False."""
        return self.int(0, 99) >= 100 - percent

    def permutation(self, n: int) -> list[int]:
        if isinstance(self.draw, random.Random):
            out = list(range(n))
            self.draw.shuffle(out)
            return out
        return self.draw(st.permutations(range(n)))

    def dim(self, n: int) -> int:
        """A mode size: in [1, n], or one of the edge sizes in a big-shape function."""
        if not self.big:
            return self.int(1, n)
        # half of the time the largest edges: beyond the 16 work-items the lowering picks
        return self.pick(self.big_sizes()[-3:] if self.flip(50) else self.big_sizes())

    def big_sizes(self) -> list[int]:
        return list(self.p.shape_edges)

    def pick(self, seq):
        seq = list(seq)
        if not seq:
            raise Unavailable("nothing to pick")
        return seq[self.int(0, len(seq) - 1)]

    def weighted(self, weights: dict[str, int]) -> str:
        items = [(k, w) for k, w in weights.items() if w > 0]
        if not items:
            raise Unavailable("no option")
        total = sum(w for _, w in items)
        x = self.int(0, total - 1)
        for k, w in items:
            if x < w:
                return k
            x -= w
        return items[-1][0]

    # --- emission and scopes --------------------------------------------------------------

    def fresh(self, prefix: str = "v") -> Value:
        self.n += 1
        return Value(f"{prefix}{self.n}")

    def emit(self, inst) -> None:
        if isinstance(inst, ir.Store) and isinstance(inst.value, Const) \
                and self.excludes("store-constant"):
            # the target stores values only: the constant becomes one first (x + 0, x * 1.0:
            # the same bits, -0.0 included)
            t = inst.type.element
            r = self.fresh()
            unit = Const(1.0, True) if t.is_float else Const(0)
            self.emit(ir.Arith(r, "mul" if t.is_float else "add", inst.value, unit, t))
            inst = dataclasses.replace(inst, value=r)
        self.scopes[-1].insts.append(inst)
        self.used.add(type(inst).__name__)

    def excludes(self, feature: str) -> bool:
        """Whether the target profile leaves this feature out (fuzz.profiles.FEATURES)."""
        return self.p.profile is not None and feature in self.p.profile.exclude_features

    def push(self) -> Scope:
        s = Scope()
        self.scopes.append(s)
        self.name_marks.append(self.n)
        return s

    def pop(self) -> ir.Region:
        mark = self.name_marks.pop()
        if self.flip(REUSE_NAMES_PERCENT):
            self.n = mark  # every name above the mark was defined in the closing region
        return ir.Region(self.scopes.pop().insts)

    def visible_scalars(self, t: Optional[ScalarType] = None) -> list[Scal]:
        out = [s for sc in self.scopes for s in sc.scalars]
        return [s for s in out if t is None or s.type is t]

    def visible_views(self) -> list[View]:
        return [v for sc in self.scopes for v in sc.views]

    def add_scalar(self, s: Scal) -> Scal:
        if isinstance(s.op, Value):
            self.scopes[-1].scalars.append(s)
        return s

    def add_view(self, v: View) -> View:
        self.scopes[-1].views.append(v)
        return v

    # --- witnesses ------------------------------------------------------------------------

    def witness(self, v: Scal) -> None:
        """Make a scalar observable: store it (cast to i64 or f64) into a slot of its own in
        a witness output, so a wrong value that no other output shows is still a mismatch.
        Inside a foreach each iteration has its own column (the slot is [slot, iteration]);
        float witnesses only where float outputs are compared exactly (no float
        collectives)."""
        if v.type.is_float and (self.float_collectives or self.float_forbidden):
            return
        col: ir.Operand = Const(0)
        if self.spmd:
            if self.foreach_target is None:
                return
            ivar = self.foreach_target[2]
            col = ivar.op
            self.witness_cols = max(self.witness_cols, ivar.rng.hi + 1)
        kind = self.witness_kind(v.type)
        wt = self.witness_type(kind)
        if kind in ("int", "float") and wt not in self.p.memref_types:
            return  # the caller restricted the memref types
        try:
            val = self.cast(v, wt)
        except Unavailable:
            return
        if kind not in self.witnesses:
            # the view is defined at the top of the body whatever region asks first: its own
            # prefix keeps it apart from names that region closing hands out again
            stem = kind[0] if kind in ("int", "float") else kind
            self.witnesses[kind] = [self.fresh("w" + stem), self.fresh("wv" + stem), 0]
        w = self.witnesses[kind]
        t = MemrefType.make(wt, (None, None))
        self.emit(ir.Store(val.op, w[1], (Const(w[2]), col), t))
        w[2] += 1
        self.stats["witness"] += 1

    # --- scalars ----------------------------------------------------------------------------

    def const(self, t: ScalarType, value) -> Scal:
        if t.is_float:
            return Scal(Const(float(value), True), t, const_range(value, t))
        return Scal(Const(int(value)), t, const_range(value, t))

    def small_const(self, t: ScalarType) -> Scal:
        if t.is_bool:
            return self.const(t, self.int(0, 1))
        if t.is_float:
            # and fractions where truncation, rounding and flooring differ
            return self.const(t, self.pick([1.0, 0.5, -2.0, 0.0, 3.25, -0.125, 1e-3, -0.0,
                                            -1.5, 1.75, -2.75, 2.5]))
        if self.flip(self.p.edge_percent):
            return self.const(t, self.pick([v for v in int_edges(t) if _literal_ok(v)]))
        if t.is_signed:
            return self.const(t, self.pick([1, 2, -1, 0, 3, -7, 5]))
        return self.const(t, self.pick([1, 2, 0, 3, 7]))

    def index_const(self, v: int) -> Scal:
        return self.const(INDEX, v)

    def linear_float(self) -> bool:
        """In functions with float collectives, float scalars only meet add/sub/mul/neg and
        float casts, so that fuzz.oracle.compare can bound the collectives' rounding errors."""
        return self.float_collectives

    def binary(self, op: str, a: Scal, b: Scal) -> Scal:
        t = a.type
        rng = float_binary(op, a.rng, b.rng) if t.is_float else int_binary(
            op, a.rng, b.rng, t, nonzero=b.nonzero and op in ("div", "rem"))
        if rng is None:
            raise Unavailable(op)
        r = self.fresh()
        self.emit(ir.Arith(r, op, a.op, b.op, t))
        return self.add_scalar(Scal(r, t, rng))

    def unary(self, op: str, a: Scal) -> Scal:
        t = a.type
        rng = float_unary(op, a.rng) if t.is_float else int_unary(op, a.rng, t)
        if rng is None:
            raise Unavailable(op)
        r = self.fresh()
        self.emit(ir.ArithUnary(r, op, a.op, t))
        return self.add_scalar(Scal(r, t, rng))

    def cast(self, a: Scal, to: ScalarType) -> Scal:
        if a.type is to:
            return a
        rng = cast_range(a.rng, a.type, to)
        if rng is None:
            raise Unavailable("cast")
        r = self.fresh()
        self.emit(ir.Cast(r, a.op, a.type, to))
        return self.add_scalar(Scal(r, to, rng))

    def bump_if_equal(self, x: Scal, value: int, rng: IRange, nonzero: bool = False) -> Scal:
        """x + (x == value ? 1 : 0): the value `value` is replaced by value + 1, every other
        value (any sign) is kept; `rng` is the caller's bound of the result."""
        t = x.type
        eq, one, r = self.fresh(), self.fresh(), self.fresh()
        if _literal_ok(value):
            self.emit(ir.Compare(eq, "eq", x.op, Const(value), t))
        else:  # -2^63 has no literal: x < -2^63 + 1 is the same test
            self.emit(ir.Compare(eq, "lt", x.op, Const(value + 1), t))
        self.emit(ir.Cast(one, eq, ScalarType.i1, t))
        self.emit(ir.Arith(r, "add", x.op, one, t))
        return self.add_scalar(Scal(r, t, rng, nonzero))

    def guard_nonzero(self, b: Scal) -> Scal:
        """b + (b == 0): a divisor that is never 0 but keeps b's sign and magnitude."""
        return self.bump_if_equal(b, 0, b.rng.union(IRange(1, 1)), nonzero=True)

    def guard_not_min(self, a: Scal) -> Scal:
        """a + (a == MIN): a dividend that is never MIN (MIN / -1 overflows)."""
        lo = type_range(a.type).lo
        return self.bump_if_equal(a, lo, IRange(lo + 1, max(a.rng.hi, lo + 1)))

    def clamp(self, a: Scal, cap: int) -> Scal:
        """A value of `a`'s integer type whose magnitude is at most `cap`."""
        lim = IRange(0, cap) if not a.type.is_signed else IRange(-cap, cap)
        if a.rng.within(lim):
            return a
        return self.binary("rem", a, self.const(a.type, cap + 1))

    def scalar_types(self) -> list[ScalarType]:
        return [t for t in self.p.scalar_types if not (t.is_float and self.float_forbidden)]

    def gen_scalar(self, t: ScalarType, depth: int = 2) -> Scal:
        """A scalar of type t: a constant, a visible value, a load or a small expression."""
        for _ in range(4):
            try:
                before = self.n
                v = self._gen_scalar(t, depth)
                if self.n > before and isinstance(v.op, Value) and \
                        self.flip(self.p.witness_percent):
                    self.witness(v)  # intermediate values too: later ops may mask a bug
                return v
            except Unavailable:
                depth = 0
        return self.small_const(t)

    def _gen_scalar(self, t: ScalarType, depth: int) -> Scal:
        w = dict(self.p.scalar_weights)
        if depth <= 0:
            w = {k: v for k, v in w.items() if k in ("const", "value", "load", "special")}
        if t.is_float and self.linear_float():
            w.pop("cmp", None)
        if not t.is_bool:
            w.pop("cmp", None)
        if t is not INDEX:
            w.pop("special", None)
        kind = self.weighted(w)
        if kind == "const":
            return self.small_const(t)
        if kind == "value":
            return self.pick(self.visible_scalars(t))
        if kind == "special":
            return self.special_index()
        if kind == "load":
            return self.gen_load(t)
        if kind == "cmp":
            return self.gen_cmp(depth)
        if kind == "cast":
            src = self.pick([s for s in self.scalar_types() if s is not t])
            floats = [s for s in self.scalar_types() if s.is_float and s is not t]
            if t.is_int and floats and self.flip(40):
                src = self.pick(floats)  # float -> integer: truncation towards zero
                if self.linear_float():
                    # of input data only: exact, so no rounding error can move the result
                    return self.cast(self.gen_load(src, exact=True), t)
            if self.linear_float() and not ops.linear_cast(src, t):
                raise Unavailable("float to int in linear mode")
            return self.cast(self.gen_scalar(src, depth - 1), t)
        if kind == "unary":
            return self.unary(self.pick(self.op_names(ops.UNARY, t)),
                              self.gen_scalar(t, depth - 1))
        if kind == "if_":
            return self.gen_if_value(t, depth - 1)
        return self.gen_binary(t, depth)

    def op_names(self, family: str, t: ScalarType) -> list[str]:
        """The operations of a family (tlinterp/lang/ops.py) defined on `t`, with a range model
        there, allowed by the profile, and (floats in linear mode) linear."""
        out = [n for n in ops.accepting(family, t) if has_model(family, n, t)]
        if self.p.profile is not None:
            gone = self.p.profile.exclude_instructions
            out = [n for n in out if ops.find(family, n).mnemonic not in gone]
        if t.is_float and self.linear_float():
            out = [n for n in out if ops.linear(family, n)]  # what the oracle bounds
        return out

    def gen_binary(self, t: ScalarType, depth: int, op: Optional[str] = None) -> Scal:
        if op is None:
            op = self.pick(self.op_names(ops.BINARY, t))
        a = self.gen_scalar(t, depth - 1)
        b = self.gen_scalar(t, depth - 1)
        if t.is_int and t.is_signed and op in ("div", "rem"):
            # mixed signs are where truncating and flooring division differ
            if a.rng.lo >= 0 and self.flip(50):
                a = self.unary("neg", a)
            elif b.rng.lo >= 0 and self.flip(50):
                b = self.unary("neg", b)
        if t.is_int and op in ("div", "rem") and b.rng.lo <= 0 <= b.rng.hi and not b.nonzero:
            b = self.guard_nonzero(b)
        if t.is_int and op in ("div", "rem") and t.is_signed and a.rng.lo == type_range(t).lo \
                and b.rng.lo <= -1 <= b.rng.hi:
            a = self.guard_not_min(a)
        if t.is_int and t.is_signed and op in ("div", "rem"):
            self.stats["divrem"] += 1
            self.stats["divrem-negative-dividend"] += a.rng.lo < 0
            self.stats["divrem-negative-divisor"] += b.rng.lo < 0
        if op in ("shl", "shr") and self.flip(40):  # every legal amount, not only small ones
            b = self.const(t, self.int(0, t.bits - 1))
        if op in ("shl", "shr") and not b.rng.within(IRange(0, t.bits - 1)):
            b = self.binary("and", b, self.const(t, t.bits - 1))
        if op == "shr" and t.is_signed and a.rng.lo >= 0 and self.flip(50):
            a = self.unary("not", a)  # ~a < 0: the arithmetic shift's sign fill
        if op == "shl" and t.is_signed:  # no overflow: keep only the bits that fit
            mask = type_range(t).hi >> b.rng.hi
            if not a.rng.within(IRange(0, mask)):
                a = self.binary("and", a, self.const(t, mask))
        try:
            return self.binary(op, a, b)
        except Unavailable:
            if op == "shl":
                return self.binary("shr", a, b)
            if op in ("add", "sub", "mul") and t.is_int:
                return self.binary("xor", a, b)
            raise

    def gen_cmp(self, depth: int) -> Scal:
        ts = [s for s in self.scalar_types() if not s.is_bool
              and not (s.is_float and self.linear_float())]
        t = self.pick(ts)
        a = self.gen_scalar(t, depth - 1)
        # equal operands often: the edge between < and <=; else often an edge of the type
        # (for unsigned types half of them have the top bit set: signedness mix-ups show)
        if self.flip(self.p.equal_compare_percent):
            b = a
        elif t.is_int and self.flip(60):
            b = self.const(t, self.pick([v for v in int_edges(t) if _literal_ok(v)]))
            self.stats["compare-with-edge"] += 1
        else:
            b = self.gen_scalar(t, depth - 1)
        r = self.fresh()
        self.emit(ir.Compare(r, self.pick(_CONDS), a.op, b.op, t))
        s = self.add_scalar(Scal(r, ScalarType.i1, IRange(0, 1)))
        self.witness(s)  # every compare result is observable (equal operands: < vs <=)
        return s

    def special_index(self) -> Scal:
        k = self.pick(["group_id", "group_size", "size", "arith"])
        if k == "group_id":
            return self.gid
        if k == "group_size":
            return self.add_scalar(self.group_count())
        if k == "size":
            v = self.pick(self.visible_views())
            if v.type.order == 0:
                raise Unavailable("order 0")
            m = self.int(0, v.type.order - 1)
            return self.size_of(v, m)
        # (group_id + 1) rem group_size: another group's index, exercises index arithmetic
        g = self.group_count()
        s = self.binary("add", self.gid, self.index_const(1))
        return self.binary("rem", s, g)

    def group_count(self) -> Scal:
        """The number of work-groups as a value (emitted here)."""
        gs = self.fresh()
        self.emit(ir.GroupSize(gs))
        return Scal(gs, INDEX, IRange(self.groups, self.groups))

    def witness_kind(self, t: ScalarType) -> str:
        """Which witness output observes values of type t ("int" and "float" store through
        a cast to i64 or f64)."""
        return "float" if t.is_float else "int"

    def witness_type(self, kind: str) -> ScalarType:
        """The element type of the witness output of this kind."""
        return ScalarType.f64 if kind == "float" else ScalarType.i64

    def size_of(self, v: View, m: int) -> Scal:
        r = self.fresh()
        self.emit(ir.Size(r, v.value, m, v.type))
        lo, hi = v.dims[m]
        return self.add_scalar(Scal(r, INDEX, IRange(lo, hi)))

    def index_in(self, n: int) -> Scal:
        """An index operand in [0, n) (n >= 1): constant, visible value, or masked value."""
        k = self.weighted({"const": 5, "value": 3, "mask": 2})
        if k == "value":
            ok = [s for s in self.visible_scalars(INDEX) if s.rng.within(IRange(0, n - 1))]
            if ok:
                return self.pick(ok)
        if k == "mask" and n >= 2:
            base = self.pick(self.visible_scalars(INDEX) or [self.gid])
            mask = (1 << (n.bit_length() - 1)) - 1  # largest 2^j - 1 below n
            return self.binary("and", base, self.index_const(mask))
        return self.index_const(self.int(0, n - 1))

    def gen_if_value(self, t: ScalarType, depth: int) -> Scal:
        cond = self.gen_scalar(ScalarType.i1, depth)
        results, rngs = (self.fresh(),), []
        regions = []
        for _ in range(2):
            self.push()
            v = self.gen_scalar(t, depth)
            self.emit(ir.Yield((v.op,), (t,)))
            rngs.append(v.rng)
            regions.append(self.pop())
        self.emit(ir.If(results, cond.op, (t,), regions[0], regions[1]))
        return self.add_scalar(Scal(results[0], t, rngs[0].union(rngs[1])))

    # --- loads ----------------------------------------------------------------------------

    def readable_views(self, elem: Optional[ScalarType] = None) -> list[View]:
        out = []
        for v in self.visible_views():
            b = v.buf
            if not (b.readable and b.initialised and b.alive) or b is self.foreach_buf:
                continue
            if elem is not None and v.type.element is not elem:
                continue
            out.append(v)
        return out

    def load_range(self, buf: Buf):
        if buf.elem.is_float:
            if buf.kind == "input" and buf.finite:
                return FRange(-self.p.float_data_max, self.p.float_data_max)
            return UNKNOWN_F
        if buf.edge:
            return type_range(buf.elem)
        if buf.elem.is_signed:
            return IRange(-buf.cap, buf.cap)
        return IRange(0, buf.cap)

    def gen_load(self, t: ScalarType, exact: bool = False) -> Scal:
        """A load of type t from a readable view; `exact`: from an argument input only (no
        value a collective computed with rounding)."""
        views = [v for v in self.readable_views(t) if min(lo for lo, _ in v.dims or ((1, 1),))
                 and (not exact or v.buf.kind == "input")]
        v = self.pick(views)
        if self.flip(30) and v.type.order:
            v = self.derive_view(v, self.int(0, v.type.order))
        idx = tuple(self.index_in(lo).op for lo, _ in v.dims)
        r = self.fresh()
        self.emit(ir.Load(r, v.value, idx, v.type))
        return self.add_scalar(Scal(r, t, self.load_range(v.buf)))

    # --- views ------------------------------------------------------------------------------

    def size_operand(self, n: int) -> ir.Operand:
        """Constant n, or a run-time index value equal to n (makes the type dynamic)."""
        if self.flip(25):
            exact = [s for s in self.visible_scalars(INDEX) if s.rng == IRange(n, n)]
            if exact:
                return self.pick(exact).op
            if n >= 2:
                return self.binary("add", self.index_const(n - 1), self.index_const(1)).op
        return Const(n)

    def subview(self, v: View, slices: list, dims: list, strides: list) -> View:
        r = self.fresh()
        inst = ir.Subview(r, v.value, tuple(slices), v.type)
        t = typerules.subview_type(inst)
        self.emit(inst)
        return self.add_view(View(r, t, tuple(dims), tuple(strides), v.buf))

    def derive_view(self, v: View, order: int, exact: Optional[list] = None) -> View:
        """A subview of `v` with `order` modes. `exact[k]`, when given, is the size mode k of
        the result must have at run time: an int, or a (Scal holding it, lo, hi) triple."""
        v = self.random_chain(v)
        while v.type.order < order:
            v = self.expand(v)  # raises Unavailable when no mode can be split
        if exact is None:
            keep = sorted(self.permutation(v.type.order)[:order])
        else:  # modes large enough for the sizes asked for, in order
            need = [1 if w is None else size_bound(w) for w in exact]
            keep = list(self.pick(
                ks for ks in itertools.combinations(range(v.type.order), order)
                if all(v.dims[m][0] >= n for m, n in zip(ks, need))))
        slices, dims, strides = [], [], []
        for m in range(v.type.order):
            lo, hi = v.dims[m]
            if m not in keep:
                if lo < 1:
                    raise Unavailable("empty mode")
                slices.append(Slice(self.index_in(lo).op))
                continue
            want = exact[keep.index(m)] if exact is not None else None
            if want is None:
                if lo < 1:
                    raise Unavailable("empty mode")
                # big-shape functions keep edge sizes whole (from offset 0) half of the time
                off = 0 if self.big and self.flip(50) else self.int(0, lo - 1)
                if self.flip(30):  # '?': the rest of the mode
                    slices.append(Slice(self.index_const(off).op, None, True))
                    dims.append((lo - off, hi - off))
                else:
                    edges = [e for e in self.big_sizes() if e <= lo - off]
                    size = self.pick(edges[-2:]) if self.big and edges and self.flip(50) \
                        else self.int(1, lo - off)
                    slices.append(Slice(self.index_const(off).op, self.size_operand(size), True))
                    dims.append((size, size))
            elif isinstance(want, int):
                if lo < want:
                    raise Unavailable("mode too small")
                off = self.int(0, lo - want)
                if off + want == lo == hi and self.flip(20):
                    slices.append(Slice(self.index_const(off).op, None, True))
                else:
                    slices.append(Slice(self.index_const(off).op, self.size_operand(want), True))
                dims.append((want, want))
            else:
                s, wlo, whi = want
                if lo < whi:
                    raise Unavailable("mode too small")
                off = self.int(0, lo - whi)
                slices.append(Slice(self.index_const(off).op, s.op, True))
                dims.append((wlo, whi))
            strides.append(v.strides[m])
        return self.subview(v, slices, dims, strides)

    def random_chain(self, v: View) -> View:
        """Zero to two expand/fuse steps that keep the memory the view covers."""
        for _ in range(self.int(0, self.p.max_view_chain)):
            k = self.pick(["expand", "fuse"])
            try:
                v = self.expand(v) if k == "expand" else self.fuse(v)
            except Unavailable:
                pass
        return v

    def expand(self, v: View) -> View:
        modes = [m for m, (lo, hi) in enumerate(v.dims) if lo == hi and lo >= 2]
        if not modes or v.type.order >= 4:
            raise Unavailable("no mode to expand")
        m = self.pick(modes)
        n = v.dims[m][0]
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        a = self.pick(divisors)
        b = n // a
        entries: list = [a, b]
        k = self.weighted({"static": 4, "dyn": 3, "value": 2})
        j = self.int(0, 1)
        if k == "dyn":
            entries[j] = None
        elif k == "value":
            entries[j] = self.binary("add", self.index_const(entries[j] - 1),
                                     self.index_const(1)).op
            if self.flip(50):
                entries[1 - j] = None
        r = self.fresh()
        inst = ir.Expand(r, v.value, m, tuple(entries), v.type)
        if (v.type.shape[m] is None and None in entries and self.excludes(
                "expand-inferred-dynamic")) or (v.type.stride[m] is None and self.excludes(
                "expand-dynamic-stride")):
            raise Unavailable("an expand form the profile leaves out")
        t = typerules.expand_type(inst)
        self.emit(inst)
        s = v.strides[m]
        dims = v.dims[:m] + ((a, a), (b, b)) + v.dims[m + 1:]
        strides = v.strides[:m] + (s, None if s is None else s * a) + v.strides[m + 1:]
        return self.add_view(View(r, t, dims, strides, v.buf, v.full))

    def fuse(self, v: View) -> View:
        ok = []
        for m in range(v.type.order - 1):
            (lo, hi), s0, s1 = v.dims[m], v.strides[m], v.strides[m + 1]
            if lo == hi and s0 is not None and s1 is not None and s0 * lo == s1:
                ok.append(m)
        if not ok:
            raise Unavailable("nothing to fuse")
        m = self.pick(ok)
        r = self.fresh()
        inst = ir.Fuse(r, v.value, m, m + 1, v.type)
        t = typerules.fuse_type(inst)
        self.emit(inst)
        n = v.dims[m][0]  # exact; the next mode may vary between work-groups
        dims = v.dims[:m] + ((n * v.dims[m + 1][0], n * v.dims[m + 1][1]),) + v.dims[m + 2:]
        strides = v.strides[:m + 1] + v.strides[m + 2:]
        return self.add_view(View(r, t, dims, strides, v.buf, v.full))


def exact_dim(g: CoreGenerator, v: View, m: int):
    """The size of mode m of v as `derive_view` wants it: int or (Scal, lo, hi)."""
    lo, hi = v.dims[m]
    if lo == hi:
        return lo
    return (g.size_of(v, m), lo, hi)


def size_bound(size) -> int:
    """The largest value of a size as `exact_dim` gives it."""
    return size if isinstance(size, int) else size[2]
