"""Cooperative matrices through control flow that differs between work-groups: two steps of
the SPMD builder's coopmatrix statements (`coop_step` below, which draws them
with `weights`/`STEPS`).

- `coop_for`: a `for` carrying one to three coopmatrices (and sometimes a scalar), the first
  a matrix_acc that the body mul_adds into (B often loaded at the loop variable, as the
  flash-attention kernels load their keys), the others updated component-wise (add, sub,
  max, min, mul with a matrix; scale; neg); two carried values of one type sometimes swap in
  the yield. Its bounds are constants or come from the work-group's linear id (`rem`, `min`
  of it; as a lower or an upper bound), so trip counts differ between work-groups and are 0
  for some; the step is a constant.
- `coop_if`: an `if` yielding coopmatrices, its condition computed from the work-group id or
  a loop variable: uniform within a work-group (coopmatrix operands must be uniform per
  sub-group, docs/semantics.md "v0.4 execution model"), different between work-groups.

Exactness (fuzz/gen/spmd_model.py): every update is monotone in the (mag, grain) model of
what it updates, so the carried values' model is iterated over the largest trip count of any
work-group, and an update that would let a value leave its type's exact range is not drawn.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

from fuzz.gen import spmd_coop as coop
from fuzz.gen.spmd_base import BuilderBase
from fuzz.gen.spmd_model import SG, WG, CVal, Val, fits
from tlinterp.checker.v04 import promotable, promote
from tlinterp.lang import ir
from tlinterp.lang.ir import Value
from tlinterp.lang.types import INDEX, CoopMatrixType, ScalarType

_Builder = BuilderBase
Model = tuple[float, int]  # (mag, grain) of spmd_model


@dataclass
class _Operand:
    """A matrix an update reads: a visible one (`cval`), or a load of `ct` with data of the
    given model, made before the loop ("before"), in the body ("inside") or in the body at
    the loop variable ("at_iv": every iteration reads other data)."""

    ct: CoopMatrixType
    mag: float
    grain: int
    where: str
    cval: Optional[CVal] = None


@dataclass
class _Update:
    """One update of a carried (or yielded) matrix: x <- x op operand(s)."""

    op: str  # mul_add, add, sub, max, min, mul, scale, neg
    a: Optional[_Operand] = None  # A of mul_add, else the other matrix
    b: Optional[_Operand] = None  # B of mul_add
    scalar: Optional[Val] = None  # the factor of scale

    def model(self, t: ScalarType, m: Model) -> Model:
        mag, grain = m
        cplx = 2 if t.is_complex else 1
        a, op = self.a, self.op
        if op == "mul_add":
            assert a is not None and self.b is not None
            both = 2 if a.ct.component.is_complex and self.b.ct.component.is_complex else 1
            return mag + a.ct.cols * a.mag * self.b.mag * both, max(grain, a.grain + self.b.grain)
        if op in ("add", "sub"):
            assert a is not None
            return mag + a.mag, max(grain, a.grain)
        if op in ("max", "min"):
            assert a is not None
            return max(mag, a.mag), max(grain, a.grain)
        if op == "mul":
            assert a is not None
            return mag * a.mag * cplx, grain + a.grain
        if op == "scale":
            assert self.scalar is not None
            return mag * self.scalar.mag * cplx, grain + self.scalar.grain
        return m  # neg


def _chain(t: ScalarType, chain: list[_Update], m: Model) -> Optional[Model]:
    """m after the updates of `chain`, None when a step may leave t's exact range."""
    for u in chain:
        m = u.model(t, m)
        if not fits(t, *m):
            return None
    return m


def _iterate(types: list[ScalarType], inits: list[Model], chains: list[list[_Update]],
             src: list[int], trips: int) -> Optional[tuple[list[Model], list[Model]]]:
    """The models of the carried values seen by the body (over iterations 0..trips-1) and of
    the loop's results (0..trips), value k of an iteration being chain src[k] applied to
    value src[k] of the one before; None when some iteration may be inexact. The updates are
    monotone, so the largest value of each iteration bounds every work-group's."""
    cur = list(inits)
    seen = list(inits)
    out = list(inits)
    for it in range(max(trips, 1)):  # the body's models hold even where it never runs
        nxt = []
        for s in src:
            m = _chain(types[s], chains[s], cur[s])
            if m is None:
                return None
            nxt.append(m)
        cur = nxt
        if it + 1 < trips:
            seen = [_join(x, y) for x, y in zip(seen, cur)]
        out = [_join(x, y) for x, y in zip(out, cur)]
    return seen, out


def _join(x: Model, y: Model) -> Model:
    return max(x[0], y[0]), max(x[1], y[1])


# --- drawing updates ----------------------------------------------------------------------


def _operand(b: _Builder, ct: CoopMatrixType, small: bool, inside: bool) -> _Operand:
    """A matrix of type ct to read: visible, or a load (`small`: magnitude 1, grain 0)."""
    old = [c for c in b.cvisible() if c.type == ct and (not small or (c.mag <= 1 and
                                                                     c.grain == 0))]
    if old and b.flip(30):
        c = b.pick(old)
        return _Operand(ct, c.mag, c.grain, "visible", c)
    mag, grain = (1, 0) if small else b.data_model(ct.component)
    where = b.pick(("before", "inside", "at_iv", "at_iv")) if inside else "before"
    return _Operand(ct, mag, grain, where)


def _mul_add(b: _Builder, ct: CoopMatrixType, small: bool, inside: bool) -> Optional[_Update]:
    """x <- A B + x for a matrix_acc x of type ct: A's and B's types promote to ct's."""
    tc, types = ct.component, b.p.types
    pairs = [(ta, tb) for ta in types for tb in types
             if (pr := promote(ta, tb)) is not None and promotable(pr, tc)
             and coop.mul_add_allowed(b, ta, tb, tc)]
    if not pairs:
        return None
    ta, tb = (tc, tc) if b.flip(40) else b.pick(pairs)
    K = b.pick(coop.K_SIZES)
    A = _operand(b, CoopMatrixType(ta, ct.rows, K, "matrix_a"), small, inside)
    B = _operand(b, CoopMatrixType(tb, K, ct.cols, "matrix_b"), small, inside)
    return _Update("mul_add", A, B)


def _update(b: _Builder, ct: CoopMatrixType, small: bool, inside: bool) -> Optional[_Update]:
    """An update of a matrix of type ct that keeps its type."""
    t = ct.component
    ops = {"add": 3, "sub": 2, "mul": 1, "scale": 2, "neg": 1}
    if not t.is_complex:
        ops |= {"max": 1, "min": 1}
    if ct.use == "matrix_acc" and ct.rows % b.S == 0:
        ops["mul_add"] = 6
    op = b.weighted(ops)
    if op == "mul_add":
        return _mul_add(b, ct, small, inside)
    if op == "neg":
        return _Update("neg")
    if op == "scale":
        return _Update("scale", scalar=b.random_const(t, mag=1 if small else 2))
    return _Update(op, _operand(b, ct, small, inside))


def _fit_update(b: _Builder, ct: CoopMatrixType, inside: bool,
                ok: Callable[[_Update], bool]) -> Optional[_Update]:
    """An update `ok` accepts: a drawn one, else one with small data."""
    for small in (False, True):
        u = _update(b, ct, small, inside)
        if u is not None and ok(u):
            return u
    return None


# --- emitting updates ---------------------------------------------------------------------


def _emit_operand(b: _Builder, o: _Operand, iv: Optional[tuple[Value, int]]) -> CVal:
    if o.cval is None:
        o.cval = coop.load(b, o.ct, o.mag, o.grain, iv if o.where == "at_iv" else None)
        o.cval.observed = True  # input data: what it gives is observed through its use
    return o.cval


def _before(b: _Builder, updates: list[_Update]) -> None:
    """The operands loaded before the loop (their loads are loop-invariant)."""
    for u in updates:
        for o in (u.a, u.b):
            if o is not None and o.where == "before":
                _emit_operand(b, o, None)


def _emit(b: _Builder, u: _Update, x: CVal, iv: Optional[tuple[Value, int]]) -> CVal:
    """x updated by u, in the current region."""
    ct = x.type
    r = b.fresh("M")
    if u.op == "mul_add":
        assert u.a is not None and u.b is not None
        A, B = _emit_operand(b, u.a, iv), _emit_operand(b, u.b, iv)
        b.emit(ir.CoopMulAdd(r, A.op, B.op, x.op, ct))
    elif u.op == "scale":
        assert u.scalar is not None
        b.emit(ir.CoopScale(r, u.scalar.op, x.op, ct))
    elif u.op == "neg":
        b.emit(ir.ArithUnary(r, "neg", x.op, ct))
    else:
        assert u.a is not None
        o = _emit_operand(b, u.a, iv)
        b.emit(ir.Arith(r, u.op, x.op, o.op, ct))
    b.stats["coop.flow.update." + u.op] += 1
    return coop._add(b, CVal(r, ct, *u.model(ct.component, (x.mag, x.grain))))


# --- bounds that differ between work-groups -----------------------------------------------


def _bounds(b: _Builder) -> tuple[Value, Value, int, list[int], int, str]:
    """(start, stop, step, trip count per work-group, largest loop variable, form)."""
    G, glin, top = b.G, b.glin, b.p.max_trips
    step = b.pick((1, 1, 2))
    form = b.pick(("const", "stop_rem", "start_rem", "stop_gid", "start_gid"))
    k = b.int(2, 3)
    lo0 = b.int(0, 1)
    c = b.int(0, top)

    def rem_gid() -> Val:
        return b.arith("rem", glin, b.const(k, INDEX), INDEX, k - 1, 0, "id")

    def min_gid(cap: int) -> Val:  # the id, kept small where there are many work-groups
        return b.arith("min", glin, b.const(cap, INDEX), INDEX, cap, 0, "id")

    if form == "const":
        starts, stops = [lo0] * G, [lo0 + step * c] * G
        lo, hi = b.const(lo0, INDEX), b.const(lo0 + step * c, INDEX)
    elif form == "stop_rem":  # group g: [lo0, g mod k + c)
        r = rem_gid()
        lo, hi = b.const(lo0, INDEX), b.arith("add", r, b.const(c, INDEX), INDEX, k - 1 + c, 0,
                                              "id")
        starts, stops = [lo0] * G, [g % k + c for g in range(G)]
    elif form == "start_rem":  # [g mod k, c)
        lo, hi = rem_gid(), b.const(c, INDEX)
        starts, stops = [g % k for g in range(G)], [c] * G
    elif form == "stop_gid":  # [lo0, min(g, top)): test_interp_v04_coopmatrix.py DIVERGENT
        lo, hi = b.const(lo0, INDEX), min_gid(top)
        starts, stops = [lo0] * G, [min(g, top) for g in range(G)]
    else:  # [min(g, top), c): no iteration from work-group c on
        lo, hi = min_gid(top), b.const(c, INDEX)
        starts, stops = [min(g, top) for g in range(G)], [c] * G
    trips = [max(0, -(-(e - s) // step)) for s, e in zip(starts, stops)]
    last = [s + (n - 1) * step for s, n in zip(starts, trips) if n > 0]
    return lo.op, hi.op, step, trips, max(last, default=0), form


def _uniform_index(b: _Builder) -> Val:
    """An index uniform in the work-group that differs between work-groups (or iterations):
    the linear work-group id, a value made of it, or a visible loop variable."""
    vs = [v for v in b.visible() if v.type is INDEX and v.uni == WG and v.kind != "const"
          and math.isfinite(v.mag)]
    return b.pick(vs) if vs and b.flip(60) else b.glin


def _condition(b: _Builder) -> Value:
    x = _uniform_index(b)
    if b.flip(40):  # parity
        x = b.arith("rem", x, b.const(2, INDEX), INDEX, 1, 0, "id")
        cond, c = b.pick(("eq", "ne")), b.int(0, 1)
    else:
        cond, c = b.pick(("lt", "le", "gt", "ge", "eq", "ne")), b.int(0, max(int(x.mag), 1))
    r = b.fresh("p")
    b.emit(ir.Compare(r, cond, x.op, b.const(c, INDEX).op, INDEX))
    return r


# --- the steps ----------------------------------------------------------------------------


def _acc_type(b: _Builder) -> CoopMatrixType:
    return CoopMatrixType(b.pick(b.p.types), b.pick((b.S, 2 * b.S)), coop._cols(b), "matrix_acc")


def _any_type(b: _Builder) -> CoopMatrixType:
    have = b.cvisible()
    if have and b.flip(50):
        return b.pick(have).type
    return CoopMatrixType(b.pick(b.p.types), coop._rows(b), coop._cols(b),
                          b.pick(("matrix_a", "matrix_b", "matrix_acc")))


def coop_for(b: _Builder) -> None:
    """A `for` carrying coopmatrices (see the module docstring)."""
    lo, hi, step, trips, ivmax, form = _bounds(b)
    T = max(trips)
    types = [_acc_type(b)] + [_any_type(b) for _ in range(b.int(0, 2))]
    inits = [coop.matrix(b, ct) for ct in types]
    n = len(types)
    models = [(c.mag, c.grain) for c in inits]
    src = list(range(n))
    same = [(i, j) for i in range(n) for j in range(i + 1, n) if types[i] == types[j]]
    if same and b.flip(50):  # the yield swaps them: (%x, %y) -> yield (%y', %x')
        i, j = b.pick(same)
        src[i], src[j] = j, i
        b.stats["coop.for.swap"] += 1
    chains: list[list[_Update]] = [[] for _ in range(n)]
    for k in range(n):
        for _ in range(b.int(1, 2)):
            def ok(u: _Update, k: int = k) -> bool:
                chains[k].append(u)
                fine = _iterate([c.component for c in types], models, chains, src, T)
                chains[k].pop()
                return fine is not None

            if k == 0 and not chains[0]:  # the accumulator: a mul_add first, when one fits
                u = next((v for v in (_mul_add(b, types[0], s, True) for s in (False, True))
                          if v is not None and ok(v)), None)
            else:
                u = _fit_update(b, types[k], True, ok)
            if u is not None:
                chains[k].append(u)
    bounds = _iterate([c.component for c in types], models, chains, src, T)
    assert bounds is not None  # every chain was accepted only if it fits
    seen, out = bounds
    for chain in chains:
        _before(b, chain)
    scalar = _scalar_init(b, types) if b.flip(30) else None
    # the body
    var = b.fresh("i")
    carried = [b.fresh("x") for _ in range(n)]
    for e in b.allocas.values():
        e[1] = True  # an earlier iteration may have read local memory
    b.open()
    b.loops += 1
    b.mult *= max(T, 1)
    iv = b.add(Val(var, INDEX, ivmax, 0, WG, "loopvar"))
    xs = [coop._add(b, CVal(v, ct, *m)) for v, ct, m in zip(carried, types, seen)]
    for x in xs:
        x.observed = True  # observed through the results
    if b.flip(40):
        b.statements(b.int(1, 2), SG, b.p.max_depth)  # control stays uniform: sub-groups ok
    ys = []
    for x, chain in zip(xs, chains):
        y = x
        for u in chain:
            y = _emit(b, u, y, (iv.op, ivmax))
        y.observed = y is x or b.flip(70)  # sometimes also stored from inside the loop
        ys.append(y)
    yielded = [ys[s].op for s in src]
    sc = _scalar_update(b, scalar, ys, T) if scalar is not None else None
    if b.flip(30):
        coop_step(b)
    b.observe_region()
    b.loops -= 1
    b.mult //= max(T, 1)
    ytypes = tuple(types) + ((scalar[0].type,) if scalar is not None else ())
    b.emit(ir.Yield(tuple(yielded) + ((sc[0],) if sc is not None else ()), ytypes))
    body = b.close(observe=False)
    for e in b.allocas.values():
        e[1] = True
    results = [b.fresh("F") for _ in range(n)]
    inits_ops = [(v, c.op) for v, c in zip(carried, inits)]
    if scalar is not None:
        results.append(b.fresh("f"))
        inits_ops.append((scalar[1], scalar[0].op))
    b.emit(ir.For(var, lo, hi, b.const(step, INDEX).op if step != 1 else None, INDEX, body,
                  results=tuple(results), inits=tuple(inits_ops), result_types=ytypes))
    for r, ct, m in zip(results, types, out):
        coop._add(b, CVal(r, ct, *m))
    if scalar is not None and sc is not None:
        b.add(Val(results[-1], scalar[0].type, sc[1], sc[2], sc[3], "for"))
    b.stats["coop.for"] += 1
    b.stats["coop.for." + form] += 1
    b.stats[f"coop.for.carried{n}"] += 1
    if len(set(trips)) > 1:
        b.stats["coop.for.per_group"] += 1
    if 0 in trips and T > 0:
        b.stats["coop.for.zero_for_some"] += 1


def _scalar_init(b: _Builder, types: list[CoopMatrixType]) -> tuple[Val, Value]:
    """The initial value of a carried scalar (of a carried matrix's component type mostly),
    and its name in the body."""
    t = b.pick([ct.component for ct in types]) if b.flip(70) else b.pick(b.p.types)
    return b.some_val(t), b.fresh("s")


def _scalar_update(b: _Builder, scalar: tuple[Val, Value], ys: list[CVal], T: int
                   ) -> Optional[tuple[Value, float, int, int]]:
    """The carried scalar s <- s op w, w a component of an updated matrix (or a visible
    value): add where the sum over every iteration stays exact, else max; (next value, mag,
    grain, uniformity) of the result."""
    init, name = scalar
    t = init.type
    w: Optional[Val] = None
    cands = [y for y in ys if y.type.component is t]
    if cands and b.flip(70):
        w = coop.extract(b, b.pick(cands))
    if w is None:
        w = b.some_val(t)
    trips = max(T, 1)
    mag, grain = init.mag + trips * w.mag, max(init.grain, w.grain)
    op: Optional[str] = "add"
    if not fits(t, mag, grain):
        op = None if t.is_complex else b.pick(("max", "min"))
        mag = max(init.mag, w.mag)
    # the body's model of s: the same bound (the updates are monotone)
    uni = max(init.uni, w.uni)
    if op is None:  # nothing keeps a complex sum exact: carried through unchanged
        b.stats["coop.for.scalar.keep"] += 1
        return name, init.mag, init.grain, init.uni
    b.add(Val(name, t, mag, grain, uni, "value"))
    r = b.fresh()
    b.emit(ir.Arith(r, op, name, w.op, t))
    b.stats["coop.for.scalar." + op] += 1
    return r, mag, grain, uni


def coop_if(b: _Builder) -> None:
    """An `if` yielding one or two coopmatrices, its condition uniform per work-group."""
    cond = _condition(b)
    types = [_any_type(b) for _ in range(b.int(1, 2))]
    branches = []
    for _ in range(2):
        b.open()
        if b.flip(30):
            coop_step(b)
        ys = [_branch_value(b, ct) for ct in types]
        for y in ys:
            y.observed = True
        b.observe_region()
        b.emit(ir.Yield(tuple(y.op for y in ys), tuple(types)))
        branches.append((b.close(observe=False), ys))
    (then, a), (otherwise, c) = branches
    results = tuple(b.fresh("Y") for _ in types)
    b.emit(ir.If(results, cond, tuple(types), then, otherwise))
    for r, ct, x, y in zip(results, types, a, c):
        coop._add(b, CVal(r, ct, max(x.mag, y.mag), max(x.grain, y.grain)))
    b.stats["coop.if"] += 1


def _branch_value(b: _Builder, ct: CoopMatrixType) -> CVal:
    """A matrix of type ct in a branch: a visible one, updated or not, or a new one."""
    old = [c for c in b.cvisible() if c.type == ct]
    if old and b.flip(70):
        x = b.pick(old)
        u = _fit_update(b, ct, False,
                        lambda u: _chain(ct.component, [u], (x.mag, x.grain)) is not None)
        if u is None or b.flip(25):
            b.stats["coop.if.yield_visible"] += 1
            return x
        _before(b, [u])
        return _emit(b, u, x, None)
    return coop.load(b, ct) if b.flip(60) else coop.construct(b, ct)


STEPS: dict[str, Callable[[_Builder], None]] = {"coop_for": coop_for, "coop_if": coop_if}


def weights(b: _Builder) -> dict[str, int]:
    """The weights of these steps among `coop_step`'s: none where control flow is already
    nested as deep as the builder's `max_depth` allows (they nest themselves)."""
    if len(b.regions) > b.p.max_depth:
        return {}
    return {"coop_for": 3, "coop_if": 1}


def coop_step(b: _Builder) -> None:
    """A few cooperative-matrix steps: new matrices, operations on visible ones, and the
    loops and ifs of this module (the SPMD builder's coopmatrix statement)."""
    for _ in range(b.int(1, 4)):
        kind = b.weighted(coop.weights(b) | weights(b))
        if kind in STEPS:
            STEPS[kind](b)
        else:
            coop.step(b, kind)


__all__ = ["STEPS", "weights", "coop_step", "coop_for", "coop_if"]
