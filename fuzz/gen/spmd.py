"""Random SPMD kernels of tensor language v0.4: `spmd_cases(**knobs)`, a Hypothesis strategy of
(ir.Function, arguments, groups), the function built as v0.4 IR (it prints with
`tlinterp.lang.v04.printer` and parses back to equal IR with lang="v0.4").

A kernel is a random composition, not a template: a function with `subgroup_size` and
`work_group_size` attributes, a `parallel` region whose statements are drawn one by one from
the families of `SpmdParams.weights`, then sometimes a `foreach_tile`:

- work-items load per-lane values from input memrefs (of any number type; canonical or
  strided layouts; per work-group slices or group arguments) indexed by their linear id, a
  rotation or reversal of it, their sub-group id or a constant, and combine them with random
  scalar operations, casts and `if`/`for` (with yielded and loop-carried values);
- sub-group operations (mostly of values that differ between lanes): broadcast from a
  uniform lane, reduce/inclusive/exclusive scan with
  add/max/min, in any order and nesting;
- local memory: an alloca written by every work-item, a barrier, then read at another
  work-item's element; barriers with random fences;
- cooperative matrices: loads (uses a/b/acc, `.t`, checked flags at partly outside
  positions), construct, mul_add with mixed precision, scale, component-wise arithmetic,
  casts between types and uses, extract/insert, reduce (row/column), apply, stores; `for`s
  carrying them and `if`s yielding them, with trip counts and conditions that differ between
  work-groups (fuzz.gen.spmd_loops);
- atomics: every work-item of a work-group updates its element of a sink (one of add, max,
  min per sink, so the order does not matter; the old values are not used); atomic loads of
  read-only data, atomic stores to elements of their own; coopmatrix atomic stores and
  updates of a block of their own (the old values they return are kept);
- results go to distinct elements of output memrefs: (work-item, slot, work-group) for
  scalars, a block per (work-group, sub-group) for coopmatrices.

UB-free by construction (docs/semantics.md, "v0.4 execution model"): uniformity is tracked
per value (fuzz/gen/spmd_model.py) and sub-group operations, coopmatrix instructions and
barriers are only emitted where control flow and operands are uniform enough; a barrier
separates every reuse of local memory; every number is exact in its type (the model in
spmd_model.py), so results do not depend on the order of reductions and nothing overflows.

`sample_spmd(seed)` draws the same kernels with `random.Random` (fast, no shrinking) and
returns the statistics of what was generated.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable
from typing import Any, Optional, Union

import numpy as np
from hypothesis import strategies as st

from fuzz.gen.spmd_base import I32, BuilderBase
from fuzz.gen.spmd_coop import foreach_tile, observe_coop
from fuzz.gen.spmd_loops import coop_step
from fuzz.gen.spmd_model import LANE, SG, WG, SpmdParams, Val, fits, real_of
from tlinterp.lang import ir
from tlinterp.lang.ir import Value
from tlinterp.lang.types import INDEX, MemrefType, ScalarType

Groups = Union[int, tuple[int, ...]]

_SUBGROUP_KINDS = ("reduce", "inclusive_scan", "exclusive_scan")
# what is stored at the end of its region even when no statement stored it
_OBSERVED = {"subgroup", "broadcast", "exchange", "extract", "if", "for"}


class _Builder(BuilderBase):
    """The statements of a parallel region, and the kernel around it."""

    # --- statements ------------------------------------------------------------------------

    def pick_val(self, pred: Callable[[Val], bool] = lambda v: True) -> Optional[Val]:
        vs = [v for v in self.visible() if pred(v)]
        return self.pick(vs) if vs else None

    def some_val(self, t: Optional[ScalarType] = None, finite: bool = True) -> Val:
        """A visible value (of type t), else a new load or constant."""
        v = self.pick_val(lambda v: (t is None or v.type is t) and
                          (not finite or math.isfinite(v.mag)))
        if v is not None and self.flip(80):
            return v
        t = t or self.pick(self.p.types)
        return self.load(t) if self.flip(70) else self.random_const(t, here=self.flip(50))

    def lane_val(self) -> Val:
        """The operand of a sub-group operation: most of the time a visible value that differs
        between the lanes where there is one (of a uniform value every lane, and so every
        wrong lane or lane count, gives the same result)."""
        if self.flip(75):
            v = self.pick_val(lambda v: v.uni == LANE)
            if v is not None:
                return v
        return self.some_val(finite=False)

    def statements(self, count: int, ctl: int, depth: int) -> None:
        for _ in range(count):
            self.statement(ctl, depth)

    def statement(self, ctl: int, depth: int) -> None:
        w = dict(self.p.weights)
        if ctl > SG:  # divergent control flow: no sub-group operations, no coopmatrices
            w["subgroup"] = w["broadcast"] = w["coop"] = 0
        if ctl > WG:  # barriers need every work-item of the work-group
            w["exchange"] = w["barrier"] = 0
        if depth >= self.p.max_depth:
            w["if_"] = w["for_"] = 0
        kind = self.weighted(w)
        if kind is None:
            return
        getattr(self, "st_" + kind)(ctl, depth)

    def st_load(self, ctl: int, depth: int) -> None:
        self.load(self.pick(self.p.types))

    def st_store(self, ctl: int, depth: int) -> None:
        v = self.pick_val(lambda v: v.kind != "const")
        if v is not None:
            self.store(v)

    def st_arith(self, ctl: int, depth: int) -> None:
        a = self.some_val()
        b = self.some_val(a.type) if self.flip(85) else a
        ops = ["add", "sub", "mul", "min", "max", "and", "or", "xor"]
        for _ in range(3):
            op = self.pick(ops)
            m = self.binary_model(op, a, b)
            if m is not None:
                self.arith(op, a, b, a.type, *m)
                return
            b = self.random_const(a.type, mag=1)  # smaller operands fit more often
            ops = ["add", "sub", "min", "max", "mul"]

    def st_unary(self, ctl: int, depth: int) -> None:
        complex_types = [t for t in self.p.types if t.is_complex]
        # complex operands a third of the time: conj, re and im take nothing else
        a = self.some_val(self.pick(complex_types) if complex_types and self.flip(33) else None)
        t = a.type
        ops = ["neg"] + (["conj", "re", "im"] if t.is_complex else ["abs"]) + \
            (["not"] if t.is_int else [])
        op = self.pick(ops)
        rt, mag = t, a.mag
        if op in ("re", "im"):
            rt = real_of(t)
        if op == "not":
            mag += 1
            if not fits(t, mag, 0):
                return
        r = self.fresh()
        self.emit(ir.ArithUnary(r, op, a.op, t))
        self.stats["op." + op] += 1
        self.add(Val(r, rt, mag, a.grain, a.uni))

    def st_cast(self, ctl: int, depth: int) -> None:
        a = self.some_val()
        choices = [t for t in self.p.types if t is not a.type and
                   not (a.type.is_complex and not t.is_complex) and
                   fits(t, math.floor(a.mag) if t.is_int else a.mag,
                        0 if t.is_int else a.grain)]
        if choices:
            self.cast_to(a, self.pick(choices), "cast")
            self.stats["cast"] += 1

    def st_subgroup(self, ctl: int, depth: int) -> None:
        x = self.lane_val()
        kind = self.pick(_SUBGROUP_KINDS)
        ops = ["add"] + ([] if x.type.is_complex else ["max", "min"])
        op = self.pick(ops)
        mag, uni = x.mag, (SG if x.uni == LANE else x.uni) if kind == "reduce" else LANE
        if op == "add":
            mag = x.mag * self.S
            if not fits(x.type, mag, x.grain):
                if x.type.is_complex:
                    return
                op = self.pick(("max", "min"))
                mag = x.mag
        if kind == "exclusive_scan" and op != "add":
            mag = math.inf  # lane 0 gets the identity: -inf or the type's extreme
        r = self.fresh()
        self.emit(ir.SubgroupOp(r, f"{kind}_{op}", x.op, x.type))
        self.stats[f"subgroup.{kind}_{op}"] += 1
        self.add(Val(r, x.type, mag, x.grain, uni, "subgroup"))

    def broadcast_lane(self) -> Val:
        """An i32 uniform per sub-group in [0, S)."""
        form = self.pick(("const", "const", "subgroup_id", "reduce"))
        if form == "subgroup_id" and self.nsg <= self.S:
            return self.sid
        if form == "reduce":
            op = self.pick(("max", "min"))
            r = self.fresh()
            self.emit(ir.SubgroupOp(r, "reduce_" + op, self.sl.op, I32))
            self.stats[f"subgroup.reduce_{op}"] += 1
            return Val(r, I32, self.S - 1, 0, SG, "id")
        return self.const(self.int(0, self.S - 1), I32)

    def st_broadcast(self, ctl: int, depth: int) -> None:
        x = self.lane_val()
        lane = self.broadcast_lane()
        r = self.fresh()
        self.emit(ir.SubgroupBroadcast(r, x.op, lane.op, x.type))
        self.stats["subgroup.broadcast"] += 1
        self.add(Val(r, x.type, x.mag, x.grain, min(x.uni, SG), "broadcast"))

    def st_exchange(self, ctl: int, depth: int) -> None:
        """Every work-item writes its element of a local buffer, a barrier, then each reads
        another work-item's element (a barrier first when the buffer was read before)."""
        v = self.some_val(finite=False)
        entry = self.alloca(v.type)
        if entry[1] or self.loops:  # in a loop: the previous iteration read it
            self.barrier()
        self.emit(ir.Store(v.op, entry[0], (self.lini.op,),
                           MemrefType(v.type, (self.W,), (1,), "local")))
        self.barrier()
        idx, form = self.lane_index()
        r = self.fresh()
        self.emit(ir.Load(r, entry[0], (idx.op,), MemrefType(v.type, (self.W,), (1,), "local")))
        entry[1] = True
        self.stats["exchange." + form] += 1
        self.add(Val(r, v.type, v.mag, v.grain, WG if v.uni == WG else LANE, "exchange"))

    def st_barrier(self, ctl: int, depth: int) -> None:
        self.barrier()

    def condition(self) -> Val:
        if self.flip(30):  # uniform per work-group: barriers and sub-group operations inside
            a = self.pick_val(lambda v: v.uni == WG and v.kind != "const") or self.glin
            b = self.random_const(a.type)
        else:
            a = self.some_val(finite=False)
            b = self.some_val(a.type, finite=False)
        conds = ("eq", "ne") if a.type.is_complex else ("lt", "le", "gt", "ge", "eq", "ne")
        r = self.fresh("p")
        self.emit(ir.Compare(r, self.pick(conds), a.op, b.op, a.type))
        return Val(r, ScalarType.i1, 1, 0, max(a.uni, b.uni), "cond")

    def st_if_(self, ctl: int, depth: int) -> None:
        cond = self.condition()
        inner = max(ctl, cond.uni)
        self.stats[("if.uniform", "if.subgroup", "if.divergent")[cond.uni]] += 1
        before = {t: e[1] for t, e in self.allocas.items()}
        n = self.int(1, max(1, self.p.max_statements // 3))
        yt = self.pick(self.p.types) if self.flip(50) else None
        self.open()
        self.statements(n, inner, depth + 1)
        ya = self.some_val(yt) if yt else None
        self.observe_region()
        if ya:
            self.emit(ir.Yield((ya.op,), (yt,)))
        then = self.close(observe=False)
        after_then = {t: e[1] for t, e in self.allocas.items()}
        for t, e in self.allocas.items():
            e[1] = before.get(t, False)
        otherwise = None
        if yt or self.flip(50):
            self.open()
            self.statements(self.int(0, n), inner, depth + 1)
            yb = self.some_val(yt) if yt else None
            self.observe_region()
            if yb:
                self.emit(ir.Yield((yb.op,), (yt,)))
            otherwise = self.close(observe=False)
        for t, e in self.allocas.items():
            e[1] = e[1] or after_then.get(t, True)
        results: tuple = ()
        if yt:
            r = self.fresh("y")
            results = (r,)
        self.emit(ir.If(results, cond.op, (yt,) if yt else (), then, otherwise))
        if yt:
            self.add(Val(r, yt, max(ya.mag, yb.mag), max(ya.grain, yb.grain),
                         max(cond.uni, ya.uni, yb.uni), "if"))

    def st_for_(self, ctl: int, depth: int) -> None:
        """`for` with constant bounds, a loop-carried value updated by add/max/min with a
        value of the body (independent of the carried one), so its bound is known."""
        trips = self.int(0, self.p.max_trips)
        init = self.some_val()
        op = self.pick(("add", "max", "min") if not init.type.is_complex else ("add",))
        var = self.fresh("i")
        acc = self.fresh("acc")
        for e in self.allocas.values():
            e[1] = True  # an earlier iteration may have read local memory
        self.open()
        self.loops += 1
        self.mult *= max(trips, 1)
        self.add(Val(var, INDEX, max(trips - 1, 0), 0, WG, "loopvar"))
        self.statements(self.int(1, max(1, self.p.max_statements // 3)), ctl, depth + 1)
        w = self.some_val(init.type)
        if op == "add":
            mag, grain = init.mag + trips * w.mag, max(init.grain, w.grain)
            if not fits(init.type, mag, grain):
                op = "max" if not init.type.is_complex else None
        if op != "add":
            mag, grain = max(init.mag, w.mag), max(init.grain, w.grain)
        if op is None:  # nothing keeps a complex sum exact: carry the init through
            nxt = Value(acc.name)
            mag, grain = init.mag, init.grain
        else:
            nxt = self.fresh()
            self.emit(ir.Arith(nxt, op, acc, w.op, init.type))
        self.observe_region()
        self.loops -= 1
        self.mult //= max(trips, 1)
        self.emit(ir.Yield((nxt,), (init.type,)))
        body = self.close(observe=False)
        for e in self.allocas.values():
            e[1] = True
        r = self.fresh("f")
        self.emit(ir.For(var, self.const(0, INDEX).op, self.const(trips, INDEX).op, None, INDEX,
                         body, results=(r,), inits=((acc, init.op),),
                         result_types=(init.type,)))
        self.stats["for"] += 1
        self.add(Val(r, init.type, mag, grain, max(init.uni, w.uni), "for"))

    def st_coop(self, ctl: int, depth: int) -> None:
        coop_step(self)

    # --- regions ---------------------------------------------------------------------------

    def observe_region(self) -> None:
        """Store what the closing region computed and nobody stored yet: its sub-group,
        exchange and coopmatrix results always, other values sometimes."""
        for v in self.scopes[-1]:
            if not v.stored and v.kind not in ("const", "id", "loopvar", "cond") and \
                    (v.kind in _OBSERVED or self.flip(30)):
                self.store(v)
        observe_coop(self)

    def grid(self) -> Groups:
        G = self.int(1, self.p.max_groups)
        if not self.flip(self.p.grid_percent):
            return G
        dims = [1] * self.int(2, 3)
        for f in _factors(G):
            dims[self.int(0, len(dims) - 1)] *= f
        return tuple(dims)

    def group_ids(self, groups: Groups) -> None:
        """glin, the linear work-group id (x fastest), at function level."""
        gx = self.fresh("gx")
        self.prelude.append(ir.GroupId(gx))
        glin = gx
        if isinstance(groups, tuple):
            ids = [gx]
            counts = []
            for c in "yz"[:len(groups) - 1]:
                g, n = self.fresh("g" + c), self.fresh("n")
                self.prelude.append(ir.Builtin(g, "group_id", c, INDEX))
                ids.append(g)
                counts.append(n)
            nx = self.fresh("nx")
            self.prelude.append(ir.GroupSize(nx))
            for c, n in zip("yz", counts):
                self.prelude.append(ir.Builtin(n, "num_groups", c, INDEX))
            # glin = gx + nx * (gy + ny * gz)
            acc = ids[-1]
            for k in range(len(ids) - 2, -1, -1):
                n = ([nx] + counts)[k]
                t, s = self.fresh(), self.fresh()
                self.prelude.append(ir.Arith(t, "mul", acc, n, INDEX))
                self.prelude.append(ir.Arith(s, "add", t, ids[k], INDEX))
                acc = s
            glin = acc
            self.stats[f"grid.{len(groups)}d"] += 1
        self.glin = Val(glin, INDEX, self.G - 1, 0, WG, "id")

    def wx(self, p: SpmdParams) -> tuple[int, int]:
        """The sub-group size S and sub-groups k along the first mode (work_group_size[0] =
        S * k), drawn among those that give a multiple of `wx_multiple` when some do (a kernel
        the target refuses would only be drawn again)."""
        ks = {S: [k for k in range(1, p.max_wx_subgroups + 1) if S * k % p.wx_multiple == 0]
              for S in p.subgroup_sizes}
        sizes = [S for S in p.subgroup_sizes if ks[S]] or list(p.subgroup_sizes)
        S = self.pick(sizes)
        return S, self.pick(ks[S]) if ks[S] else self.int(1, p.max_wx_subgroups)

    def build(self) -> tuple[ir.Function, dict[str, np.ndarray], Groups]:
        p = self.p
        self.S, k = S, k = self.wx(p)
        wy = self.int(1, p.max_wy)
        if self.flip(p.one_subgroup_percent) and S % p.wx_multiple == 0:
            # one sub-group per work-group: the common shape of sub-group kernels, and the one
            # a device without sub-groups emulates whole (else only instructions every
            # work-item reaches: pocl refuses the kernel); not where the target refuses it
            k = wy = 1
        self.wg = (S * k, wy)
        self.W = S * k * wy
        self.nsg = k * wy
        groups = self.grid()
        self.G = groups if isinstance(groups, int) else math.prod(groups)
        self.group_ids(groups)
        self.open()  # the parallel region
        self.scopes[-1].append(self.glin)
        self.lane_ids()
        self.statements(self.int(2, p.max_statements), WG, 0)
        par = ir.Parallel(self.close())
        self.stats["parallel"] += 1
        tail: list = []
        if self.flip(p.foreach_tile_percent):
            self.regions.append(tail)
            self.scopes.append([self.glin])
            self.cscopes.append([])
            foreach_tile(self)
            self.regions.pop()
            self.scopes.pop()
            self.cscopes.pop()
        return self.finish([*self.prelude, par, *tail], groups)

    def finish(self, body: list, groups: Groups) -> tuple[ir.Function, dict, Groups]:
        args, data = self.final_arguments()
        fn = ir.Function(self.name, tuple(args), ir.Region(body), work_group_size=self.wg,
                         subgroup_size=self.S)
        return fn, data, groups


def _factors(n: int) -> list[int]:
    out, f = [], 2
    while n > 1:
        while n % f == 0:
            out.append(f)
            n //= f
        f += 1
    return out


def spmd_cases(name: str = "k", **knobs: Any) -> st.SearchStrategy:
    """Random UB-free SPMD kernels of v0.4: (ir.Function, arguments, groups) with groups an
    int or a grid (x, y[, z]). Knobs: `SpmdParams` fields (a TypeError names unknown ones)."""
    p = SpmdParams.of(knobs)

    @st.composite
    def cases(draw) -> tuple[ir.Function, dict[str, np.ndarray], Groups]:
        return _Builder(draw, p, name).build()

    return cases()


def sample_spmd(seed: int, name: str = "k", **knobs: Any
                ) -> tuple[ir.Function, dict[str, np.ndarray], Groups, Counter]:
    """The kernel `spmd_cases` would build from plain random choices seeded by `seed` (fast,
    nothing shrinks), with the statistics of what it generated."""
    b = _Builder(random.Random(seed), SpmdParams.of(knobs), name)
    fn, args, groups = b.build()
    return fn, args, groups, b.stats


def spmd_program(fn: ir.Function, filename: str = "<spmd>") -> ir.Program:
    """A generated function printed as v0.4 text, parsed back and checked: the program an
    implementation reads (its IR equals `fn`)."""
    import tlinterp
    from tlinterp.lang.v04.printer import format_program_v04

    text = format_program_v04(ir.Program((fn,), filename))
    program = tlinterp.parse(text, filename, lang="v0.4")
    tlinterp.check(program)
    return program


__all__ = ["spmd_cases", "sample_spmd", "spmd_program", "SpmdParams"]
